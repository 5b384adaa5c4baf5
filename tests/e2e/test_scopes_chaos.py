"""kill -9 chaos on a parallel multi-instance sub-process around a service task (issue 10).

100 instances of ``batch``, each running its service task once per item inside a parallel
multi-instance sub-process, on three real Celery workers and beat. While they run, the
test kills (SIGKILL) processes in the middle of a handler, and now and then a whole
worker, starting a fresh one. Whatever happened, every instance completes, every inner
step's result is applied exactly once (one completion, one write, one slot of the
collected outputs), and no step was given up on.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections import Counter
from collections.abc import Callable

import pytest
import redis

from bpm import Engine, InstanceState
from bpm.builder import Process
from bpm.model.process import ProcessModel
from tests.e2e.conftest import StartWorkers
from tests.e2e.procs import CeleryProcess
from tests.e2e.scope_handlers import CHAOS_STEP, running_key, runs_key
from tests.support import eventually

pytestmark = pytest.mark.slow

INSTANCES = 100
ITEMS = [1, 2, 3, 4]
CHAOS_ENV = {
    "BPM_HANDLERS": "tests.e2e.scope_handlers",
    "BPM_DEFAULT_LEASE_SECONDS": "3",
    "BPM_REDISPATCH_AFTER_SECONDS": "2",
    "BPM_BEAT_REDISPATCH_SECONDS": "1",
    "BPM_BEAT_RECLAIM_SECONDS": "0.5",
}


def batch_model() -> ProcessModel:
    return (
        Process("batch")
        .start("s")
        .sub_process(
            "per_item",
            lambda b: (
                b.start("ps")
                .service_task("step", handler=CHAOS_STEP)
                .end("pe")
                .sequence("ps", "step", "pe")
            ),
            for_each="items",
            as_="item",
            collect="results",
            output="r",
        )
        .end("e")
        .sequence("s", "per_item", "e")
        .build()
    )


def kill_group(proc: CeleryProcess) -> None:
    """kill -9 a whole worker: its main process and its pool child, no goodbye."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    proc.proc.wait(timeout=10)


def test_every_inner_step_is_applied_once_whatever_is_killed(
    celery_engine: Engine,
    start_workers: StartWorkers,
    start_beat_process: Callable[..., CeleryProcess],
    rds: redis.Redis,
    tag: str,
) -> None:
    # The instances first, the workers after: on a busy machine starting 100 instances can
    # take longer than running them, and the chaos below must find work still to do.
    celery_engine.deploy(batch_model())
    # 400 handler runs of 0.15 s on three one-child workers: about 20 s of work, some thirty
    # rounds of chaos (at 0.05 s the work could end before the second worker kill)
    ids = [
        celery_engine.start("batch", {"items": ITEMS, "tag": tag, "pause": 0.15}).id
        for _ in range(INSTANCES)
    ]
    workers = start_workers(3, **CHAOS_ENV)
    start_beat_process(**CHAOS_ENV)
    rng = random.Random(10)
    kills = {"handler": 0, "worker": 0}
    deadline = time.monotonic() + 240

    def completed() -> int:
        return len(celery_engine.instances(state="completed", definition_key="batch"))

    round_no = 0
    while completed() < INSTANCES and time.monotonic() < deadline:
        time.sleep(0.7)
        round_no += 1
        if round_no % 6 == 0 and len(workers) > 1:  # now and then a whole worker goes
            victim = workers.pop(rng.randrange(len(workers)))
            kill_group(victim)
            kills["worker"] += 1
            workers += start_workers(1, **CHAOS_ENV)
            continue
        running = sorted(rds.smembers(running_key(tag)))
        if running:
            pid = int(rng.choice(running))
            try:
                os.kill(pid, signal.SIGKILL)  # a pool child in the middle of a handler
                kills["handler"] += 1
            except ProcessLookupError:
                pass
            rds.srem(running_key(tag), str(pid))

    eventually(lambda: completed() == INSTANCES, timeout=120, what="every instance to complete")
    assert kills["handler"] >= 5 and kills["worker"] >= 2, kills

    runs = {k: int(v) for k, v in rds.hgetall(runs_key(tag)).items()}
    for instance_id in ids:
        inst = celery_engine.get_instance(instance_id)
        assert inst.state is InstanceState.COMPLETED
        assert inst.variables["results"] == [i * 2 for i in ITEMS]  # one slot each, in order
        history = celery_engine.history(instance_id)
        completions = Counter(
            e.token_id for e in history if e.type == "token_completed" and e.node_id == "step"
        )
        assert len(completions) == len(ITEMS) and set(completions.values()) == {1}
        writes = [e for e in history if e.type == "variables_updated" and e.node_id == "step"]
        assert len(writes) == len(ITEMS)  # each result applied once
        for item in ITEMS:
            assert runs.get(f"{instance_id}:{item}", 0) >= 1
        assert not [e for e in history if e.type == "step_failed"]
    assert celery_engine.incidents() == []
    # Killed handlers ran again: more runs than steps, yet one application each.
    assert sum(runs.values()) >= INSTANCES * len(ITEMS)
    print(f"kills: {kills}, handler runs: {sum(runs.values())} for {INSTANCES * len(ITEMS)} steps")
