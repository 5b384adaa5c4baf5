"""A real Celery worker killed (SIGKILL) in the middle of compensation (issue 11 item 8).

The saga of ``reserve -> charge -> ship``: ship fails, so refund (charge's handler) and
then release (reserve's) run. The worker running refund dies after refund applied its
effect. The lease expires, the reclaimer counts the attempt as lost, the same token runs
again with the same idempotency key, and compensation goes on: every effect is applied
once, the handlers run newest first, the instance ends ``compensated``.
"""

from __future__ import annotations

import os
import signal
from datetime import timedelta

import pytest
import redis

from bpm import Engine, InstanceState, RetryPolicy, TokenState
from bpm.builder import Process
from bpm.model.process import ProcessModel
from tests.e2e.checks import assert_trail_consistent, events, token_at
from tests.e2e.compensation_handlers import applied_key, effects_key
from tests.e2e.conftest import StartWorkers
from tests.e2e.handlers import pid_key, runs_key
from tests.support import eventually

pytestmark = pytest.mark.slow


def saga_model() -> ProcessModel:
    return (
        Process("saga")
        .start("s")
        .service_task("reserve", handler="saga-reserve", compensate_with="saga-release")
        .service_task("charge", handler="saga-charge", compensate_with="saga-refund")
        .service_task("ship", handler="saga-ship", retry=RetryPolicy.none().compensate_on_failure())
        .end("e")
        .sequence("s", "reserve", "charge", "ship", "e")
        .build()
    )


def test_a_worker_killed_mid_compensation_resumes_and_applies_no_effect_twice(
    celery_engine: Engine, start_workers: StartWorkers, rds: redis.Redis, tag: str
) -> None:
    (worker,) = start_workers(
        1, BPM_HANDLERS="tests.e2e.compensation_handlers", BPM_DEFAULT_LEASE_SECONDS="120"
    )
    celery_engine.deploy(saga_model())
    inst = celery_engine.start("saga", {"tag": tag, "block_at": "charge.compensate"})
    child = int(eventually(lambda: rds.get(pid_key(tag, "charge.compensate")), what="refund"))
    assert celery_engine.get_instance(inst.id).state is InstanceState.COMPENSATING
    refund = token_at(celery_engine, inst.id, "charge.compensate")
    assert refund.state is TokenState.EXECUTING and refund.attempt == 1
    assert rds.hgetall(applied_key(tag)) == {"charge.compensate": "1"}  # applied, not finished

    os.kill(child, signal.SIGKILL)
    worker.wait_for_log(r"signal 9")

    # The lease is still held by the dead attempt; once it expired, the reclaimer counts
    # it as lost and the same token runs again (same idempotency key).
    assert refund.lease_expires_at is not None
    expired = refund.lease_expires_at + timedelta(seconds=1)
    assert celery_engine.reclaim_expired_leases(now=expired) == 1
    done = eventually(
        lambda: (i := celery_engine.get_instance(inst.id)).ended and i,
        timeout=30,
        what="the instance to end",
    )

    assert done.state is InstanceState.COMPENSATED
    assert rds.get(runs_key(tag, "charge.compensate")) == "2"  # the handler ran twice ...
    assert rds.hgetall(applied_key(tag)) == {  # ... its effect was applied once
        "charge.compensate": "1",
        "reserve.compensate": "1",
    }
    assert len(rds.hgetall(effects_key(tag))) == 2
    assert rds.get(runs_key(tag, "reserve.compensate")) == "1"
    assert [rds.get(runs_key(tag, s)) for s in ("reserve", "charge", "ship")] == ["1"] * 3
    history = assert_trail_consistent(celery_engine, done)
    lost = events(history, "attempt_failed", refund.id)
    assert [e.payload["attempt"] for e in lost] == [1] and "worker lost" in lost[0].payload["error"]
    assert len(events(history, "token_completed", refund.id)) == 1
    undone = [e.node_id for e in events(history, "compensation_compensated")]
    assert undone == ["charge", "reserve"]  # newest first, each once
