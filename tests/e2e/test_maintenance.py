"""Beat's upkeep is not delayed by the workers' queue (issue 18 item 3).

A worker process dies holding a step while 100 slow steps wait in the queue for the only
worker left: the dead worker's lease must still be taken back soon after it runs out. When
the reclaimer was a Celery task on that queue it waited behind the backlog (and beat's
``expires`` dropped its ticks): 182 s after the lease ran out, with 300 instances queued.
Two beats run the upkeep; the step is taken back once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import redis
from sqlalchemy import func, select

from bpm import Engine, TokenState
from bpm.store.tables import token
from tests.e2e.checks import events, token_at
from tests.e2e.conftest import StartWorkers
from tests.e2e.handlers import pid_key
from tests.e2e.processes import order_model
from tests.e2e.procs import ROOT, CeleryProcess
from tests.support import eventually

pytestmark = pytest.mark.slow

BACKLOG = 100
LEASE_SECONDS = 2
# How soon after its lease ran out the dead worker's step must be taken back: the
# reclaimer runs every second; the rest is slack for a loaded CI machine.
BOUND = timedelta(seconds=12)

DEAD_WORKER = textwrap.dedent(
    """
    import os, sys
    from bpm import Engine
    from bpm.dispatch import NullDispatcher
    import tests.e2e.handlers  # the step handlers (the first one blocks)

    Engine(os.environ["BPM_DATABASE_URL"], dispatcher=NullDispatcher()).run_token(sys.argv[1])
    """
)


def ready_steps(engine: Engine) -> int:
    with engine.db.connect() as conn:
        query = select(func.count()).select_from(token).where(token.c.state == "ready")
        return int(conn.execute(query).scalar_one())


@pytest.fixture
def dead_worker(
    worker_env: dict[str, str], tmp_path: Path
) -> Iterator[Callable[[str], subprocess.Popen[bytes]]]:
    """``dead_worker(token_id)``: a process that claims the step, to be killed mid-handler."""
    started: list[subprocess.Popen[bytes]] = []

    def start(token_id: str) -> subprocess.Popen[bytes]:
        env = {
            **os.environ,
            **worker_env,
            "BPM_DEFAULT_LEASE_SECONDS": str(LEASE_SECONDS),
            "PYTHONPATH": str(ROOT),
        }
        log = open(tmp_path / "dead-worker.log", "ab")  # noqa: SIM115 - closed below
        proc = subprocess.Popen(
            [sys.executable, "-c", DEAD_WORKER, token_id],
            env=env,
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def test_a_dead_workers_lease_is_taken_back_on_time_behind_a_backlog(
    silent_engine: Engine,
    celery_engine: Engine,
    start_workers: StartWorkers,
    start_beat_process: Callable[..., CeleryProcess],
    dead_worker: Callable[[str], subprocess.Popen[bytes]],
    rds: redis.Redis,
    tag: str,
) -> None:
    silent_engine.deploy(order_model())
    # The victim's step is claimed by a process of its own, and published to nobody: only
    # the reclaimer can bring it back (no message will be redelivered for it).
    victim = silent_engine.start("order", {"amount": 120, "tag": tag, "block_at": "validate"})
    tok = token_at(silent_engine, victim.id, "validate")
    holder = dead_worker(tok.id)
    eventually(lambda: rds.get(pid_key(tag, "validate")), what="the handler to block")
    eventually(
        lambda: token_at(silent_engine, victim.id, "validate").state is TokenState.EXECUTING,
        what="the claim",
    )

    # The backlog: 100 orders whose first step takes half a second, for one worker
    # process with one child: 50 s of queued work, far longer than the bound.
    slow = {"amount": 5, "tag": f"{tag}-backlog", "slow_at": "validate", "slow_seconds": 0.5}
    for _ in range(BACKLOG):
        celery_engine.start("order", slow)
    start_workers(1)
    fast = {"BPM_BEAT_RECLAIM_SECONDS": "1", "BPM_DEFAULT_LEASE_SECONDS": str(LEASE_SECONDS)}
    beats = [start_beat_process(**fast), start_beat_process(**fast)]

    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(10)
    expired_at = token_at(silent_engine, victim.id, "validate").lease_expires_at
    assert expired_at is not None

    def lease_lost() -> list[object]:
        return events(silent_engine.history(victim.id), "lease_lost", tok.id)

    eventually(lease_lost, timeout=(BOUND + timedelta(seconds=LEASE_SECONDS)).total_seconds())
    (lost,) = events(silent_engine.history(victim.id), "lease_lost", tok.id)
    late = lost.at - expired_at
    assert late < BOUND, f"taken back {late} after the lease ran out"
    assert lost.payload["cause"] == "lease_expired" and lost.payload["attempt"] == 1
    # Taken back once though two beats reclaim, and the backlog is still there.
    history = silent_engine.history(victim.id)
    assert [e.payload["attempt"] for e in events(history, "attempt_failed", tok.id)] == [1]
    back = token_at(silent_engine, victim.id, "validate")
    assert back.state in (TokenState.READY, TokenState.EXECUTING)
    assert ready_steps(celery_engine) >= BACKLOG // 2, "the backlog drained first"
    for beat in beats:
        assert beat.proc.poll() is None, beat.log()[-2000:]
    print(f"taken back {late.total_seconds():.1f}s after the lease ran out")
