"""Incidents: listing, retrying with a fresh set of attempts, bad input, and the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bpm import Engine, InstanceState, InvalidOperation, NotFound, RetryPolicy, TokenState
from bpm.builder import Process
from bpm.handlers import HandlerRegistry, TaskContext
from tests.engine_helpers import drain, make_engine, table_dump

ROOT = Path(__file__).resolve().parent.parent
T0 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)


def flaky_setup(url: str, fail_until: dict[str, int]) -> tuple[Engine, Any, list[int]]:
    attempts: list[int] = []

    def handler(ctx: TaskContext) -> dict[str, Any]:
        attempts.append(ctx.attempt)
        if fail_until["n"] > 0:
            fail_until["n"] -= 1
            raise RuntimeError("downstream is down")
        return {"ok": True}

    reg = HandlerRegistry()
    reg.register("h", handler, retry=RetryPolicy.fixed(2, 0))
    engine, q = make_engine(url, reg)
    engine.deploy(
        Process("inc")
        .start("s")
        .service_task("work", handler="h")
        .end("e")
        .sequence("s", "work", "e")
        .build()
    )
    return engine, q, attempts


def test_retry_incident_runs_the_step_again_with_fresh_attempts(database_url: str) -> None:
    budget = {"n": 3}
    engine, q, attempts = flaky_setup(database_url, budget)
    inst = engine.start("inc", now=T0)
    drain(engine, q)
    assert attempts == [1, 2]
    (inc,) = engine.incidents()
    assert inc.instance_id == inst.id and inc.state == "open"
    assert engine.step_failed(inst.id, "work") == "RuntimeError: downstream is down"

    resolved = engine.retry_incident(inc.id, now=T0 + timedelta(hours=1))
    assert resolved.state == "resolved" and resolved.resolved_at == T0 + timedelta(hours=1)
    assert engine.incidents() == []
    assert engine.step_failed(inst.id, "work") is None
    drain(engine, q)
    # Fresh attempts: 1 fails (budget 3 -> 0), 2 succeeds.
    assert attempts == [1, 2, 1, 2]
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.COMPLETED and done.variables["ok"] is True
    (tok,) = [t for t in done.tokens if t.node_id == "work"]
    assert tok.id == inc.token_id  # still the same token
    assert engine.incidents(state="resolved")[0].id == inc.id


def test_a_step_that_fails_again_opens_a_new_incident(database_url: str) -> None:
    engine, q, _ = flaky_setup(database_url, {"n": 99})
    inst = engine.start("inc", now=T0)
    drain(engine, q)
    (first,) = engine.incidents(inst.id)
    engine.retry_incident(first.id)
    drain(engine, q)
    (second,) = engine.incidents(inst.id)
    assert second.id != first.id
    assert engine.step_failed(inst.id, "work") == "RuntimeError: downstream is down"


def test_bad_retries_change_nothing(database_url: str) -> None:
    engine, q, _ = flaky_setup(database_url, {"n": 99})
    inst = engine.start("inc", now=T0)
    drain(engine, q)
    (inc,) = engine.incidents(inst.id)

    before = table_dump(engine)
    with pytest.raises(NotFound, match="bpm incidents"):
        engine.retry_incident("no-such-incident")
    assert table_dump(engine) == before

    engine.suspend(inst.id)
    before = table_dump(engine)
    with pytest.raises(InvalidOperation, match="resume it"):
        engine.retry_incident(inc.id)
    assert table_dump(engine) == before
    engine.resume(inst.id)

    engine.retry_incident(inc.id)
    before = table_dump(engine)
    with pytest.raises(InvalidOperation, match="not open"):
        engine.retry_incident(inc.id)
    assert table_dump(engine) == before

    with pytest.raises(InvalidOperation, match="open, resolved or deleted"):
        engine.incidents(state="bogus")
    with pytest.raises(NotFound):
        engine.step_failed("no-such-instance", "work")


def test_terminating_the_instance_deletes_its_open_incident(database_url: str) -> None:
    engine, q, _ = flaky_setup(database_url, {"n": 99})
    inst = engine.start("inc", now=T0)
    drain(engine, q)
    (inc,) = engine.incidents(inst.id)
    engine.terminate(inst.id)
    assert engine.incidents(inst.id) == []
    assert engine.incidents(inst.id, state="deleted")[0].id == inc.id
    with pytest.raises(InvalidOperation):
        engine.retry_incident(inc.id)


def test_a_gateway_incident_is_retried_by_entering_the_gateway_again(engine: Engine) -> None:
    engine.deploy(
        Process("gw")
        .start("s")
        .exclusive("x")
        .end("big")
        .end("small")
        .sequence("s", "x")
        .flow("x", "big", condition="amount > 100")
        .flow("x", "small", condition="amount <= 100")
        .build()
    )
    inst = engine.start("gw", {"amount": "oops"}, now=T0)
    (inc,) = engine.incidents(inst.id)
    assert inc.type == "failedGateway"
    engine.retry_incident(inc.id)
    # Same variables: it fails again, with a new incident.
    (again,) = engine.incidents(inst.id)
    assert again.id != inc.id
    (tok,) = [t for t in engine.get_instance(inst.id).tokens if t.node_id == "x"]
    assert tok.state is TokenState.FAILED


# -- the CLI -------------------------------------------------------------------------------


def bpm(*args: str, db: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BPM_DATABASE_URL": db, "COLUMNS": "250"}
    return subprocess.run(
        [sys.executable, "-m", "bpm", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )


def test_cli_incidents_retry_and_timers_once(pg_database_url: str) -> None:
    engine, q, _ = flaky_setup(pg_database_url, {"n": 99})
    inst = engine.start("inc")
    drain(engine, q)
    (inc,) = engine.incidents(inst.id)

    listed = bpm("incidents", db=pg_database_url)
    assert listed.returncode == 0, listed.stderr
    assert inc.id in listed.stdout and "downstream is down" in listed.stdout

    bad = bpm("retry", "nope", db=pg_database_url)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "does not exist" in bad.stderr

    ok = bpm("retry", inc.id, db=pg_database_url)
    assert ok.returncode == 0, ok.stderr
    assert engine.incidents() == []
    assert [t.state for t in engine.get_instance(inst.id).tokens if t.node_id == "work"] == [
        TokenState.READY
    ]
    assert "no open incidents" in bpm("incidents", db=pg_database_url).stdout

    engine.deploy(
        Process("nap")
        .start("s")
        .timer("w", duration="PT0.5S")
        .end("e")
        .sequence("s", "w", "e")
        .build()
    )
    napping = engine.start("nap", now=datetime.now(UTC) - timedelta(seconds=5))
    once = bpm("timers", "--once", db=pg_database_url)
    assert once.returncode == 0, once.stderr
    assert "fired 1" in once.stdout
    assert engine.get_instance(napping.id).state is InstanceState.COMPLETED
    engine.close()


def test_cli_timers_loop_stops_cleanly_on_sigterm(pg_database_url: str) -> None:
    import signal

    from tests.support import eventually

    engine = Engine(pg_database_url)
    engine.deploy(
        Process("soon")
        .start("s")
        .timer("w", duration="PT1S")
        .end("e")
        .sequence("s", "w", "e")
        .build()
    )
    inst = engine.start("soon")
    env = {**os.environ, "BPM_DATABASE_URL": pg_database_url}
    proc = subprocess.Popen(
        [sys.executable, "-m", "bpm", "timers", "--max-sleep", "0.2"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        eventually(
            lambda: engine.get_instance(inst.id).state is InstanceState.COMPLETED,
            timeout=20,
            what="the loop to fire the timer",
        )
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "fired 1 timer(s)" in out
    engine.close()
