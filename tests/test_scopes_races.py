"""The last inner instances of a multi-instance body, and the last branches into an
inclusive join, finishing at the same moment complete the body / fire the join exactly
once, from threads of one process and from separate processes (PostgreSQL).

As in ``test_join_race``: every step is claimed first, then all finishes are released
together by a barrier; the instance lock every finish takes first serializes them, and
the completion is decided under it.
"""

from __future__ import annotations

import multiprocessing as mp
import threading
from collections.abc import Callable, Iterator
from multiprocessing.synchronize import Barrier as MpBarrier
from typing import Any

import pytest

from bpm import Engine
from bpm.builder import Process
from bpm.model.process import ProcessModel
from bpm.runtime.states import ScopeKind, ScopeState, TokenState
from tests.test_join_race import claim_and_finish

STEPS = 8
THREAD_ROUNDS = 15
PROCESS_ROUNDS = 6


def multi_model() -> ProcessModel:
    """start -> race (8 parallel inner instances, outputs collected) -> after (user task)."""
    return (
        Process("mi_race")
        .start("start")
        .service_task(
            "race", handler="race-branch", times=STEPS, collect="results", output="race_done"
        )
        .user_task("after")
        .end("end")
        .sequence("start", "race", "after", "end")
        .build()
    )


def inclusive_model() -> ProcessModel:
    """start -> split (8 true conditions) -> b0..b7 -> join -> after (user task)."""
    p = Process("incl_race").start("start").inclusive("split").inclusive("join")
    p.user_task("after").end("end").flow("start", "split").sequence("join", "after", "end")
    for i in range(STEPS):
        p.service_task(f"b{i}", handler="race-branch")
        p.flow("split", f"b{i}", condition=f"go > {i - 100}").flow(f"b{i}", "join")
    return p.build()


@pytest.fixture
def race_engine(pg_database_url: str) -> Iterator[Engine]:
    eng = Engine(pg_database_url)  # NullDispatcher: nothing runs unless the test says so
    eng.deploy(multi_model())
    eng.deploy(inclusive_model())
    yield eng
    eng.close()


def ready_steps(engine: Engine, instance_id: str) -> list[str]:
    toks = [
        t
        for t in engine.get_instance(instance_id).tokens
        if t.state is TokenState.READY and t.node_id != "after"
    ]
    assert len(toks) == STEPS, toks
    return [t.id for t in toks]


def assert_multi_completed_once(engine: Engine, instance_id: str) -> None:
    history = engine.history(instance_id)
    inst = engine.get_instance(instance_id)
    (body,) = [s for s in inst.scopes if s.kind is ScopeKind.MULTI_INSTANCE]
    assert body.state is ScopeState.COMPLETED
    done = [e for e in history if e.type == "scope_completed" and e.payload["scope"] == body.id]
    assert len(done) == 1, done
    inners = [s for s in inst.scopes if s.kind is ScopeKind.INNER_INSTANCE]
    assert sorted(s.state for s in inners) == [ScopeState.COMPLETED] * STEPS
    assert body.variables["nrOfCompletedInstances"] == STEPS
    assert inst.variables["results"] == [1] * STEPS  # every inner instance's output, once
    outer = [e for e in history if e.type == "token_completed" and e.node_id == "race"]
    assert len(outer) == STEPS + 1  # each inner token, and the body's token once
    assert len(engine.user_tasks(instance_id)) == 1


def assert_joined_once(engine: Engine, instance_id: str) -> None:
    history = engine.history(instance_id)
    fired = [e for e in history if e.type == "join_fired"]
    assert len(fired) == 1, fired
    assert len(fired[0].payload["tokens"]) == STEPS
    assert all(f"b{i}_done" in engine.get_instance(instance_id).variables for i in range(STEPS))
    assert len(engine.user_tasks(instance_id)) == 1


def _outcome(step: Any, worker: str) -> dict[str, Any]:
    node = step.token.node_id
    return {"race_done": 1} if node == "race" else {f"{node}_done": worker}


def _thread_round(engine: Engine, key: str, check: Callable[[Engine, str], None]) -> None:
    inst = engine.start(key, {"go": 1})
    tokens = ready_steps(engine, inst.id)
    barrier = threading.Barrier(STEPS)
    applied: list[bool] = []
    errors: list[BaseException] = []

    def run(token_id: str, worker: str) -> None:
        try:
            applied.append(claim_and_finish(engine.core, token_id, worker, barrier, _outcome))
        except BaseException as exc:  # surfaced below: a thread cannot fail the test
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(tid, f"t{i}")) for i, tid in enumerate(tokens)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=60)
    assert not errors, errors
    assert applied == [True] * STEPS
    check(engine, inst.id)


@pytest.mark.parametrize(
    ("key", "check"),
    [("mi_race", assert_multi_completed_once), ("incl_race", assert_joined_once)],
    ids=["multi-instance", "inclusive"],
)
def test_completion_is_decided_once_when_steps_finish_from_threads(
    race_engine: Engine, key: str, check: Callable[[Engine, str], None]
) -> None:
    for _ in range(THREAD_ROUNDS):
        _thread_round(race_engine, key, check)


def _process_main(url: str, worker: str, jobs: Any, results: Any, barrier: MpBarrier) -> None:
    """A separate process: its own engine and connections; one step per round."""
    eng = Engine(url)
    try:
        while (token_id := jobs.get()) is not None:
            try:
                results.put(
                    (worker, claim_and_finish(eng.core, token_id, worker, barrier, _outcome))
                )
            except BaseException as exc:
                results.put((worker, repr(exc)))
                barrier.abort()
    finally:
        eng.close()


@pytest.mark.parametrize(
    ("key", "check"),
    [("mi_race", assert_multi_completed_once), ("incl_race", assert_joined_once)],
    ids=["multi-instance", "inclusive"],
)
def test_completion_is_decided_once_when_steps_finish_from_processes(
    race_engine: Engine, pg_database_url: str, key: str, check: Callable[[Engine, str], None]
) -> None:
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(STEPS)
    results = ctx.Queue()
    jobs = [ctx.Queue() for _ in range(STEPS)]
    procs = [
        ctx.Process(
            target=_process_main, args=(pg_database_url, f"p{i}", jobs[i], results, barrier)
        )
        for i in range(STEPS)
    ]
    for p in procs:
        p.start()
    try:
        for _ in range(PROCESS_ROUNDS):
            inst = race_engine.start(key, {"go": 1})
            for q, token_id in zip(jobs, ready_steps(race_engine, inst.id), strict=True):
                q.put(token_id)
            got = [results.get(timeout=120) for _ in range(STEPS)]
            assert sorted(r[1] for r in got) == [True] * STEPS, got
            check(race_engine, inst.id)
    finally:
        for q in jobs:
            q.put(None)
        for p in procs:
            p.join(timeout=20)
            if p.is_alive():
                p.kill()
