"""Real Celery beat and worker processes fire persisted timers: across restarts, with two
beats at once, and with two ``bpm timers`` loops at once. Each timer fires exactly once."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from bpm import Engine, InstanceState
from bpm.builder import Process
from bpm.engine.core import utcnow
from bpm.model.process import ProcessModel
from tests.e2e.conftest import StartWorkers
from tests.e2e.procs import ROOT, CeleryProcess
from tests.e2e_timers.handlers import runs_key
from tests.support import events_per_instance, eventually

pytestmark = pytest.mark.slow

HANDLERS = {"BPM_HANDLERS": "tests.e2e_timers.handlers"}


def nap_model(with_retry: bool = True) -> ProcessModel:
    p = Process("nap").start("s").timer("wait", duration="${wait_for}")
    if with_retry:
        p = (
            p.service_task("after", handler="after-timer")
            .service_task("flaky", handler="fails-once")
            .end("e")
            .sequence("s", "wait", "after", "flaky", "e")
        )
    else:
        p = p.end("e").sequence("s", "wait", "e")
    return p.build()


def fired_per_instance(engine: Engine) -> Counter[str]:
    return events_per_instance(engine, "timer_fired")


def kill_all(procs: list[CeleryProcess]) -> None:
    """SIGKILL, no goodbye: nothing a process held in memory survives."""
    for proc in procs:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.stop()


def all_completed(engine: Engine, ids: list[str]) -> bool:
    return all(engine.get_instance(i).state is InstanceState.COMPLETED for i in ids)


def test_timers_and_retry_backoffs_survive_killing_every_worker_and_beat(
    celery_engine: Engine,
    start_workers: StartWorkers,
    start_beat_process: Callable[..., CeleryProcess],
    rds: redis.Redis,
    tag: str,
) -> None:
    env = {**HANDLERS, "BPM_BEAT_TIMER_SECONDS": "0.2"}
    procs = [*start_workers(1, **env), start_beat_process(**env)]
    celery_engine.deploy(nap_model())
    ids = [celery_engine.start("nap", {"wait_for": 3, "tag": tag}).id for _ in range(10)]
    kill_all(procs)  # long before the timers are due

    eventually(
        lambda: (w := celery_engine.next_wakeup()) is not None and w <= utcnow(),
        timeout=20,
        what="the timers to fall due while nothing runs",
    )
    assert len(celery_engine.timers()) == 10 and not fired_per_instance(celery_engine)

    procs = [*start_workers(1, **env), start_beat_process(**env)]
    # Each instance: the timer fires, "after" runs, "flaky" fails once -> retry_backoff.
    eventually(
        lambda: len([t for t in celery_engine.timers() if t.kind == "retry_backoff"]) == 10,
        timeout=60,
        what="every instance to wait on a retry backoff",
    )
    kill_all(procs)
    eventually(
        lambda: (w := celery_engine.next_wakeup()) is not None and w <= utcnow(),
        timeout=20,
        what="the backoffs to fall due while nothing runs",
    )

    start_workers(1, **env)
    start_beat_process(**env)
    eventually(
        lambda: all_completed(celery_engine, ids),
        timeout=60,
        what="every instance to complete after the restart",
    )
    assert set(fired_per_instance(celery_engine).values()) == {2}  # the delay + the backoff
    for i in ids:
        assert rds.get(runs_key(tag, i, "after")) == "1"
        assert rds.get(runs_key(tag, i, "flaky")) == "2"
        assert celery_engine.get_instance(i).variables["recovered_at_attempt"] == 2
    assert celery_engine.timers() == []


def test_two_beats_fire_each_timer_once(
    celery_engine: Engine,
    start_workers: StartWorkers,
    start_beat_process: Callable[..., CeleryProcess],
    rds: redis.Redis,
    tag: str,
) -> None:
    env = {**HANDLERS, "BPM_BEAT_TIMER_SECONDS": "0.1"}
    start_workers(2, **env)
    beats = [start_beat_process(**env), start_beat_process(**env)]
    celery_engine.deploy(nap_model(with_retry=False))
    ids = [
        celery_engine.start("nap", {"wait_for": 1 + (i % 20) / 10, "tag": tag}).id
        for i in range(100)
    ]
    eventually(lambda: all_completed(celery_engine, ids), timeout=60, what="every timer to fire")
    counts = fired_per_instance(celery_engine)
    assert set(counts) == set(ids) and set(counts.values()) == {1}
    for beat in beats:  # both beats really were firing timers
        beat.wait_for_log(r"timer waiter started")
    assert any("fired" in b.log() for b in beats)


def test_two_timer_loops_fire_each_timer_once(pg_database_url: str, tmp_path: Path) -> None:
    engine = Engine(pg_database_url)
    engine.deploy(nap_model(with_retry=False))
    ids = [engine.start("nap", {"wait_for": (1 + i % 20) / 10}).id for i in range(100)]
    env = {**os.environ, "BPM_DATABASE_URL": pg_database_url, "PYTHONPATH": str(ROOT)}
    loops = []
    for i in range(2):
        with open(tmp_path / f"loop{i}.log", "w") as log:  # the loop has its own descriptor
            loops.append(
                subprocess.Popen(
                    [sys.executable, "-m", "bpm", "timers", "--max-sleep", "0.05"],
                    cwd=ROOT,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
    try:
        eventually(lambda: all_completed(engine, ids), timeout=60, what="every timer to fire")
    finally:
        for proc in loops:
            proc.send_signal(signal.SIGTERM)
        for proc in loops:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    assert [p.returncode for p in loops] == [0, 0]
    counts = fired_per_instance(engine)
    assert set(counts) == set(ids) and set(counts.values()) == {1}
    totals = []
    for i in range(2):
        text = (tmp_path / f"loop{i}.log").read_text()
        totals.append(int(text.rsplit("fired ", 1)[1].split()[0]))
    assert sum(totals) == 100
    engine.close()
