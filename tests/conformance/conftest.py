"""Fixtures and helpers shared by the ported Camunda 7 tests (issue 21, item 2)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import select

from bpm.store import tables
from bpm.testing import BpmTest

MODELS = Path(__file__).parent / "models" / "camunda"
T0 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def kit(database_url: str) -> Iterator[BpmTest]:
    """The test kit on each backend (a fresh database per test), its clock at T0."""
    k = BpmTest.create(database_url, start=T0)
    undo = k.activate()
    try:
        yield k
    finally:
        undo()
        k.close()


def open_subscriptions(kit: BpmTest, kind: str | None = None) -> list[tuple[str, str, str]]:
    """(kind, name, node id) of every open message and signal wait, sorted: what Camunda's
    ``createEventSubscriptionQuery()`` counts. The engine has no query for them, so this
    reads the store's table (a test's read, nothing more)."""
    t = tables.event_subscription
    query = select(t.c.kind, t.c.name, t.c.node_id).where(t.c.state == "open")
    if kind is not None:
        query = query.where(t.c.kind == kind)
    with kit.engine.db.connect() as conn:
        return sorted((r.kind, r.name, r.node_id) for r in conn.execute(query))
