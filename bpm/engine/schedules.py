"""Timer start events: their schedules, and starting instances when they are due.

Deploying a version with timer start events stores one schedule per event (and retires the
key's previous schedules); suspending the definition pauses them. :func:`fire_due_schedules`
(a beat task, ``bpm timers``, the embedded loop) starts one instance per due time:

* each schedule is taken in its own transaction with ``FOR UPDATE SKIP LOCKED``, so two
  beats split the work and a schedule that fails to start does not hold up the others;
* the due time is recorded in ``schedule_fire`` under a unique key (schedule, due time) in
  the same transaction as the instance: a second start for one due time cannot commit.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime
from typing import Any

from bpm.engine.core import EngineCore
from bpm.engine.instances import begin_instance
from bpm.engine.unit import unit_of_work
from bpm.errors import BpmError
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from bpm.observe import TimerFired
from bpm.recurrence import Schedule, recurrence
from bpm.store import definitions as defs_store
from bpm.store import schedules as store

__all__ = ["fire_due_schedules", "schedule_rows", "schedules"]

log = logging.getLogger("bpm.schedules")


def schedule_rows(
    model: ProcessModel, definition_id: str, now: datetime, *, paused: bool = False
) -> list[dict[str, Any]]:
    """The ``timer_schedule`` rows of a newly stored definition version."""
    rows = []
    for event in model.timer_starts:
        assert event.timer is not None
        due = recurrence(event.timer).first_due(now)
        state = store.ENDED if due is None else (store.PAUSED if paused else store.ACTIVE)
        rows.append(
            {
                "id": str(uuid.uuid4()),
                "definition_id": definition_id,
                "definition_key": model.key,
                "node_id": event.id,
                "kind": event.timer.kind.value,
                "expression": event.timer.expression,
                "state": state,
                "next_due": due,
                "fired_count": 0,
                "created_at": now,
                "updated_at": now,
            }
        )
    return rows


def fire_due_schedules(core: EngineCore, *, now: datetime | None = None, limit: int = 100) -> int:
    """Start an instance for every schedule due at ``now`` (up to ``limit``); returns how
    many started. Safe to run in several processes at once."""
    at = core.now(now)
    with core.db.connect() as conn:
        candidates = [s.id for s in store.due(conn, at, limit)] if limit > 0 else []
    started = 0
    for schedule_id in candidates:
        told: TimerFired | None = None
        with unit_of_work(core, at) as unit:
            conn = unit.conn
            found = store.lock_due(conn, schedule_id, at)
            if found is None:  # another poller has it, or fired it already
                continue
            due = found.next_due
            assert due is not None
            model = unit.model(found.definition_id)
            node = model.nodes.get(found.node_id)
            fired = found.fired_count + 1
            following = None
            timer = n.timer_of(node)
            if timer is not None:
                following = recurrence(timer).next_due(due, fired, at)
            definition = defs_store.by_id(conn, found.definition_id)
            try:
                assert definition is not None
                work = begin_instance(unit, definition, {}, start_event=found.node_id)
            except BpmError as exc:  # skip this due time rather than retry it forever
                log.warning("timer start %s of %s failed: %s", found.node_id, found.id, exc)
                store.advance(conn, found.id, following, found.fired_count, at)
                continue
            work.record(
                "timer_start_fired",
                node_id=found.node_id,
                payload={"schedule": found.id, "due": due.isoformat()},
            )
            if not store.record_fire(conn, found.id, due, work.instance.id, at):
                unit.drop(work.instance.id)
                continue  # this due time already started an instance
            store.advance(conn, found.id, following, fired, at)
            started += 1
            if core.observers:
                lateness = (at - due).total_seconds()
                told = TimerFired(model.key, found.node_id, work.instance.id, "start", lateness)
        if told is not None:  # committed
            core.observers.emit(told)
    return started


def schedules(
    core: EngineCore, key: str | None = None, *, include_inactive: bool = False
) -> list[Schedule]:
    """Schedules of timer start events: active and paused ones, or all with
    ``include_inactive`` (ended and replaced too)."""
    states = None if include_inactive else (store.ACTIVE, store.PAUSED)
    with core.db.connect() as conn:
        return store.list_schedules(conn, key=key, states=states)


def fired(core: EngineCore, schedule_id: str) -> list[tuple[datetime, str]]:
    """(due time, instance id) of every instance a schedule started."""
    with core.db.connect() as conn:
        return store.fires(conn, schedule_id)
