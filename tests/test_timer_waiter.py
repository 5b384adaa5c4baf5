"""The timer waiter: one look-ahead query per idle tick, timers fired when due, and a timer
created due sooner than the next look-ahead woken through NOTIFY."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import event

from bpm import Engine
from bpm.builder import Process
from bpm.engine.waiter import TimerWaiter
from tests.support import eventually


def waiting(key: str) -> object:
    return (
        Process(key)
        .start("s")
        .wait_until("due", "due_at")
        .end("e")
        .sequence("s", "due", "e")
        .build()
    )


def statements(engine: Engine) -> list[str]:
    seen: list[str] = []

    @event.listens_for(engine.db, "before_cursor_execute")
    def count(*args: object) -> None:
        seen.append(str(args[2]))

    return seen


def test_an_idle_waiter_makes_one_query_per_tick(pg_database_url: str) -> None:
    engine = Engine(pg_database_url)
    seen = statements(engine)
    waiter = TimerWaiter(engine, tick=timedelta(seconds=0.25))
    waiter.start()
    try:
        eventually(lambda: waiter.queries >= 6, timeout=10, what="six ticks")
    finally:
        waiter.stop()
    looks = [s for s in seen if "FROM timer" in s or "timer_schedule" in s]
    clock = [s for s in seen if "clock_timestamp" in s]
    # nothing but the look-aheads, and the database's clock read once (bpm/engine/clock.py:
    # at most once per resync, 10 s)
    assert len(seen) == len(looks) + len(clock) and len(looks) == waiter.queries
    assert len(clock) <= 1
    engine.close()


def test_timers_fire_when_due_and_a_sooner_one_is_noticed_at_once(pg_database_url: str) -> None:
    engine = Engine(pg_database_url)
    engine.deploy(waiting("soon"))
    now = datetime.now(UTC)
    early = [
        engine.start("soon", {"due_at": (now + timedelta(seconds=0.5 + i / 10)).isoformat()}).id
        for i in range(3)
    ]
    # a long tick: only the NOTIFY of a new timer can make the waiter see it in time
    tick = timedelta(seconds=30)
    waiter = TimerWaiter(engine, tick=tick)
    started = datetime.now(UTC)
    waiter.start()
    try:
        # The waiter has made its look-ahead and its listener is on: the listener's first
        # wake-up makes a second look-ahead, whichever came first.
        eventually(lambda: waiter.queries >= 2, timeout=10, what="the look-ahead, listening")
        later = engine.start(
            "soon", {"due_at": (datetime.now(UTC) + timedelta(seconds=0.6)).isoformat()}
        ).id
        ids = [*early, later]
        eventually(
            lambda: all(engine.get_instance(i).ended for i in ids),
            timeout=10,
            what="every timer to fire",
        )
    finally:
        waiter.stop()
    fired = {t.instance_id: t for t in engine.timers(state="fired")}
    assert set(fired) == set(ids)
    for timer in fired.values():
        assert timer.fired_at is not None and timer.fired_at >= timer.fire_at, timer  # never early
    # The later timer fired before the waiter's next look-ahead by tick could have found it:
    # the NOTIFY woke the waiter (how many milliseconds late depends on the machine's load,
    # which is not what this test is about).
    assert fired[later].fired_at is not None and fired[later].fired_at < started + tick
    engine.close()
