"""Conditional events fire exactly once per variable change under concurrent changes
(PostgreSQL): eight branches' results written at the same moment, from threads of one
process and from two separate (spawned) worker processes.

Each branch's result changes ``x`` (to a value > 5): the non-interrupting boundary on the
user task ``work`` fires once per change (eight times), the intermediate catch ``until``
once (the first change passes it). The instance lock serializes the finishes; each
evaluates the change it wrote, before it is written.
"""

from __future__ import annotations

import multiprocessing as mp
import threading
from collections.abc import Iterator
from multiprocessing.synchronize import Barrier as MpBarrier
from typing import Any

import pytest

from bpm import Engine
from bpm.builder import Process
from bpm.engine.execution import Claimed
from bpm.model.process import ProcessModel
from bpm.runtime.states import TokenState
from tests.test_join_race import claim_and_finish

BRANCHES = 8
THREAD_ROUNDS = 5
PROCESS_ROUNDS = 3
WORKERS = 2


def race_model() -> ProcessModel:
    p = Process("cond_race").start("s").parallel("fork").parallel("join").end("e_join")
    for i in range(BRANCHES):
        p = p.service_task(f"b{i}", handler="race-branch").sequence("fork", f"b{i}", "join")
    p = p.user_task("work").end("e_work").sequence("fork", "work", "e_work")
    p = p.boundary_condition("nb", "work", "x > 5", interrupting=False)
    p = p.user_task("fixed").end("e_fixed").sequence("nb", "fixed", "e_fixed")
    p = p.wait_condition("until", "x > 5").user_task("after").end("e_after")
    p = p.sequence("s", "fork").sequence("join", "e_join")
    return p.sequence("fork", "until", "after", "e_after").build()


@pytest.fixture
def race_engine(pg_database_url: str) -> Iterator[Engine]:
    eng = Engine(pg_database_url)  # NullDispatcher: nothing runs unless the test says so
    eng.deploy(race_model())
    yield eng
    eng.close()


def branch_tokens(engine: Engine, instance_id: str) -> list[str]:
    toks = [t for t in engine.get_instance(instance_id).tokens if t.node_id.startswith("b")]
    assert len(toks) == BRANCHES and all(t.state is TokenState.READY for t in toks)
    return [t.id for t in toks]


def result(step: Claimed, worker: str) -> dict[str, Any]:
    return {"x": 6 + int(step.token.node_id[1:]), step.token.node_id: worker}


def assert_once_per_change(engine: Engine, instance_id: str) -> None:
    history = engine.history(instance_id)
    fired = [e.node_id for e in history if e.type == "condition_satisfied"]
    assert fired.count("nb") == BRANCHES and fired.count("until") == 1, fired
    tasks = sorted(t.node_id for t in engine.user_tasks(instance_id))
    assert tasks == ["after", *["fixed"] * BRANCHES, "work"]
    inst = engine.get_instance(instance_id)
    assert all(f"b{i}" in inst.variables for i in range(BRANCHES))  # no lost update


def _thread_round(engine: Engine) -> None:
    inst = engine.start("cond_race", {"x": 0})
    tokens = branch_tokens(engine, inst.id)
    barrier = threading.Barrier(BRANCHES)
    applied: list[bool] = []
    errors: list[BaseException] = []

    def run(token_id: str, worker: str) -> None:
        try:
            applied.append(claim_and_finish(engine.core, token_id, worker, barrier, result))
        except BaseException as exc:  # surfaced below: a thread cannot fail the test
            errors.append(exc)
            barrier.abort()

    threads = [
        threading.Thread(target=run, args=(tid, f"thread-{i}")) for i, tid in enumerate(tokens)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    assert applied == [True] * BRANCHES
    assert_once_per_change(engine, inst.id)


def test_once_per_change_when_branches_finish_from_threads(race_engine: Engine) -> None:
    for _ in range(THREAD_ROUNDS):
        _thread_round(race_engine)


def _worker_main(url: str, worker: str, jobs: Any, results: Any, barrier: MpBarrier) -> None:
    """A separate worker process: its own engine and connections."""
    eng = Engine(url)
    try:
        while (token_id := jobs.get()) is not None:
            try:
                done = claim_and_finish(eng.core, token_id, worker, barrier, result)
                results.put((worker, done))
            except BaseException as exc:
                results.put((worker, repr(exc)))
                barrier.abort()
    finally:
        eng.close()


def test_once_per_change_when_two_worker_processes_finish_together(
    race_engine: Engine, pg_database_url: str
) -> None:
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(WORKERS)
    results = ctx.Queue()
    jobs = [ctx.Queue() for _ in range(WORKERS)]
    procs = [
        ctx.Process(
            target=_worker_main, args=(pg_database_url, f"proc-{i}", jobs[i], results, barrier)
        )
        for i in range(WORKERS)
    ]
    for p in procs:
        p.start()
    try:
        for _ in range(PROCESS_ROUNDS):
            inst = race_engine.start("cond_race", {"x": 0})
            tokens = branch_tokens(race_engine, inst.id)
            for i, token_id in enumerate(tokens):  # pairs: one for each worker, together
                jobs[i % WORKERS].put(token_id)
            got = [results.get(timeout=120) for _ in range(BRANCHES)]
            assert sorted(r[1] for r in got) == [True] * BRANCHES, got
            assert_once_per_change(race_engine, inst.id)
    finally:
        for q in jobs:
            q.put(None)
        for p in procs:
            p.join(timeout=20)
            if p.is_alive():
                p.kill()
