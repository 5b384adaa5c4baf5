"""Every way users start and steer instances publishes the new steps right after its
commit: ``bpm start``, the REST API (start and user-task complete), ``bpm timers``. No beat
runs in these tests, so nothing but those publishes can hand a step to the worker."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from bpm import Engine
from bpm.builder import Process
from bpm.engine.core import utcnow
from tests.api.conftest import ApiServer
from tests.e2e.checks import wait_ended
from tests.e2e.conftest import BROKER_URL, StartWorkers
from tests.e2e.processes import order_model

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
# Far below any sweeper interval (beat's default is 5 s, the must-hold figure uses 60 s).
WELL_UNDER_THE_SWEEPER = 3.0


def publishing_env(db: str, queue: str) -> dict[str, str]:
    return {"BPM_DATABASE_URL": db, "BPM_BROKER_URL": BROKER_URL, "BPM_QUEUE": queue}


def bpm(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bpm", *args],
        env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def assert_ran_promptly(engine: Engine, instance_id: str) -> None:
    done = wait_ended(engine, instance_id, timeout=15)
    assert done.ended_at is not None
    took = (done.ended_at - done.created_at).total_seconds()
    assert took < WELL_UNDER_THE_SWEEPER, took


def test_bpm_start_publishes_the_first_step(
    silent_engine: Engine, start_workers: StartWorkers, pg_database_url: str, queue: str, tag: str
) -> None:
    start_workers(1)
    silent_engine.deploy(order_model())
    env = publishing_env(pg_database_url, queue)
    res = bpm("start", "order", "--var", "amount=120", "--var", f"tag={tag}", env=env)
    assert res.returncode == 0, res.stderr
    assert "no broker configured" not in res.stderr
    assert_ran_promptly(silent_engine, res.stdout.split()[1])


def test_without_a_broker_bpm_start_says_nothing_publishes(
    silent_engine: Engine, pg_database_url: str
) -> None:
    silent_engine.deploy(order_model())
    res = bpm("start", "order", "--var", "amount=5", env={"BPM_DATABASE_URL": pg_database_url})
    assert res.returncode == 0, res.stderr
    assert res.stderr.count("no broker configured (set BPM_BROKER_URL)") == 1


def test_the_rest_api_publishes_starts_and_user_task_completes(
    silent_engine: Engine,
    start_workers: StartWorkers,
    pg_database_url: str,
    queue: str,
    tag: str,
    tmp_path: Path,
) -> None:
    start_workers(1)
    silent_engine.deploy(order_model())
    review = (
        Process("review")
        .start("s")
        .user_task("approve")
        .service_task("validate", handler="validate")
        .end("e")
        .sequence("s", "approve", "validate", "e")
    ).build()
    silent_engine.deploy(review)
    server = ApiServer(
        pg_database_url, log=tmp_path / "api.log", env=publishing_env(pg_database_url, queue)
    ).start()
    try:
        with httpx.Client(base_url=server.base, timeout=10) as http:
            started = http.post(
                "/process-definition/key/order/start",
                json={"variables": {"amount": {"value": 120}, "tag": {"value": tag}}},
            )
            assert started.status_code == 200, started.text
            assert_ran_promptly(silent_engine, started.json()["id"])

            waiting = http.post("/process-definition/key/review/start", json={}).json()["id"]
            (task,) = silent_engine.user_tasks(waiting)
            done = http.post(f"/task/{task.id}/complete", json={"variables": {}})
            assert done.status_code == 204, done.text
            inst = wait_ended(silent_engine, waiting, timeout=15)
            assert inst.ended_at is not None
    finally:
        server.kill()


def test_bpm_timers_publishes_the_steps_its_timers_make_ready(
    silent_engine: Engine, start_workers: StartWorkers, pg_database_url: str, queue: str
) -> None:
    start_workers(1)
    due = (
        Process("due")
        .start("s")
        .timer("wait", duration="PT1M")
        .service_task("validate", handler="validate")
        .end("e")
        .sequence("s", "wait", "validate", "e")
    ).build()
    silent_engine.deploy(due)
    # Started an hour ago (time is injected): its one-minute timer is due now.
    inst = silent_engine.start("due", now=utcnow() - timedelta(hours=1))
    assert len(silent_engine.timers(inst.id)) == 1
    res = bpm("timers", "--once", env=publishing_env(pg_database_url, queue))
    assert res.returncode == 0 and "fired 1" in res.stdout, (res.stdout, res.stderr)
    wait_ended(silent_engine, inst.id, timeout=15)
