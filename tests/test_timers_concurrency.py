"""PostgreSQL: concurrent pollers fire each timer once, never deadlock, and a poller killed
between "timer fired" and "token resumed" leaves nothing half-done."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select, text

from bpm import Engine, InstanceState, TokenState
from bpm.builder import Process
from bpm.runtime.states import BlockKind
from bpm.store.tables import process_instance
from tests.support import events_per_instance, visits

ROOT = Path(__file__).resolve().parent.parent
T0 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)


def delay_model(key: str) -> object:
    return (
        Process(key)
        .start("s")
        .timer("wait", duration="PT1M")
        .end("e")
        .sequence("s", "wait", "e")
        .build()
    )


def timer_fired_counts(engine: Engine) -> Counter[str]:
    return events_per_instance(engine, "timer_fired")


def test_four_concurrent_pollers_fire_every_timer_exactly_once(pg_database_url: str) -> None:
    engine = Engine(pg_database_url)
    engine.deploy(delay_model("race"))
    ids = [engine.start("race", now=T0 + timedelta(milliseconds=i)).id for i in range(300)]
    pollers = [Engine(pg_database_url) for _ in range(4)]
    totals: list[int] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(pollers))

    def poll(eng: Engine) -> None:
        try:
            barrier.wait()
            total = 0
            for _ in range(50):
                fired = eng.fire_due_timers(now=T0 + timedelta(minutes=2), limit=25)
                total += fired
                if fired == 0 and eng.next_wakeup() is None:
                    break
            totals.append(total)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=poll, args=(e,)) for e in pollers]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    assert not errors, errors
    assert sum(totals) == 300
    assert max(totals) < 300  # the work was actually shared
    counts = timer_fired_counts(engine)
    assert set(counts.values()) == {1} and set(counts) == set(ids)
    with engine.db.connect() as conn:
        states = conn.execute(select(process_instance.c.state)).scalars().all()
    assert set(states) == {"completed"}
    for e in (*pollers, engine):
        e.close()


def test_pollers_and_completions_racing_on_the_same_instances(pg_database_url: str) -> None:
    """Timeouts fire while users complete the same tasks: each instance ends exactly one
    way, and no transaction dies of a deadlock."""
    engine = Engine(pg_database_url)
    engine.deploy(
        Process("approval")
        .start("s")
        .user_task("approve")
        .end("approved")
        .boundary_timer("timeout", "approve", duration="PT1H")
        .end("timed_out")
        .sequence("s", "approve", "approved")
        .sequence("timeout", "timed_out")
        .build()
    )
    ids = [engine.start("approval", now=T0).id for _ in range(120)]
    tasks = {t.instance_id: t.id for t in engine.user_tasks()}
    late = T0 + timedelta(hours=2)
    errors: list[BaseException] = []
    completed: list[str] = []

    def complete(eng: Engine, mine: list[str]) -> None:
        from bpm import NotFound

        for instance_id in mine:
            try:
                eng.complete_user_task(tasks[instance_id], {"by": "user"}, now=late)
                completed.append(instance_id)
            except NotFound:
                pass  # the timeout won: the REST API would answer 404
            except BaseException as exc:
                errors.append(exc)

    def poll(eng: Engine) -> None:
        try:
            while eng.fire_due_timers(now=late, limit=7):
                pass
        except BaseException as exc:
            errors.append(exc)

    engines = [Engine(pg_database_url) for _ in range(4)]
    threads = [
        threading.Thread(target=complete, args=(engines[0], ids[::2])),
        threading.Thread(target=complete, args=(engines[1], ids[1::2])),
        threading.Thread(target=poll, args=(engines[2],)),
        threading.Thread(target=poll, args=(engines[3],)),
    ]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    while engine.fire_due_timers(now=late):
        pass
    assert not errors, errors
    counts = timer_fired_counts(engine)
    for instance_id in ids:
        inst = engine.get_instance(instance_id)
        assert inst.state is InstanceState.COMPLETED
        ends = {
            node
            for node, states in visits(engine, instance_id).items()
            if TokenState.COMPLETED in states
        }
        if instance_id in completed:
            assert "approved" in ends and "timed_out" not in ends
            assert counts[instance_id] == 0
        else:
            assert "timed_out" in ends and "approved" not in ends
            assert counts[instance_id] == 1
    assert engine.timers() == []
    for e in (*engines, engine):
        e.close()


def test_a_busy_instance_is_skipped_without_waiting(pg_database_url: str) -> None:
    engine = Engine(pg_database_url)
    engine.deploy(delay_model("busy"))
    inst = engine.start("busy", now=T0)
    with engine.db.connect() as holder:
        tx = holder.begin()
        holder.execute(
            text("SELECT id FROM process_instance WHERE id = :id FOR UPDATE"), {"id": inst.id}
        )
        started = time.monotonic()
        assert engine.fire_due_timers(now=T0 + timedelta(minutes=5)) == 0
        assert time.monotonic() - started < 2.0  # it did not queue behind the lock
        tx.rollback()
    assert [t.state for t in engine.timers(inst.id)] == ["pending"]
    assert engine.fire_due_timers(now=T0 + timedelta(minutes=5)) == 1
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    engine.close()


KILLER = textwrap.dedent(
    """
    import os, signal, sys
    from datetime import datetime
    from bpm import Engine
    import bpm.store.dialect as dialect
    import bpm.store.timers as timer_store
    import bpm.store.work as work_store

    url, point, now = sys.argv[1], sys.argv[2], datetime.fromisoformat(sys.argv[3])

    def die_after(fn):
        def wrapper(*args, **kwargs):
            result = fn(*args, **kwargs)
            print("killing myself after", fn.__name__, flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
            return result
        return wrapper

    def die_before(fn):
        def wrapper(*args, **kwargs):
            print("killing myself before", fn.__name__, flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        return wrapper

    if point == "after_claim":  # the due timers are row-locked, nothing applied yet
        timer_store.claim_due = die_after(timer_store.claim_due)
    else:  # fired and the token resumed, all written, but nothing is committed: the
        # engine's own transaction sends its COMMIT in the flush's round trip, so die just
        # before it is queued (or after the flush, where the COMMIT is not pipelined)
        dialect.commit_pipelined = die_before(dialect.commit_pipelined)
        work_store.flush = die_after(work_store.flush)
    Engine(url).fire_due_timers(now=now)
    print("not killed?!", flush=True)
    """
)


@pytest.mark.parametrize("point", ["after_claim", "after_flush"])
def test_killing_the_poller_between_fired_and_resumed_leaves_the_timer_pending(
    pg_database_url: str, point: str
) -> None:
    engine = Engine(pg_database_url)
    engine.deploy(delay_model("crash"))
    inst = engine.start("crash", now=T0)
    due = T0 + timedelta(minutes=1)
    res = subprocess.run(
        [sys.executable, "-c", KILLER, pg_database_url, point, due.isoformat()],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == -9, (res.stdout, res.stderr)
    assert "killing myself" in res.stdout
    # Nothing of the transaction survived: the timer is pending, the token still waits.
    (timer,) = engine.timers(inst.id)
    assert timer.state == "pending" and timer.fired_at is None
    (tok,) = [t for t in engine.get_instance(inst.id).tokens if t.node_id == "wait"]
    assert tok.state is TokenState.WAITING and tok.blocked_kind is BlockKind.TIMER
    assert timer_fired_counts(engine)[inst.id] == 0
    # A restarted poller fires it, once.
    assert engine.fire_due_timers(now=due) == 1
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    assert timer_fired_counts(engine)[inst.id] == 1
    engine.close()
