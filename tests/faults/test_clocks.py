"""Hosts whose clocks are off: two beats (one six minutes fast) and workers six minutes
slow and fast. Leases and timers are judged on the database's clock, so nothing fires
early or twice and no live lease is taken.

Each skewed process gets :mod:`tests.faults.skewed_clock` on its ``PYTHONPATH``: its
``time.time()`` and ``datetime.now()`` are shifted for Celery and the engine alike.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
import redis

from bpm import Engine
from bpm.builder import Process
from tests.e2e.handlers import runs_key
from tests.faults.checks import audit, trails, wait_completed
from tests.faults.conftest import Start, StartMany, together

pytestmark = pytest.mark.slow

SKEWED = str(Path(__file__).parent / "skewed_clock")
SIX_MINUTES = 360


def skew(seconds: int) -> dict[str, str]:
    return {"PYTHONPATH": SKEWED, "FAULTS_CLOCK_SHIFT_SECONDS": str(seconds)}


def test_skewed_clocks_fire_nothing_early_or_twice_and_take_no_live_lease(
    fault_engine: Engine, workers: StartMany, beats: Start, ledger: redis.Redis, tag: str
) -> None:
    # A 1 s lease and a 2 s handler: a lease judged on a host clock six minutes off would
    # be expired (slow writer) or taken (fast reclaimer) at once; the heartbeat keeps it.
    short = {"BPM_DEFAULT_LEASE_SECONDS": "1", "BPM_BEAT_TIMER_SECONDS": "0.2"}
    fault_engine.deploy(
        Process("skew").start("s").timer("wait", duration="PT3S")
        .service_task("long", handler="heartbeat").end("end")
        .sequence("s", "wait", "long", "end").build()
    )  # fmt: skip
    together(
        lambda: beats(**short),
        lambda: beats(**short, **skew(+SIX_MINUTES)),
        lambda: workers(1, **short, **skew(-SIX_MINUTES)),
        lambda: workers(1, **short, **skew(+SIX_MINUTES)),
    )
    variables = {"tag": tag, "run_seconds": 2, "beat_every": 0.2}
    ids = [fault_engine.start("skew", variables).id for _ in range(4)]

    wait_completed(fault_engine, len(ids), timeout=60)
    found = audit(fault_engine, ids, steps=("wait", "long"))
    found.assert_clean()
    assert found.lost_leases == [] and found.reruns == []
    assert ledger.get(runs_key(tag, "long")) == str(len(ids))
    for iid, trail in trails(fault_engine, ids).items():
        started = next(e.at for e in trail if e.type == "instance_started")
        # The timer's token went Waiting -> Ready once, no sooner than 3 s (DB clock).
        fired = [e for e in trail if e.node_id == "wait" and e.type == "token_ready"][1:]
        assert len(fired) == 1, (iid, fired)
        assert fired[0].at - started >= timedelta(seconds=3), (iid, started, fired[0].at)
        assert fired[0].at - started < timedelta(seconds=60), (iid, started, fired[0].at)
