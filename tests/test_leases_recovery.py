"""Recovering from lost workers and a lost database, on PostgreSQL (issue 13 items 1, 2, 4).

The heartbeat keeps a long handler's short lease; a step whose holder died on this host is
taken back at once; a finish that meets a broken connection is tried again until the
database answers, or given up when the lease runs out (then the step runs again).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from sqlalchemy import text

from bpm import Engine, EngineConfig, TaskContext
from bpm.engine.clock import DatabaseClock
from bpm.engine.lost_workers import parse_owner, provably_dead
from bpm.handlers import HandlerRegistry
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from bpm.runtime.states import TokenState
from bpm.store import tokens as token_store
from tests.engine_helpers import claim_one
from tests.support import eventually, pg_admin_dsn

Handler = Callable[[TaskContext], Any]


def model(lease_seconds: float | None) -> ProcessModel:
    """start -> work (inline) -> review (user task) -> end."""
    nodes: list[n.Node] = [
        n.StartEvent("start"),
        n.ServiceTask("work", handler="work", lease_seconds=lease_seconds),
        n.UserTask("review"),
        n.EndEvent("end"),
    ]
    flows = (
        n.Flow("f1", "start", "work"),
        n.Flow("f2", "work", "review"),
        n.Flow("f3", "review", "end"),
    )
    return ProcessModel("recovery", {x.id: x for x in nodes}, flows)


class Handlers:
    def __init__(self) -> None:
        self.registry = HandlerRegistry()
        self.fn: Handler = lambda ctx: {"worked": ctx.attempt}
        self.calls = 0

        def work(ctx: TaskContext) -> Any:
            self.calls += 1
            return self.fn(ctx)

        self.registry.register("work", work)


@pytest.fixture
def handlers() -> Handlers:
    return Handlers()


def make(url: str, handlers: Handlers, lease: float | None) -> Engine:
    engine = Engine(url, registry=handlers.registry, config=EngineConfig())
    engine.deploy(model(lease))
    return engine


@pytest.fixture
def eng(pg_database_url: str, handlers: Handlers) -> Iterator[Engine]:
    engine = make(pg_database_url, handlers, 2)
    yield engine
    engine.close()


def work_token(engine: Engine, instance_id: str) -> Any:
    (tok,) = [x for x in engine.get_instance(instance_id).tokens if x.node_id == "work"]
    return tok


def trail(engine: Engine, instance_id: str) -> list[str]:
    return [e.type for e in engine.history(instance_id)]


def dead_pid() -> int:
    """The pid of a process of this host that has ended (and was reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# -- the default lease and the heartbeat ------------------------------------------------------


def test_the_default_lease_is_short_and_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    assert EngineConfig().default_lease == timedelta(seconds=30)
    monkeypatch.setenv("BPM_DEFAULT_LEASE_SECONDS", "12")
    assert EngineConfig.from_env().default_lease == timedelta(seconds=12)


def test_the_heartbeat_keeps_a_long_handlers_short_lease(eng: Engine, handlers: Handlers) -> None:
    """A 2 s lease, a handler that runs for longer: the heartbeat (every 0.67 s) extends
    it, so the reclaimer, on the real clock, never finds it expired."""
    inst = eng.start("recovery")
    tok = work_token(eng, inst.id)
    release = threading.Event()
    reclaimed: list[int] = []

    def long_handler(ctx: TaskContext) -> dict[str, Any]:
        release.wait(timeout=30)
        return {"long": True}

    handlers.fn = long_handler
    keeper = eng.core.leases
    # The keeper already runs, idle, at the default lease's pace (every 10 s): holding a
    # step with a shorter lease must make it beat at that step's pace at once.
    keeper.hold([], time.monotonic())
    eventually(lambda: keeper.pace == 10.0, timeout=5, what="the keeper to idle")
    runner = threading.Thread(target=eng.run_token, args=(tok.id,))
    runner.start()
    start = keeper.beats
    # Four beats are more than a lease of wall time: without them it would have expired.
    eventually(lambda: keeper.beats >= start + 4, timeout=15, what="four heartbeats")
    reclaimed.append(eng.reclaim_expired_leases())
    held = work_token(eng, inst.id)
    assert held.state is TokenState.EXECUTING
    assert held.lease_expires_at > eng.core.now()
    release.set()
    runner.join(timeout=10)
    assert reclaimed == [0]
    assert eng.get_instance(inst.id).variables == {"long": True}
    assert eng.stats.finishes_dropped == 0
    assert "lease_lost" not in trail(eng, inst.id)
    assert keeper.held() == {}  # nothing is extended after the finish


def test_without_a_heartbeat_the_lease_runs_out_and_the_trail_says_so(
    eng: Engine, handlers: Handlers
) -> None:
    """A claim by a worker that never beats (it died): the reclaimer takes it back after the
    lease, a failed attempt; the next run is attempt 2. History tells the whole story."""
    inst = eng.start("recovery")
    tok = work_token(eng, inst.id)
    now = eng.core.now()
    step = claim_one(eng.core, tok.id, "elsewhere:1", now)
    assert step is not None
    assert eng.reclaim_expired_leases(now=now + timedelta(seconds=1.5)) == 0
    assert eng.reclaim_expired_leases(now=now + timedelta(seconds=2.5)) == 1
    assert eng.run_token(tok.id) == 1
    events = eng.history(inst.id)
    lost = [e for e in events if e.type == "lease_lost"]
    assert len(lost) == 1
    assert lost[0].payload["owner"] == "elsewhere:1"
    assert lost[0].payload["cause"] == "lease_expired"
    assert lost[0].payload["attempt"] == 1
    failed = [e for e in events if e.type == "attempt_failed"]
    assert [e.payload["attempt"] for e in failed] == [1]
    assert "worker lost" in failed[0].payload["error"]
    assert eng.get_instance(inst.id).variables == {"worked": 2}


# -- a dead holder on this host -----------------------------------------------------------------


def test_owner_ids_and_proof_of_death() -> None:
    host = socket.gethostname()
    assert parse_owner("h:12") == ("h", 12)
    assert parse_owner("a:b:12") == ("a:b", 12)
    assert parse_owner("worker-1") is None and parse_owner("h:") is None
    gone = dead_pid()
    assert provably_dead(f"{host}:{gone}")
    assert not provably_dead(f"another-host-{host}:{gone}")  # not ours to judge
    assert not provably_dead(f"{host}:{os.getpid()}")  # this very process
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"]) as alive:
        try:
            assert not provably_dead(f"{host}:{alive.pid}")
        finally:
            alive.kill()
    assert not provably_dead("w1")


def test_a_step_whose_holder_died_on_this_host_is_taken_back_at_once(
    pg_database_url: str, handlers: Handlers
) -> None:
    """The redelivered message of a killed Celery child: the lease has minutes left, but
    its process is gone, so the step is taken back and run now, as attempt 2."""
    eng = make(pg_database_url, handlers, 600)
    try:
        inst = eng.start("recovery")
        tok = work_token(eng, inst.id)
        owner = f"{socket.gethostname()}:{dead_pid()}"
        assert claim_one(eng.core, tok.id, owner, eng.core.now()) is not None
        assert eng.run_token(tok.id) == 1
        assert eng.stats.dead_holders_reclaimed == 1
        assert eng.get_instance(inst.id).variables == {"worked": 2}
        events = eng.history(inst.id)
        (lost,) = [e for e in events if e.type == "lease_lost"]
        assert lost.payload == {
            "owner": owner,
            "attempt": 1,
            "cause": "holder_died",
            "lease_expires_at": lost.payload["lease_expires_at"],
        }
        (failed,) = [e for e in events if e.type == "attempt_failed"]
        assert failed.payload["error"] == f"worker lost: process {owner} died"
        types = [e.type for e in events]
        assert types.index("lease_lost") < types.index("attempt_failed")
    finally:
        eng.close()


def test_a_live_or_foreign_holder_keeps_its_step(pg_database_url: str, handlers: Handlers) -> None:
    """No proof, no taking back: a holder on another host, or a live process here."""
    eng = make(pg_database_url, handlers, 600)
    host = socket.gethostname()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        for owner in (f"other-{host}:{dead_pid()}", f"{host}:{alive.pid}"):
            inst = eng.start("recovery")
            tok = work_token(eng, inst.id)
            assert claim_one(eng.core, tok.id, owner, eng.core.now()) is not None
            before = eng.history(inst.id)
            assert eng.run_token(tok.id) == 0
            held = work_token(eng, inst.id)
            assert held.state is TokenState.EXECUTING and held.lease_owner == owner
            assert held.attempt == 1
            assert eng.history(inst.id) == before
        assert eng.stats.dead_holders_reclaimed == 0
        assert eng.stats.claims_lost == 2
        assert handlers.calls == 0
    finally:
        alive.kill()
        alive.wait()
        eng.close()


# -- the database goes away while a handler runs -----------------------------------------------


def _database_name(engine: Engine) -> str:
    return str(engine.db.url.database)


def _cut_off(dbname: str, *, allow: bool) -> None:
    """Refuse (or allow again) connections to ``dbname`` and end the open ones."""
    with psycopg.connect(pg_admin_dsn(), autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{dbname}" WITH ALLOW_CONNECTIONS {str(allow).lower()}')
        if not allow:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (dbname,),
            )


def test_a_finish_is_retried_after_the_connection_was_killed(
    eng: Engine, handlers: Handlers
) -> None:
    """pg_terminate_backend in the middle of the handler: the finish meets a dead
    connection, and the result is applied on the next try, not thrown away."""
    inst = eng.start("recovery")
    tok = work_token(eng, inst.id)
    dbname = _database_name(eng)

    def handler(ctx: TaskContext) -> dict[str, Any]:
        with psycopg.connect(pg_admin_dsn(), autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (dbname,),
            )
        return {"kept": ctx.attempt}

    handlers.fn = handler
    assert eng.run_token(tok.id) == 1
    assert eng.stats.finish_retries >= 1
    assert handlers.calls == 1
    assert eng.get_instance(inst.id).variables == {"kept": 1}
    assert work_token(eng, inst.id).state is TokenState.COMPLETED
    assert "attempt_failed" not in trail(eng, inst.id)


def test_a_finish_waits_for_the_database_to_come_back(
    pg_database_url: str, handlers: Handlers
) -> None:
    """The database refuses connections for a while (shorter than the lease): the worker
    keeps the result and finishes once it answers again."""
    eng = make(pg_database_url, handlers, 30)
    dbname = _database_name(eng)
    try:
        inst = eng.start("recovery")
        tok = work_token(eng, inst.id)

        def handler(ctx: TaskContext) -> dict[str, Any]:
            _cut_off(dbname, allow=False)
            return {"kept": True}

        handlers.fn = handler

        def reopen_after_two_retries() -> None:
            eventually(lambda: eng.stats.finish_retries >= 2, timeout=20, what="two retries")
            _cut_off(dbname, allow=True)

        reopener = threading.Thread(target=reopen_after_two_retries)
        reopener.start()
        try:
            assert eng.run_token(tok.id) == 1
        finally:
            reopener.join(timeout=30)
            _cut_off(dbname, allow=True)
        assert eng.get_instance(inst.id).variables == {"kept": True}
        assert eng.stats.finishes_abandoned == 0
        assert handlers.calls == 1
    finally:
        eng.close()


def test_a_finish_is_given_up_when_the_lease_runs_out_and_the_step_runs_again(
    pg_database_url: str, handlers: Handlers
) -> None:
    """The database stays away longer than the lease (1.5 s): the result is given up (a
    later finish could no longer be trusted), and the step runs again as attempt 2."""
    eng = make(pg_database_url, handlers, 1.5)
    dbname = _database_name(eng)
    try:
        inst = eng.start("recovery")
        tok = work_token(eng, inst.id)

        def handler(ctx: TaskContext) -> dict[str, Any]:
            if ctx.attempt == 1:
                _cut_off(dbname, allow=False)
            return {"attempt": ctx.attempt}

        handlers.fn = handler
        try:
            assert eng.run_token(tok.id) == 1
        finally:
            _cut_off(dbname, allow=True)
        assert eng.stats.finishes_abandoned == 1, eng.stats
        assert eng.stats.finish_retries >= 1, eng.stats
        held = work_token(eng, inst.id)
        assert (held.state, held.attempt) == (TokenState.EXECUTING, 1), held
        assert "attempt" not in eng.get_instance(inst.id).variables
        eventually(
            lambda: eng.reclaim_expired_leases() == 1, timeout=10, what="the lease to expire"
        )
        assert eng.run_token(tok.id) == 1
        assert eng.get_instance(inst.id).variables == {"attempt": 2}
        assert trail(eng, inst.id).count("lease_lost") == 1
    finally:
        eng.close()


# -- one clock ----------------------------------------------------------------------------------


def test_the_engine_asks_the_database_what_time_it_is(eng: Engine) -> None:
    """The default clock of a PostgreSQL engine is the server's; it reads it at most once
    10 s and advances it with the monotonic clock in between."""
    clock = eng.core.clock
    assert isinstance(clock, DatabaseClock)
    with eng.db.connect() as conn:
        before = conn.execute(text("SELECT clock_timestamp()")).scalar_one()
    ours = clock()
    with eng.db.connect() as conn:
        after = conn.execute(text("SELECT clock_timestamp()")).scalar_one()
    assert before - timedelta(milliseconds=50) <= ours <= after + timedelta(milliseconds=50)
    readings = clock.readings
    for _ in range(100):
        clock()
    assert clock.readings - readings <= 1


def test_a_host_clock_far_off_does_not_move_the_database_clock(pg_database_url: str) -> None:
    """A fake monotonic clock that jumps an hour: the reading is re-taken from the server
    (resync), not trusted for an hour."""
    from bpm.store import db as bpm_db

    db = bpm_db.connect(pg_database_url)
    ticks = [100.0]
    clock = DatabaseClock(db, monotonic=lambda: ticks[0])
    try:
        first = clock()
        ticks[0] += 0.5
        assert clock() - first == timedelta(seconds=0.5)  # between readings: monotonic
        assert clock.readings == 1
        ticks[0] += 3600
        later = clock()  # a resync: the server's time, not first + 1 h
        assert clock.readings == 2
        assert later - first < timedelta(minutes=1)
    finally:
        db.dispose()


def test_a_lease_the_handler_extended_is_not_shortened_by_the_heartbeat(
    eng: Engine, handlers: Handlers
) -> None:
    """ctx.extend_lease(10 min) with a 2 s lease: a later heartbeat keeps 10 minutes."""
    inst = eng.start("recovery")
    tok = work_token(eng, inst.id)
    seen: list[timedelta] = []

    def handler(ctx: TaskContext) -> dict[str, Any]:
        assert ctx.extend_lease(timedelta(minutes=10))
        # the keeper now beats every third of 10 minutes; a beat (what its thread runs)
        # moves the expiry on by 10 minutes, not by the 2 s lease
        assert eng.core.leases.interval() >= 190
        assert eng.core.leases.beat() == 1
        seen.append(work_token(eng, ctx.instance_id).lease_expires_at - eng.core.now())
        return {}

    handlers.fn = handler
    assert eng.run_token(tok.id) == 1
    assert seen and seen[0] > timedelta(minutes=9), seen


def test_a_heartbeat_that_read_the_lease_before_the_handler_extended_it_keeps_it(
    eng: Engine,
) -> None:
    """The race the heartbeat's never-shorten guard closes, in order: the keeper holds the
    step with its 2 s lease; the handler's ``extend_lease`` writes 10 minutes to the row
    and has not told the keeper yet; the heartbeat's statement then runs with what it
    read (now + 2 s). It must leave the 10 minutes alone."""
    inst = eng.start("recovery")
    tok = work_token(eng, inst.id)
    now = eng.core.now()
    step = claim_one(eng.core, tok.id, "here:1", now)
    assert step is not None
    keeper = eng.core.leases
    keeper.hold([(tok.id, "here:1", step.token.attempt, timedelta(seconds=2))], time.monotonic())
    with eng.core.tx() as conn:  # what ctx.extend_lease writes, before keeper.extended()
        assert (
            token_store.extend_leases(
                conn, [(tok.id, "here:1", step.token.attempt, now + timedelta(minutes=10))], now
            )
            == 1
        )
    assert keeper.beat() == 1  # still ours: the beat itself succeeds
    expiry = work_token(eng, inst.id).lease_expires_at
    assert expiry >= now + timedelta(minutes=10), expiry - now
    keeper.release([tok.id])


def test_after_a_handler_extended_its_lease_the_heartbeat_beats_with_that_lease(
    eng: Engine, handlers: Handlers
) -> None:
    """ctx.extend_lease(10 min): from then on each heartbeat moves the expiry on by 10
    minutes from its own time (not by the 2 s lease), so a handler that runs for longer
    than the 10 minutes it asked for keeps its step while its process lives."""
    clock = {"now": eng.core.now()}
    eng.core.clock = lambda: clock["now"]
    inst = eng.start("recovery")
    tok = work_token(eng, inst.id)
    seen: list[timedelta] = []

    def handler(ctx: TaskContext) -> dict[str, Any]:
        assert ctx.extend_lease(timedelta(minutes=10))
        clock["now"] += timedelta(minutes=9)  # nine minutes of work later, a heartbeat
        assert eng.core.leases.beat() == 1
        seen.append(work_token(eng, ctx.instance_id).lease_expires_at - clock["now"])
        return {}

    handlers.fn = handler
    assert eng.run_token(tok.id) == 1
    assert seen and seen[0] > timedelta(minutes=9), seen
