"""Shared by the scope tests: engines with a recording dispatcher, and what is live."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select

from bpm import Engine, EngineConfig
from bpm.handlers import HandlerRegistry
from bpm.runtime.states import LIVE_TOKEN_STATES, OPEN_TASK_STATES, ScopeState
from bpm.store.tables import event_subscription as es
from tests.engine_helpers import QueueDispatcher, make_engine

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def engine_on(
    url: str, registry: HandlerRegistry | None = None, **config: Any
) -> tuple[Engine, QueueDispatcher]:
    eng, q = make_engine(url, registry or HandlerRegistry(), EngineConfig(**config))
    return eng, q


def live_nodes(engine: Engine, instance_id: str) -> list[str]:
    inst = engine.get_instance(instance_id)
    return sorted(t.node_id for t in inst.tokens if t.state in LIVE_TOKEN_STATES)


def open_tasks(engine: Engine, instance_id: str) -> list[str]:
    return sorted(t.node_id for t in engine.user_tasks(instance_id))


def task_of(engine: Engine, instance_id: str, node_id: str, index: int = 0) -> str:
    found = [t for t in engine.user_tasks(instance_id) if t.node_id == node_id]
    assert len(found) > index, (node_id, engine.user_tasks(instance_id))
    return found[index].id


def types(engine: Engine, instance_id: str) -> list[tuple[str, str | None]]:
    return [(e.type, e.node_id) for e in engine.history(instance_id)]


def open_subscriptions(engine: Engine, instance_id: str) -> list[str]:
    """The node ids of the instance's open message and signal waits."""
    with engine.db.connect() as conn:
        rows = conn.execute(
            select(es.c.node_id).where(es.c.instance_id == instance_id, es.c.state == "open")
        )
        return sorted(r.node_id for r in rows)


def nothing_live(engine: Engine, instance_id: str) -> dict[str, list[str]]:
    """Everything still live in an instance (empty lists when nothing is)."""
    inst = engine.get_instance(instance_id)
    ext = [
        t.id for t in engine.external_tasks(instance_id=instance_id) if t.state in OPEN_TASK_STATES
    ]
    return {
        "tokens": [t.node_id for t in inst.tokens if t.state in LIVE_TOKEN_STATES],
        "timers": [t.node_id for t in engine.timers(instance_id)],
        "user_tasks": [t.node_id for t in engine.user_tasks(instance_id)],
        "external_tasks": ext,
        "scopes": [s.node_id for s in inst.scopes if s.state is ScopeState.ACTIVE],
        "incidents": [i.node_id for i in engine.incidents(instance_id)],
        "subscriptions": open_subscriptions(engine, instance_id),
    }


EMPTY = {
    "tokens": [],
    "timers": [],
    "user_tasks": [],
    "external_tasks": [],
    "scopes": [],
    "incidents": [],
    "subscriptions": [],
}
