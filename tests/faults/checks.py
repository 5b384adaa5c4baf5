"""What every fault test checks afterwards: nothing lost, nothing stuck, nothing doubled."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

from sqlalchemy import func, select

from bpm import Engine
from bpm.runtime.records import HistoryEvent
from bpm.store import history as history_store
from bpm.store.tables import history, process_instance
from tests.e2e.processes import STEPS
from tests.support import eventually


def states(engine: Engine) -> Counter[str]:
    """How many instances are in each state (one statement, read from the store)."""
    with engine.db.connect() as conn:
        rows = conn.execute(
            select(process_instance.c.state, func.count()).group_by(process_instance.c.state)
        )
        return Counter({str(state): int(count) for state, count in rows})


def completed(engine: Engine) -> int:
    try:
        return states(engine)["completed"]
    except Exception:  # the database is down: no progress to see
        return -1


def wait_completed(engine: Engine, count: int, *, timeout: float) -> float:
    """Wait until ``count`` instances completed; returns how long that took."""
    started = time.monotonic()
    eventually(
        lambda: completed(engine) >= count,
        timeout=timeout,
        interval=0.2,
        what=f"{count} instances to complete (states: {_safe_states(engine)})",
    )
    return time.monotonic() - started


def _safe_states(engine: Engine) -> object:
    try:
        return dict(states(engine))
    except Exception as exc:
        return exc


def time_to_progress(engine: Engine, *, timeout: float = 30.0) -> float:
    """Seconds until one more instance completes than now (progress resumed)."""
    started = time.monotonic()
    before = eventually(lambda: completed(engine) + 1, timeout=timeout, what="the database") - 1
    eventually(
        lambda: completed(engine) > before,
        timeout=timeout,
        interval=0.1,
        what="progress to resume",
    )
    return time.monotonic() - started


@dataclass
class Audit:
    """The trail of a set of instances, read back after the faults."""

    doubled: list[tuple[str, str, int]] = field(default_factory=list)
    not_completed: list[tuple[str, str]] = field(default_factory=list)
    lost_leases: list[HistoryEvent] = field(default_factory=list)
    reruns: list[HistoryEvent] = field(default_factory=list)  # executing with attempt > 1

    def assert_clean(self) -> None:
        assert self.not_completed == [], self.not_completed
        assert self.doubled == [], self.doubled


def trails(engine: Engine, instance_ids: list[str]) -> dict[str, list[HistoryEvent]]:
    """The history of each instance, in order, read in one statement."""
    out: dict[str, list[HistoryEvent]] = {iid: [] for iid in instance_ids}
    with engine.db.connect() as conn:
        rows = conn.execute(
            select(history.c.instance_id, history.c.at, history.c.events)
            .where(history.c.instance_id.in_(instance_ids))
            .order_by(history.c.seq)
        )
        for r in rows:
            out[r.instance_id].extend(history_store.decode(r.instance_id, r.at, r.events))
    return out


def audit(engine: Engine, instance_ids: list[str], steps: tuple[str, ...] = STEPS) -> Audit:
    """Every instance completed once; every step's completion applied exactly once."""
    out = Audit()
    with engine.db.connect() as conn:
        state_of = dict(
            conn.execute(
                select(process_instance.c.id, process_instance.c.state).where(
                    process_instance.c.id.in_(instance_ids)
                )
            ).all()
        )
    for iid, history_of in trails(engine, instance_ids).items():
        if state_of.get(iid) != "completed":
            out.not_completed.append((iid, str(state_of.get(iid))))
        trail = history_of
        done = Counter(e.node_id for e in trail if e.type == "token_completed")
        for node in (*steps, "end"):
            if done[node] != 1:
                out.doubled.append((iid, node, done[node]))
        ended = sum(1 for e in trail if e.type == "instance_completed")
        if ended != 1:
            out.doubled.append((iid, "instance_completed", ended))
        lost: set[tuple[str | None, object]] = set()
        for e in trail:
            # A lost lease is a ``lease_lost`` event and/or a "worker lost" failed attempt:
            # one entry per token and attempt.
            if e.type == "lease_lost" or (
                e.type == "attempt_failed" and "worker lost" in str(e.payload.get("error"))
            ):
                key = (e.token_id, e.payload.get("attempt"))
                if key not in lost:
                    lost.add(key)
                    out.lost_leases.append(e)
            if e.type == "token_executing" and int(e.payload.get("attempt", 1) or 1) > 1:
                out.reruns.append(e)
    return out
