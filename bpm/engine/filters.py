"""Saved task filters: a task query (Camunda's JSON names, checked by the REST layer)
saved under a name by its owner; one short transaction each (a filter changes no token)."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import datetime
from typing import Any

from bpm.engine.core import EngineCore
from bpm.errors import InvalidOperation, NotFound
from bpm.store import filters as store
from bpm.store.filters import FilterQuery, SavedFilter

#: Camunda knows task filters only.
RESOURCE_TYPES = ("Task",)
MAX_NAME = 255


def _checked(resource_type: str, name: str) -> None:
    if resource_type not in RESOURCE_TYPES:
        raise InvalidOperation(f"resourceType must be Task, not {resource_type[:80]!r}")
    if not name or not name.strip() or len(name) > MAX_NAME or "\0" in name:
        raise InvalidOperation(f"name is required: 1 to {MAX_NAME} characters, no NUL")


class Filters:
    """Saved task filters of :class:`~bpm.engine.Engine` (``engine.filters``)."""

    def __init__(self, core: EngineCore) -> None:
        self.core = core

    def create(
        self,
        name: str,
        owner: str | None,
        query: dict[str, Any],
        properties: dict[str, Any] | None = None,
        *,
        resource_type: str = "Task",
        now: datetime | None = None,
    ) -> SavedFilter:
        """Save a filter; :class:`InvalidOperation` for a bad name or type (nothing saved)."""
        _checked(resource_type, name)
        saved = SavedFilter(
            uuid.uuid4().hex, resource_type, name, owner, dict(query), dict(properties or {}),
            self.core.now(now),
        )  # fmt: skip
        with self.core.tx() as conn:
            store.add(conn, saved)
        return saved

    def get(self, filter_id: str) -> SavedFilter:
        with self.core.tx() as conn:
            found = store.one(conn, filter_id)
        if found is None:
            raise NotFound(f"Filter with id {filter_id} does not exist")
        return found

    def update(
        self,
        filter_id: str,
        name: str,
        owner: str | None,
        query: dict[str, Any],
        properties: dict[str, Any] | None = None,
        *,
        resource_type: str = "Task",
    ) -> SavedFilter:
        _checked(resource_type, name)
        with self.core.tx() as conn:
            found = store.one(conn, filter_id)
            if found is None:
                raise NotFound(f"Filter with id {filter_id} does not exist")
            changed = replace(
                found, resource_type=resource_type, name=name, owner=owner,
                query=dict(query), properties=dict(properties or {}),
            )  # fmt: skip
            store.replace(conn, changed)
        return changed

    def delete(self, filter_id: str) -> None:
        with self.core.tx() as conn:
            if not store.remove(conn, filter_id):
                raise NotFound(f"Filter with id {filter_id} does not exist")

    def find(
        self, q: FilterQuery, *, offset: int = 0, limit: int | None = None
    ) -> list[SavedFilter]:
        with self.core.tx() as conn:
            return store.find(conn, q, offset=offset, limit=limit)

    def count(self, q: FilterQuery) -> int:
        with self.core.tx() as conn:
            return store.count(conn, q)
