"""N branches finishing at the same moment fire their join exactly once (PostgreSQL).

Each branch is claimed first; then all finishes are released together by a barrier, from
threads of one process and from separate (spawned) processes. The instance row lock taken
first by every finish is what serializes them (DESIGN section 5).
"""

from __future__ import annotations

import multiprocessing as mp
import threading
from collections.abc import Callable, Iterator
from datetime import datetime
from multiprocessing.synchronize import Barrier as MpBarrier
from typing import Any

import pytest

from bpm import Engine
from bpm.engine.core import EngineCore, utcnow
from bpm.engine.execution import Claimed, Outcome
from bpm.engine.unit import unit_of_work
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from bpm.runtime.states import TokenState
from tests.engine_helpers import claim_one, finish_one

BRANCHES = 8
THREAD_ROUNDS = 30
PROCESS_ROUNDS = 10


def race_model() -> ProcessModel:
    """start -> fork -> b0..b7 (inline service tasks) -> join -> after (user task)."""
    nodes: list[n.Node] = [
        n.StartEvent("start"),
        n.ParallelGateway("fork"),
        n.ParallelGateway("join"),
        n.UserTask("after"),
        n.EndEvent("end"),
    ]
    flows = [
        n.Flow("f_start", "start", "fork"),
        n.Flow("f_join", "join", "after"),
        n.Flow("f_after", "after", "end"),
    ]
    for i in range(BRANCHES):
        nodes.append(n.ServiceTask(f"b{i}", handler="race-branch"))
        flows += [n.Flow(f"f_in{i}", "fork", f"b{i}"), n.Flow(f"f_out{i}", f"b{i}", "join")]
    return ProcessModel("join_race", {x.id: x for x in nodes}, tuple(flows))


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


def claim_and_finish(
    core: EngineCore,
    token_id: str,
    worker: str,
    wait: threading.Barrier | MpBarrier,
    outcome: Callable[[Claimed, str], dict[str, Any]] | None = None,
) -> bool:
    """Claim, then finish together with every other branch; True if the finish applied.
    ``outcome(step, worker)``: the variables the step returns (default: node -> worker)."""
    step: Claimed | None = claim_one(core, token_id, worker, utcnow())
    assert step is not None, f"{worker} could not claim {token_id}"
    wait.wait(timeout=30)
    before = core.stats.finishes_dropped
    variables = outcome(step, worker) if outcome else {step.token.node_id: worker}
    finish_one(core, step, Outcome(variables=variables), worker, utcnow())
    return core.stats.finishes_dropped == before


def assert_joined_once(engine: Engine, instance_id: str) -> None:
    history = engine.history(instance_id)
    fired = [e for e in history if e.type == "join_fired"]
    assert len(fired) == 1, fired
    assert sorted(fired[0].payload["tokens"]) == sorted(
        e.token_id for e in history if e.type == "token_waiting" and e.node_id == "join"
    )
    inst = engine.get_instance(instance_id)
    after = [t for t in inst.tokens if t.node_id == "after"]
    assert len(after) == 1 and after[0].state is TokenState.WAITING, after
    joined = [t for t in inst.tokens if t.node_id == "join"]
    # The last arrival fires the join in the transaction that created it: it has no row.
    assert len(joined) == BRANCHES - 1
    assert all(t.state is TokenState.COMPLETED for t in joined)
    assert all(f"b{i}" in inst.variables for i in range(BRANCHES))  # no lost update
    assert len(engine.user_tasks(instance_id)) == 1


def _thread_round(engine: Engine) -> None:
    inst = engine.start("join_race")
    tokens = branch_tokens(engine, inst.id)
    barrier = threading.Barrier(BRANCHES)
    applied: list[bool] = []
    errors: list[BaseException] = []

    def run(token_id: str, worker: str) -> None:
        try:
            applied.append(claim_and_finish(engine.core, token_id, worker, barrier))
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
    assert_joined_once(engine, inst.id)


def test_join_fires_once_when_branches_finish_from_threads(race_engine: Engine) -> None:
    for _ in range(THREAD_ROUNDS):
        _thread_round(race_engine)


def _process_main(url: str, worker: str, jobs: Any, results: Any, barrier: MpBarrier) -> None:
    """A separate process: its own engine and connections; one branch per round."""
    eng = Engine(url)
    try:
        while (token_id := jobs.get()) is not None:
            try:
                results.put((worker, claim_and_finish(eng.core, token_id, worker, barrier)))
            except BaseException as exc:
                results.put((worker, repr(exc)))
                barrier.abort()
    finally:
        eng.close()


def test_join_fires_once_when_branches_finish_from_processes(
    race_engine: Engine, pg_database_url: str
) -> None:
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(BRANCHES)
    results = ctx.Queue()
    jobs = [ctx.Queue() for _ in range(BRANCHES)]
    procs = [
        ctx.Process(
            target=_process_main, args=(pg_database_url, f"proc-{i}", jobs[i], results, barrier)
        )
        for i in range(BRANCHES)
    ]
    for p in procs:
        p.start()
    try:
        for _ in range(PROCESS_ROUNDS):
            inst = race_engine.start("join_race")
            for q, token_id in zip(jobs, branch_tokens(race_engine, inst.id), strict=True):
                q.put(token_id)
            got = [results.get(timeout=60) for _ in range(BRANCHES)]
            assert sorted(r[1] for r in got) == [True] * BRANCHES, got
            assert_joined_once(race_engine, inst.id)
    finally:
        for q in jobs:
            q.put(None)
        for p in procs:
            p.join(timeout=20)
            if p.is_alive():
                p.kill()


def test_branch_finishes_serialize_on_the_instance_lock(race_engine: Engine) -> None:
    """The mechanism, shown directly: a finish waits while another holds the instance."""
    inst = race_engine.start("join_race")
    token_id = branch_tokens(race_engine, inst.id)[0]
    step = claim_one(race_engine.core, token_id, "w", utcnow())
    assert step is not None
    done = threading.Event()
    at: list[datetime] = []

    def finisher() -> None:
        finish_one(race_engine.core, step, Outcome(variables={}), "w", utcnow())
        at.append(utcnow())
        done.set()

    with unit_of_work(race_engine.core) as unit:
        unit.work(inst.id)  # holds the instance lock
        thread = threading.Thread(target=finisher)
        thread.start()
        assert not done.wait(0.5), "finish ran while another transaction held the instance"
        released = utcnow()
    thread.join(timeout=10)
    assert done.is_set() and at[0] >= released
