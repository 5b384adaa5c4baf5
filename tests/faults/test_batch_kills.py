"""A batch survives its workers being killed (issue 22, item 5 and Must hold): real
Celery worker processes apply a batch in chunks, two of them are killed with ``kill -9``
in the middle of a chunk, and every item is still applied exactly once (the chunk's
lease decides; beat publishes again the chunks of the dead)."""

from __future__ import annotations

import os
from collections import Counter

import redis

from bpm import Engine
from bpm.builder import Process
from bpm.store.batches import RUNNING
from tests.e2e.procs import CeleryProcess
from tests.faults.batch_items import SLOW_MARK, tries_key
from tests.faults.conftest import FAST, Start, StartMany, kill
from tests.support import eventually

ENV = {
    "BPM_HANDLERS": f"{FAST['BPM_HANDLERS']},tests.faults.batch_items",
    "BPM_BATCH_LEASE_SECONDS": "3",
    "BPM_BATCH_REDISPATCH_SECONDS": "1",
    "BPM_BEAT_BATCH_SECONDS": "0.5",
}
# The Must-hold size is 10,000 (BPM_TEST_BATCH_INSTANCES=10000 BPM_TEST_BATCH_CHUNK=50); CI
# runs a smaller batch with the same kills.
INSTANCES = int(os.environ.get("BPM_TEST_BATCH_INSTANCES", "400"))
CHUNK = int(os.environ.get("BPM_TEST_BATCH_CHUNK", "20"))


def _parent(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:  # the parent pid: 2nd field after the name
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except FileNotFoundError:
        return 0


def _worker_in_chunk(
    engine: Engine, batch_id: str, pool: list[CeleryProcess]
) -> CeleryProcess | None:
    """A live worker of ``pool`` whose child is in the middle of a chunk of the batch (a
    killed worker's chunk stays running until its lease expires: skipped)."""
    started = {p.pid: p for p in pool}
    for chunk in engine.batches.chunks(batch_id):
        if chunk.state != RUNNING or not chunk.lease_owner:
            continue
        at = int(chunk.lease_owner.rsplit(":", 1)[1])
        while at > 1:
            if at in started:
                return started[at]
            at = _parent(at)
    return None


def test_a_batch_completes_once_with_two_workers_killed_mid_chunk(
    fault_engine: Engine, workers: StartMany, beats: Start, ledger: redis.Redis, tag: str
) -> None:
    fault_engine.deploy(
        Process("wait").start("s").user_task("t").end("e").sequence("s", "t", "e").build()
    )
    ids = [fault_engine.start("wait").id for _ in range(INSTANCES)]
    pool = workers(2, **ENV)
    beats(**ENV)
    batch = fault_engine.batches.create(
        SLOW_MARK, ids, {"tag": tag, "pause": 0.6 / CHUNK}, chunk_size=CHUNK, by="ops"
    )
    killed = 0
    for _ in range(2):
        victim = eventually(
            lambda: _worker_in_chunk(fault_engine, batch.id, pool), timeout=60,
            what="a worker in the middle of a chunk",
        )  # fmt: skip
        floor = int(ledger.get(tries_key(tag)) or 0) + 3
        eventually(  # a few items into the chunk (their work is not committed yet)
            lambda floor=floor: int(ledger.get(tries_key(tag)) or 0) >= floor, timeout=30,
            what="items applied by the victim",
        )  # fmt: skip
        kill(victim)
        killed += 1
        pool.remove(victim)
        pool.extend(workers(1, **ENV))

    done = eventually(
        lambda: (b := fault_engine.batches.get(batch.id)).ended_at is not None and b,
        timeout=180 + INSTANCES / 20, interval=0.5, what="the batch to complete",
    )  # fmt: skip
    assert killed == 2
    assert (done.state, done.completed_items, done.failed_items) == ("completed", INSTANCES, 0)
    assert done.completed_jobs == done.total_jobs == INSTANCES // CHUNK
    # every instance marked once: one variables_updated event each, by the batch
    for iid in ids:
        inst = fault_engine.get_instance(iid)
        assert inst.variables["marked"] == batch.id
        updates = [e for e in fault_engine.history(iid) if e.type == "variables_updated"]
        assert len(updates) == 1, (iid, updates)
    # the dead workers' chunks ran again: more applications were started than committed
    attempts = Counter(c.attempts for c in fault_engine.batches.chunks(batch.id))
    assert sum(n for a, n in attempts.items() if a > 1) >= 2, attempts
    assert int(ledger.get(tries_key(tag)) or 0) > INSTANCES
