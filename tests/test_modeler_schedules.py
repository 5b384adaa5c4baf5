"""Timer start events: schedules made at deploy, fired once per due time, replaced by a new
version, paused by suspending the definition; concurrent pollers on PostgreSQL."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bpm import Engine, EngineConfig
from bpm.builder import Process
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from tests.engine_helpers import table_dump

DATA = Path(__file__).resolve().parent / "data" / "modeler"
T0 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)
H = timedelta(hours=1)


def at(url: str, when: datetime) -> Engine:
    """An engine whose clock says ``when`` (deploys stamp their schedules with it)."""
    return Engine(url, config=EngineConfig(), clock=lambda: when)


def ticking(key: str, cycle: str) -> ProcessModel:
    """A timer start event with ``cycle`` straight to the end (instances complete at once)."""
    model = Process(key).start("manual").end("end").sequence("manual", "end").build()
    tick = n.StartEvent("tick", timer=n.TimerSpec(n.TimerKind.CYCLE, cycle))
    return ProcessModel(
        key=key,
        nodes={**model.nodes, "tick": tick},
        flows=(*model.flows, n.Flow("f_tick", "tick", "end")),
    )


def started_at_tick(engine: Engine, key: str) -> list[str]:
    out = []
    for inst in engine.instances(definition_key=key):
        first = engine.history(inst.id)[0]
        if first.payload.get("start_event") == "tick":
            out.append(inst.id)
    return out


def test_a_cycle_fires_once_per_due_time_and_ends(database_url: str) -> None:
    engine = at(database_url, T0)
    engine.deploy(DATA / "timer_start.bpmn")
    [schedule] = engine.schedules("nightly")
    assert (schedule.node_id, schedule.state, schedule.next_due) == ("every_hour", "active", T0 + H)
    assert engine.fire_due_schedules(now=T0 + H - timedelta(seconds=1)) == 0
    assert engine.fire_due_schedules(now=T0 + H) == 1
    before = table_dump(engine)
    assert engine.fire_due_schedules(now=T0 + H) == 0  # the same due time never again
    assert table_dump(engine) == before
    [inst] = engine.instances(definition_key="nightly")
    assert [t.node_id for t in engine.user_tasks(inst.id)] == ["report"]
    assert engine.history(inst.id)[0].payload["start_event"] == "every_hour"
    assert engine.fire_due_schedules(now=T0 + 2 * H) == 1
    assert engine.fire_due_schedules(now=T0 + 3 * H) == 1
    assert engine.fire_due_schedules(now=T0 + 9 * H) == 0  # R3: three and done
    [ended] = engine.schedules("nightly", include_inactive=True)
    assert (ended.state, ended.fired_count, ended.next_due) == ("ended", 3, None)
    dues = [due for due, _ in engine.schedule_fires(ended.id)]
    assert dues == [T0 + H, T0 + 2 * H, T0 + 3 * H]
    assert engine.schedules("nightly") == []


def test_a_schedule_that_fell_behind_fires_once_then_catches_up(database_url: str) -> None:
    engine = at(database_url, T0)
    engine.deploy(ticking("behind", "R/PT1H"))
    assert engine.fire_due_schedules(now=T0 + 5 * H + timedelta(minutes=10)) == 1
    [schedule] = engine.schedules("behind")
    assert schedule.next_due == T0 + 6 * H  # aligned on the cycle, missed ones skipped
    assert engine.fire_due_schedules(now=T0 + 5 * H + timedelta(minutes=20)) == 0
    assert len(started_at_tick(engine, "behind")) == 1


def test_a_new_version_replaces_the_schedule(database_url: str) -> None:
    engine = at(database_url, T0)
    old = engine.deploy(ticking("report", "R/PT1H"))
    engine = at(database_url, T0 + timedelta(minutes=30))
    new = engine.deploy(ticking("report", "R/PT2H"))
    assert new.version == 2
    [schedule] = engine.schedules("report")
    assert (schedule.definition_id, schedule.next_due) == (new.id, T0 + timedelta(minutes=150))
    states = {s.definition_id: s.state for s in engine.schedules("report", include_inactive=True)}
    assert states == {old.id: "replaced", new.id: "active"}
    assert engine.fire_due_schedules(now=T0 + 2 * H) == 0  # the old one would have fired
    assert engine.fire_due_schedules(now=T0 + 3 * H) == 1
    [inst] = engine.instances(definition_key="report")
    assert inst.definition_id == new.id
    # A version without a timer start ends the schedule of the key.
    engine.deploy(Process("report").start("s").end("e").sequence("s", "e"))
    assert engine.schedules("report") == []


def test_suspending_the_definition_pauses_its_schedule(database_url: str) -> None:
    engine = at(database_url, T0)
    engine.deploy(ticking("paused", "R/PT1H"))
    engine.suspend_definition("paused")
    assert [s.state for s in engine.schedules("paused")] == ["paused"]
    before = table_dump(engine)
    assert engine.fire_due_schedules(now=T0 + 3 * H) == 0
    assert table_dump(engine) == before
    engine.activate_definition("paused")
    assert engine.fire_due_schedules(now=T0 + 3 * H) == 1  # the missed due time, once
    assert engine.fire_due_schedules(now=T0 + 3 * H) == 0
    # A new version of a suspended key stays suspended, and so does its schedule.
    engine.suspend_definition("paused")
    engine.deploy(ticking("paused", "R/PT30M"))
    assert engine.definition("paused").suspended
    assert [s.state for s in engine.schedules("paused")] == ["paused"]


def test_a_date_in_the_past_fires_at_the_next_poll_once(database_url: str) -> None:
    engine = at(database_url, T0)
    model = ticking("late", "R/PT1H")
    tick = n.StartEvent("tick", timer=n.TimerSpec(n.TimerKind.DATE, "2029-12-31T00:00:00Z"))
    engine.deploy(ProcessModel(key="late", nodes={**model.nodes, "tick": tick}, flows=model.flows))
    assert engine.fire_due_schedules(now=T0) == 1
    assert engine.fire_due_schedules(now=T0 + 100 * H) == 0
    assert engine.schedules("late") == []


def test_the_fire_record_refuses_a_second_start_for_one_due_time(pg_database_url: str) -> None:
    from bpm.store import schedules as store

    engine = at(pg_database_url, T0)
    engine.deploy(ticking("twice", "R/PT1H"))
    [schedule] = engine.schedules("twice")
    with engine.db.begin() as conn:
        assert store.record_fire(conn, schedule.id, T0 + H, "i-1", T0 + H)
        assert not store.record_fire(conn, schedule.id, T0 + H, "i-2", T0 + H)


def test_concurrent_pollers_start_each_due_time_once(pg_database_url: str) -> None:
    engine = at(pg_database_url, T0)
    keys = [f"k{i}" for i in range(12)]
    for key in keys:
        engine.deploy(ticking(key, "R/PT1M"))
    engines = [Engine(pg_database_url, config=EngineConfig(pool_size=2)) for _ in range(4)]
    barrier = threading.Barrier(len(engines))
    counts: list[int] = []
    errors: list[BaseException] = []

    def poll(e: Engine) -> None:
        try:
            barrier.wait()
            for minute in range(1, 6):
                counts.append(e.fire_due_schedules(now=T0 + timedelta(minutes=minute)))
        except BaseException as exc:  # reported below, in the test thread
            errors.append(exc)

    threads = [threading.Thread(target=poll, args=(e,)) for e in engines]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    for e in engines:
        e.close()
    assert not errors, errors
    per_key = Counter(i.definition_key for i in engine.instances())
    # Each key: one instance per minute that came due while the pollers ran (1 to 5).
    for key in keys:
        [schedule] = engine.schedules(key)
        fires = engine.schedule_fires(schedule.id)
        dues = [due for due, _ in fires]
        assert len(dues) == len(set(dues)) == per_key[key] == schedule.fired_count
        assert 1 <= per_key[key] <= 5
    assert sum(counts) == sum(per_key.values())


def test_the_timer_start_sweep_is_off_unless_asked_for() -> None:
    """Beat's timer waiter starts instances on time; the periodic sweep is optional."""
    from bpm.contrib.celery.schedule import beat_schedule

    assert "bpm.fire_timer_starts" not in beat_schedule({})
    schedule = beat_schedule({"BPM_BEAT_TIMER_SWEEP_SECONDS": "30"})
    assert schedule["bpm.fire_timer_starts"]["schedule"] == timedelta(seconds=30)


def test_the_waiter_looks_ahead_at_timer_starts_too(sqlite_database_url: str) -> None:
    from bpm.store.timers import due_before

    engine = at(sqlite_database_url, T0)
    engine.upgrade()
    engine.deploy(ticking("ahead", "R/PT1H"))
    with engine.db.connect() as conn:
        due = due_before(conn, T0 + timedelta(days=1), 10)
    assert due and all(d.tzinfo is not None for d in due)


def test_the_embedded_loop_fires_timer_starts(sqlite_database_url: str) -> None:
    from bpm.local import LocalLoop

    engine = at(sqlite_database_url, T0)
    engine.upgrade()
    loop = LocalLoop(engine)
    model = ticking("embedded", "R/PT1H")
    tick = n.StartEvent("tick", timer=n.TimerSpec(n.TimerKind.DATE, "2020-01-01T00:00:00Z"))
    engine.deploy(
        ProcessModel(key="embedded", nodes={**model.nodes, "tick": tick}, flows=model.flows)
    )
    assert loop.tick() >= 1
    assert len(started_at_tick(engine, "embedded")) == 1
    loop.tick()
    assert len(started_at_tick(engine, "embedded")) == 1
