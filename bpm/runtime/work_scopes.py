"""The scope methods of :class:`bpm.runtime.work.InstanceWork`: scopes are work items like
the others (created with ``add``, moved with ``move``); these are what only they need."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Any

from bpm.runtime.changes import Changes, Loader
from bpm.runtime.records import Instance, Scope, Token
from bpm.runtime.states import ScopeKind, ScopeState

__all__ = ["ScopeChanges"]


class ScopeChanges:
    """Mixed into :class:`bpm.runtime.work.InstanceWork`."""

    instance: Instance
    tokens: dict[str, Token]
    now: datetime
    loader: Loader | None
    item_changes: dict[type, Changes]
    record: Callable[..., None]
    written: Callable[..., dict[str, Any]]
    token_changes: Changes

    def add(self, record: Any) -> Any:  # pragma: no cover - InstanceWork.add
        raise NotImplementedError

    @property
    def scope_changes(self) -> Changes:
        """The scopes this transaction loaded or created (a kind of work item)."""
        return self.item_changes[Scope]

    def rescope(self, token_id: str, scope_id: str) -> Token:
        """Move a Ready token into the scope its activity just opened (its own variables:
        ``bpm.runtime.scopes``); the ``scope_entered`` event records it."""
        tok = replace(self.tokens[token_id], scope_id=scope_id)
        self.token_changes.put(token_id, tok)
        return tok

    def open_scope(self, fork_node_id: str, expected: int, parent_id: str | None) -> Scope:
        """The scope of a parallel fork: its joins' state (no history event of its own)."""
        fork: Scope = self.add(
            Scope(
                id=str(uuid.uuid4()),
                instance_id=self.instance.id,
                kind=ScopeKind.FORK,
                node_id=fork_node_id,
                state=ScopeState.ACTIVE,
                created_at=self.now,
                parent_id=parent_id,
                expected=expected,
            )
        )
        return fork

    def scope(self, scope_id: str) -> Scope | None:
        """The scope ``scope_id`` of this instance, loaded on first use."""
        found: Scope | None = self.scope_changes.records.get(scope_id)
        if found is None and self.loader is not None:
            found = self.loader.scope(scope_id)
            if found is not None:
                self.scope_changes.records[scope_id] = found
        return found

    def depth(self, scope_id: str | None) -> int:
        """How many sub-processes, multi-instance bodies and inner instances (not forks,
        not activities' own variables) surround a token of ``scope_id``."""
        depth, seen = 0, set()
        while scope_id is not None and scope_id not in seen:
            seen.add(scope_id)
            found = self.scope(scope_id)
            if found is None:
                break
            if found.kind not in (ScopeKind.FORK, ScopeKind.ACTIVITY):
                depth += 1
            scope_id = found.parent_id
        return depth

    def set_scope_variables(
        self,
        scope: Scope,
        values: dict[str, Any],
        *,
        source: str | None = None,
        token_id: str | None = None,
    ) -> Scope:
        """Merge checked ``values`` into a scope's local variables and record it."""
        current: Scope = self.scope_changes.records.get(scope.id, scope)
        new = replace(current, variables={**current.variables, **values})
        self.scope_changes.put(scope.id, new)
        self.record(
            "variables_updated",
            token_id=token_id,
            node_id=source,
            payload=self.written(values, scope=scope.id),
        )
        return new

    def shrink_scope(self, scope_id: str, by: int) -> Scope:
        current = self.scope(scope_id)
        if current is None or current.expected is None:
            raise KeyError(f"fork scope {scope_id} of instance {self.instance.id} is missing")
        scope = replace(current, expected=current.expected - by)
        self.scope_changes.put(scope_id, scope)
        return scope
