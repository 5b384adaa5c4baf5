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
after our commit, no longer finds it pending. Each instance is applied in memory and
nothing is written before the end of the batch: an unexpected error in one instance is
logged and drops only that instance's changes (its timers stay pending), instead of
blocking the whole batch forever.

Suspended instances are not active, so their timers stay pending until ``resume``; then
they are due at once and fire on the next poll (a deliberate choice: nothing of a
suspended instance moves, and nothing is lost).
"""

from __future__ import annotations

import heapq
import logging
from collections import defaultdict
from datetime import datetime

from bpm.engine.core import EngineCore
from bpm.engine.unit import unit_of_work
from bpm.errors import InvalidOperation
from bpm.observe import TimerFired
from bpm.runtime import timers as rt
from bpm.runtime.records import Timer
from bpm.runtime.states import RUNNING_INSTANCE_STATES, TimerState
from bpm.runtime.walker import Walker
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
        batch_fired, claimed, skipped = _fire_batch(core, now, size, passed_over)
        fired += batch_fired
        passed_over.extend(skipped)
        if claimed < size:  # nothing more is due; every claimed row fired, was cancelled
            break  # as stale, or is excluded from the next batch
    return fired


def _fire_batch(
    core: EngineCore, now: datetime | None, size: int, exclude: list[str]
) -> tuple[int, int, list[str]]:
    """One transaction: (fired, claimed, passed over)."""
    fired = 0
    skipped: list[str] = []
    told: list[tuple[str, Timer]] = []  # (process key, timer) for the observers
    with unit_of_work(core, now) as unit:
        due = store.claim_due(unit.conn, unit.now, size, exclude)
        if not due:
            return 0, 0, []
        by_instance: dict[str, list[Timer]] = defaultdict(list)
        for timer in due:
            by_instance[timer.instance_id].append(timer)
        works = unit.lock(list(by_instance), skip_locked=True)
        for instance_id in sorted(by_instance):
            timers = by_instance[instance_id]
            work = works.get(instance_id)
            if work is None:  # busy: another transaction holds the instance
                skipped.extend(x.id for x in timers)
                continue
            if work.instance.state not in RUNNING_INSTANCE_STATES:  # changed since the scan
                unit.drop(instance_id)
                continue
            done: list[Timer] | None = [] if core.observers else None
            try:
                walker = unit.walker(work)
                fired += _apply_instance(walker, timers, done)
            except Exception:  # nothing is written before the flush: drop this instance
                unit.drop(instance_id)
                log.exception(
                    "firing timers %s of instance %s failed; they stay pending",
                    [x.id for x in timers],
                    instance_id,
                )
                skipped.extend(x.id for x in timers)
                continue
            if done:
                told.extend((walker.model.key, x) for x in done)
    for key, timer in told:
        lateness = (unit.now - timer.fire_at).total_seconds()
        core.observers.emit(TimerFired(key, timer.node_id, timer.instance_id, timer.kind, lateness))
    return fired, len(due), skipped


def _apply_instance(walker: Walker, timers: list[Timer], done: list[Timer] | None = None) -> int:
    """Fire the instance's due timers in due order (also cycles catching up); stale ones
    (their token no longer waits for them) are cancelled. Returns how many fired (and
    appends them to ``done``)."""
    work = walker.work
    fired = 0
    due = [(x.fire_at, x.id, work.adopt(x)) for x in timers]
    heapq.heapify(due)
    while due:
        _, _, timer = heapq.heappop(due)
        # Checked one by one: an earlier timer (a timeout) may have ended the token.
        if not rt.still_applies(walker, timer):
            current = work.item(Timer, timer.id)
            if current is not None and current.state is TimerState.PENDING:
                work.move(current, TimerState.CANCELLED, payload={"stale": True})
            continue
        following = rt.apply(walker, timer)
        fired += 1
        if done is not None:
            done.append(timer)
        if following is not None and following.fire_at <= work.now:
            heapq.heappush(due, (following.fire_at, following.id, following))
    walker.run()
    return fired


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
    if state is not None and state not in {s.value for s in TimerState}:
        raise InvalidOperation(f"unknown timer state '{state}'; use pending, fired or cancelled")
    with core.db.connect() as conn:
        return store.list_timers(conn, instance_id=instance_id, state=state, limit=limit)
