"""Several steps per transaction: what a batch of inline steps must and must not do."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from bpm import Engine, EngineConfig, InstanceState
from bpm.builder import Process
from bpm.handlers import HandlerRegistry, TaskContext
from bpm.retry import RetryPolicy
from bpm.runtime.states import TokenState
from tests.engine_helpers import QueueDispatcher, drain, make_engine


def quick_pace(engine: Engine) -> None:
    """As if the worker had seen quick handlers: its claims take several steps."""
    engine.core.pace.observe(0.0001)
    assert engine.core.pace.batch(engine.config) == engine.config.batch_size


def single(key: str, handler: str = "work") -> Any:
    return (
        Process(key)
        .start("s")
        .service_task("work", handler=handler)
        .end("e")
        .sequence("s", "work", "e")
        .build()
    )


def history_rows(engine: Engine) -> int:
    from sqlalchemy import func, select

    from bpm.store.tables import history

    with engine.db.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(history)).scalar_one())


def test_a_batch_finishes_in_one_transaction_and_a_raising_handler_fails_only_its_step(
    database_url: str,
) -> None:
    reg = HandlerRegistry()
    ran: list[int] = []

    def work(ctx: TaskContext) -> dict[str, Any]:
        ran.append(ctx.variables["n"])
        if ctx.variables["n"] == 3:
            raise RuntimeError("only this one")
        return {"done": ctx.variables["n"]}

    reg.register("work", work, retry=RetryPolicy.none())
    engine, q = make_engine(database_url, reg, EngineConfig(batch_size=8))
    engine.deploy(single("batch"))
    ids = [engine.start("batch", {"n": n}).id for n in range(6)]
    quick_pace(engine)
    commits = engine.stats.commits
    assert engine.run_token(q.queue.popleft()) == 6  # one message, the whole queue
    # one claim, one finish (and one look for more): three transactions for six steps
    assert engine.stats.commits - commits == 3
    states = {n: engine.get_instance(i).state for n, i in enumerate(ids)}
    assert states == {n: InstanceState.COMPLETED for n in range(6) if n != 3} | {
        3: InstanceState.ACTIVE
    }
    (incident,) = engine.incidents()
    assert incident.instance_id == ids[3] and "only this one" in (incident.message or "")
    assert sorted(ran) == list(range(6))
    assert drain(engine, q) == 0  # the other messages find their steps done: nothing runs
    engine.close()


def fork(key: str, branches: int) -> Any:
    p = (
        Process(key)
        .start("s")
        .parallel("fork")
        .parallel("join")
        .service_task("after", handler="after")
    )
    for i in range(branches):
        p = p.service_task(f"b{i}", handler="branch")
    p = p.end("e").sequence("s", "fork").sequence("join", "after", "e")
    for i in range(branches):
        p = p.flow("fork", f"b{i}").flow(f"b{i}", "join")
    return p.build()


def test_a_batch_holding_every_branch_of_a_fork_fires_the_join_once(database_url: str) -> None:
    reg = HandlerRegistry()
    reg.register("branch", lambda ctx: {ctx.node_id: True})
    reg.register("after", lambda ctx: {"after": True})
    engine, q = make_engine(database_url, reg, EngineConfig(batch_size=32))
    engine.deploy(fork("forked", 6))
    inst = engine.start("forked")
    quick_pace(engine)
    drain(engine, q)
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.COMPLETED
    history = engine.history(inst.id)
    assert [e.type for e in history].count("join_fired") == 1
    assert len([e for e in history if e.type == "token_completed" and e.node_id == "after"]) == 1
    engine.close()


def test_racing_batches_across_threads_fire_each_join_once(pg_database_url: str) -> None:
    """Four threads, each a worker taking batches, over many forked instances at once."""
    reg = HandlerRegistry()
    reg.register("branch", lambda ctx: {ctx.node_id: True})
    reg.register("after", lambda ctx: {"after": True})
    setup = Engine(pg_database_url, registry=reg)
    setup.deploy(fork("raced", 4))
    q = QueueDispatcher()
    ids = []
    for _ in range(20):
        ids.append(setup.start("raced").id)
    engines = [
        Engine(pg_database_url, registry=reg, dispatcher=QueueDispatcher()) for _ in range(4)
    ]
    for e in engines:
        quick_pace(e)
    ready = [t.id for i in ids for t in setup.get_instance(i).tokens if t.state is TokenState.READY]
    barrier = threading.Barrier(len(engines))
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            barrier.wait(timeout=30)
            for token_id in ready[n :: len(engines)]:
                engines[n].run_token(token_id, worker_id=f"w{n}")
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(len(engines))]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    assert not errors, errors
    # whatever the threads left (a step another thread held when they looked) runs now
    for e in engines:
        assert isinstance(e.dispatcher, QueueDispatcher)
        drain(e, e.dispatcher)
    setup.redispatch_stale_ready()
    for i in ids:
        leftover = [t.id for t in setup.get_instance(i).tokens if t.state is TokenState.READY]
        for token_id in leftover:
            engines[0].run_token(token_id)
    for i in ids:
        inst = setup.get_instance(i)
        assert inst.state is InstanceState.COMPLETED, i
        history = setup.history(i)
        assert [e.type for e in history].count("join_fired") == 1
    for e in (*engines, setup):
        e.close()
    assert q.published == []


@pytest.mark.parametrize("batch_size", [1, 8])
def test_batching_does_not_change_what_is_written(database_url: str, batch_size: int) -> None:
    """The same instance trail (event types per node) with and without batches."""
    reg = HandlerRegistry()
    reg.register("branch", lambda ctx: {ctx.node_id: True})
    reg.register("after", lambda ctx: {"after": True})
    engine, q = make_engine(database_url, reg, EngineConfig(batch_size=batch_size))
    engine.deploy(fork("same", 2))
    inst = engine.start("same")
    quick_pace(engine) if batch_size > 1 else None
    drain(engine, q)
    history = engine.history(inst.id)
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    per_node = sorted((e.node_id or "", e.type) for e in history if e.type.startswith("token_"))
    assert per_node.count(("after", "token_completed")) == 1
    assert ("join", "token_completed") in per_node
    engine.close()
