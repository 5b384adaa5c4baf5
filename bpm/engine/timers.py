"""Firing due timers: the poller behind the beat task and ``bpm timers``.

Locking, and why two pollers (or a poller and a user call) can neither double-fire nor
deadlock
---------------------------------------------------------------------------------------

Each batch is **one transaction** that claims, marks fired *and* applies its timers, so
the crash window between "timer fired" and "token resumed" does not exist: either both
are committed, or neither is and the timer is still pending for the next poll.

1. ``SELECT ... FROM timer JOIN process_instance ... WHERE pending AND fire_at <= now AND
   instance active ORDER BY fire_at LIMIT n FOR UPDATE OF timer SKIP LOCKED``. Rows another
   poller holds are skipped, so pollers split the work instead of queueing behind
   each other.
2. The instances of those timers are locked in id order with ``FOR UPDATE SKIP LOCKED``
   as well. The engine's rule is "lock the instance row first"; the poller already holds
   timer rows at this point, so it must never *wait* for an instance: a transaction that
   holds the instance lock may be about to cancel exactly these timer rows (completing a
   user task cancels its boundary timers), and waiting on each other would be a deadlock.
   With SKIP LOCKED the poller never waits while holding a lock, so no cycle can form.
   Timers of an instance that is busy right now stay pending (and are unlocked at commit);
   the next poll fires them, at most one interval later.
3. Under the instance lock, :func:`bpm.runtime.timers.still_applies` re-checks each timer
   against the token it belongs to (a stale timer is marked cancelled), then the timers
   are marked ``fired`` and applied to the instance, and everything is flushed.

A second poller that saw the same timer either skipped it (row locked) or, if it read it
after our commit, no longer finds it pending. Each instance is applied inside a savepoint:
an unexpected error in one instance is logged and leaves only that instance's timers
pending, instead of blocking the whole batch forever.

Suspended instances are not active, so their timers stay pending until ``resume``; then
they are due at once and fire on the next poll (a deliberate choice: nothing of a
suspended instance moves, and nothing is lost).
"""

from __future__ import annotations

import heapq
import logging
from collections import defaultdict
from datetime import datetime

from sqlalchemy import Connection

from bpm.engine.core import EngineCore
from bpm.errors import InvalidOperation
from bpm.runtime import timers as rt
from bpm.runtime.advance import Flow
from bpm.runtime.states import InstanceState
from bpm.runtime.timers import Timer
from bpm.store import timers as store

log = logging.getLogger("bpm.timers")

BATCH = 100

__all__ = ["Timer", "fire_due_timers", "next_wakeup", "timers"]


def fire_due_timers(core: EngineCore, *, now: datetime | None = None, limit: int = 500) -> int:
    """Fire up to ``limit`` due timers; returns how many fired (stale ones do not count)."""
    if limit < 1:
        raise InvalidOperation(f"limit must be at least 1, got {limit}")
    fired = 0
    passed_over: list[str] = []  # due but not fired in this call (instance busy, error)
    while fired < limit:
        size = min(BATCH, limit - fired)
        # One clock reading per transaction (the caller's ``now`` when given).
        batch_fired, claimed, skipped, dispatch = _fire_batch(
            core, core.now(now), size, passed_over
        )
        fired += batch_fired
        passed_over.extend(skipped)
        core.dispatch(dispatch)
        if claimed < size:  # nothing more is due; every claimed row fired, was cancelled
            break  # as stale, or is excluded from the next batch
    return fired


def _fire_batch(
    core: EngineCore, at: datetime, size: int, exclude: list[str]
) -> tuple[int, int, list[str], list[str]]:
    """One transaction: (fired, claimed, passed over, tokens to dispatch after commit)."""
    fired = 0
    skipped: list[str] = []
    dispatch: list[str] = []
    with core.tx() as conn:
        due = store.claim_due(conn, at, size, exclude)
        if not due:
            return 0, 0, [], []
        by_instance: dict[str, list[Timer]] = defaultdict(list)
        for timer in due:
            by_instance[timer.instance_id].append(timer)
        locked = store.lock_instances_nowait(conn, list(by_instance))
        for instance_id in sorted(by_instance):
            timers = by_instance[instance_id]
            if instance_id not in locked:
                skipped.extend(x.id for x in timers)
                continue
            savepoint = conn.begin_nested()
            try:
                n_fired, ready = _apply_instance(core, conn, instance_id, timers, at)
            except Exception:
                savepoint.rollback()
                log.exception(
                    "firing timers %s of instance %s failed; they stay pending",
                    [x.id for x in timers],
                    instance_id,
                )
                skipped.extend(x.id for x in timers)
                continue
            savepoint.commit()
            fired += n_fired
            dispatch.extend(ready)
    return fired, len(due), skipped, dispatch


def _apply_instance(
    core: EngineCore, conn: Connection, instance_id: str, timers: list[Timer], at: datetime
) -> tuple[int, list[str]]:
    work = core.load(conn, instance_id, at)  # already locked by us: returns at once
    if work.instance.state is not InstanceState.ACTIVE:  # changed since the scan
        return 0, []
    model = core.model(conn, work.instance.definition_id)
    flow = Flow(work, model)
    applied: list[str] = []
    stale: list[str] = []
    created: list[str] = []  # next occurrences of cycles created here, due already
    fired_created: list[str] = []
    due = [(x.fire_at, x.id, x) for x in timers]
    heapq.heapify(due)
    while due:  # in due order, also across cycles that are catching up
        _, _, timer = heapq.heappop(due)
        # Checked one by one: an earlier timer (a timeout) may have ended the token.
        if not rt.still_applies(flow, timer):
            if timer.id not in created:  # a new row that did not fire is cancelled by flush
                stale.append(timer.id)
            continue
        following = rt.apply(flow, timer)
        if timer.id in created:
            rt.mark_new_row_fired(flow, timer.id, at)
            fired_created.append(timer.id)
        else:
            applied.append(timer.id)
        if following is not None and following.fire_at <= at:
            created.append(following.id)
            heapq.heappush(due, (following.fire_at, following.id, following))
    flow.run(())
    store.mark_cancelled(conn, stale)
    # Marked fired before the flush, in this same transaction: the flush cancels pending
    # timers of tokens that stopped (a timeout cancels the task's other timers), and must
    # not turn the ones that just fired into "cancelled".
    store.mark_fired(conn, applied, at)
    core.flush(conn, work)
    return len(applied) + len(fired_created), list(work.to_dispatch)


def next_wakeup(core: EngineCore) -> datetime | None:
    """When the earliest pending timer of an active instance is due (maybe in the past)."""
    with core.db.connect() as conn:
        return store.next_wakeup(conn)


def timers(
    core: EngineCore,
    instance_id: str | None = None,
    *,
    state: str | None = store.PENDING,
    limit: int | None = None,
) -> list[Timer]:
    """Timers (pending ones by default), earliest first."""
    if state is not None and state not in (store.PENDING, store.FIRED, store.CANCELLED):
        raise InvalidOperation(f"unknown timer state '{state}'; use pending, fired or cancelled")
    with core.db.connect() as conn:
        return store.list_timers(conn, instance_id=instance_id, state=state, limit=limit)
