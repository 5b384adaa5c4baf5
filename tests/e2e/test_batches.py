"""Batches under faults: a worker killed in the middle of a batch of steps.

A worker claims several queued steps at once and finishes them in one transaction; when it
dies in between, every step of the batch is re-run after its lease, and none is applied
twice (DESIGN section 11: batched or not, the lease decides).
"""

from __future__ import annotations

import os
import signal

import pytest
import redis

from bpm import Engine, TokenState
from tests.e2e.checks import assert_trail_consistent, events, wait_ended
from tests.e2e.conftest import StartWorkers
from tests.e2e.handlers import pid_key
from tests.e2e.processes import order_model
from tests.support import eventually

pytestmark = pytest.mark.slow

QUEUED = 12
LAST = QUEUED - 1


def test_a_worker_killed_mid_batch_has_every_step_rerun_once(
    celery_engine: Engine, start_workers: StartWorkers, rds: redis.Redis, tag: str
) -> None:
    celery_engine.deploy(order_model())
    # Steps pile up before any worker runs; one of them blocks in its handler.
    ids = [
        celery_engine.start(
            "order",
            {"amount": 120, "tag": f"{tag}-{i}", "block_at": "validate" if i == LAST else ""},
        ).id
        for i in range(QUEUED)
    ]
    # The first message's step runs alone (the worker has not seen a handler's pace yet);
    # the steps after it go in batches, the blocked one (started last) among them.
    (worker,) = start_workers(1, BPM_DEFAULT_LEASE_SECONDS="120")
    blocker = f"{tag}-{LAST}"
    child = int(eventually(lambda: rds.get(pid_key(blocker, "validate")), what="the block"))

    def held() -> list[str]:
        return [
            t.id
            for i in ids
            for t in celery_engine.get_instance(i).tokens
            if t.state is TokenState.EXECUTING
        ]

    batch = held()
    assert len(batch) > 1, "the blocked step was claimed alone, not in a batch"
    owner = {
        t.lease_owner for i in ids for t in celery_engine.get_instance(i).tokens if t.id in batch
    }
    assert len(owner) == 1  # one worker holds the whole batch

    os.kill(child, signal.SIGKILL)
    worker.wait_for_log(r"signal 9")
    # Nothing of the batch was applied. The killed child's message comes back to its
    # sibling, which finds the whole batch held by a process of its host that no longer
    # exists and takes every step of it back at once (no waiting for the 120 s lease).
    for i in ids:
        done = wait_ended(celery_engine, i, timeout=60)
        history = assert_trail_consistent(celery_engine, done)
        for step_token in {e.token_id for e in events(history, "token_executing")}:
            assert len(events(history, "token_completed", step_token)) == 1
    for tok in batch:
        inst = next(
            i for i in ids if any(t.id == tok for t in celery_engine.get_instance(i).tokens)
        )
        history = celery_engine.history(inst)
        lost = events(history, "attempt_failed", tok)
        assert [e.payload["attempt"] for e in lost] == [1], lost
        assert "worker lost" in lost[0].payload["error"]
        (why,) = events(history, "lease_lost", tok)
        assert why.payload["cause"] == "holder_died" and why.payload["owner"] in owner
