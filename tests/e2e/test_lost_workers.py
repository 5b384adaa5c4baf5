"""Lost workers with real Celery processes: short leases, heartbeats, re-runs (issue 13).

A whole worker killed with ``kill -9`` (its message is not redelivered: the broker still
thinks it is being worked on) is recovered by its lease running out: beat's reclaimer
makes the attempt a failed one and another worker re-runs the step, within 40 s at the
default settings (a 30 s lease, a reclaim every 5 s: checked without processes below; the
real kill runs on a 3 s lease, which takes the same path). A handler that runs longer than
its lease keeps it by the heartbeat.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from datetime import timedelta

import pytest
import redis

from bpm import Engine, EngineConfig, TokenState
from bpm.contrib.celery.maintenance import intervals
from tests.e2e.checks import assert_trail_consistent, events, token_at, wait_ended
from tests.e2e.conftest import StartWorkers
from tests.e2e.handlers import pid_key, runs_key
from tests.e2e.processes import order_model
from tests.e2e.procs import CeleryProcess
from tests.support import eventually

pytestmark = pytest.mark.slow


def test_the_defaults_recover_a_lost_worker_within_40s(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the real kill below shortens: workers and beat read these when unset."""
    monkeypatch.delenv("BPM_DEFAULT_LEASE_SECONDS", raising=False)
    lease = EngineConfig.from_env().default_lease
    assert lease == timedelta(seconds=30)
    reclaim = intervals({})["reclaim"]  # beat's reclaimer thread
    assert reclaim == timedelta(seconds=5)
    # a lease that ran out is taken back by the next reclaim, then re-run at once
    assert lease + reclaim < timedelta(seconds=40)


SHORT_LEASE = 3  # seconds; the default is 30 (checked above)


def test_a_worker_killed_with_its_children_reruns_the_step_when_its_lease_runs_out(
    celery_engine: Engine,
    start_workers: StartWorkers,
    start_beat_process: Callable[..., CeleryProcess],
    rds: redis.Redis,
    tag: str,
) -> None:
    """A 3 s lease and a reclaim every half second: kill -9 the worker process group that
    runs the step; the other worker re-runs it once the lease ran out."""
    lease_env = {"BPM_DEFAULT_LEASE_SECONDS": str(SHORT_LEASE)}
    workers = start_workers(2, **lease_env)
    start_beat_process(BPM_BEAT_RECLAIM_SECONDS="0.5", **lease_env)
    celery_engine.deploy(order_model())
    inst = celery_engine.start("order", {"amount": 120, "tag": tag, "block_at": "validate"})
    child = int(eventually(lambda: rds.get(pid_key(tag, "validate")), what="handler to block"))
    (victim,) = [w for w in workers if os.getpgid(child) == w.pid]
    tok = token_at(celery_engine, inst.id, "validate")
    assert tok.state is TokenState.EXECUTING and tok.lease_expires_at is not None
    # The workers' lease: 3 s from the claim (a heartbeat may have moved it on since).
    lease = tok.lease_expires_at - tok.updated_at
    short = timedelta(seconds=SHORT_LEASE)
    assert short - timedelta(seconds=1) <= lease <= short * 1.5, lease

    os.killpg(victim.pid, signal.SIGKILL)
    killed_at = time.monotonic()

    done = wait_ended(celery_engine, inst.id, timeout=40)
    took = time.monotonic() - killed_at
    assert rds.get(runs_key(tag, "validate")) == "2"
    history = assert_trail_consistent(celery_engine, done)
    (lost,) = events(history, "lease_lost", tok.id)
    assert lost.payload["cause"] == "lease_expired"
    assert lost.payload["owner"].endswith(f":{child}")
    failed = events(history, "attempt_failed", tok.id)
    assert [e.payload["attempt"] for e in failed] == [1]
    assert "worker lost" in failed[0].payload["error"]
    runs = events(history, "token_executing", tok.id)
    assert [e.payload["attempt"] for e in runs] == [1, 2]
    assert celery_engine.get_instance(inst.id).variables["validate"] == 2
    print(f"re-ran {took:.1f}s after the kill")


def test_a_handler_longer_than_its_lease_keeps_it_by_the_heartbeat(
    celery_engine: Engine,
    start_workers: StartWorkers,
    start_beat_process: Callable[..., CeleryProcess],
    rds: redis.Redis,
    tag: str,
) -> None:
    """A 1 s lease, a 4 s handler, a reclaimer every half second: the heartbeat (every
    third of a second) keeps the lease, the handler runs once and nothing is lost."""
    lease = {"BPM_DEFAULT_LEASE_SECONDS": "1"}
    start_workers(2, **lease)
    beat = start_beat_process(level="debug", BPM_BEAT_RECLAIM_SECONDS="0.5", **lease)
    celery_engine.deploy(order_model())
    inst = celery_engine.start(
        "order", {"amount": 120, "tag": tag, "slow_at": "validate", "slow_seconds": 4}
    )
    done = wait_ended(celery_engine, inst.id, timeout=30)
    assert rds.get(runs_key(tag, "validate")) == "1"
    history = assert_trail_consistent(celery_engine, done)
    assert not events(history, "lease_lost")
    assert not events(history, "attempt_failed")
    # The reclaimer (beat's upkeep thread) did run meanwhile: every chance to take it.
    reclaims = beat.log().count("reclaim: nothing to do")
    assert reclaims >= 4, reclaims
