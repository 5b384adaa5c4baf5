"""The engine core on both backends: running, joining, variables, operator actions."""

from __future__ import annotations

import itertools
from collections import defaultdict
from typing import Any

import pytest

from bpm import (
    DeploymentError,
    Engine,
    IllegalTransition,
    InstanceState,
    InvalidOperation,
    NotFound,
    RetryPolicy,
    TokenState,
    VariableError,
)
from bpm.builder import Process
from bpm.engine.unit import unit_of_work
from bpm.handlers import HandlerRegistry, TaskContext
from bpm.runtime.states import TRANSITIONS
from tests.engine_helpers import (
    drain,
    make_engine,
    order_process,
    order_registry,
    table_dump,
)


def test_order_process_runs_to_the_end_with_a_legal_trail(database_url: str) -> None:
    calls: list[str] = []
    engine, q = make_engine(database_url, order_registry(calls))
    engine.deploy(order_process())
    inst = engine.start("order", {"amount": 120}, business_key="o-1")
    assert inst.state is InstanceState.ACTIVE
    assert drain(engine, q) == 4
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.COMPLETED
    assert done.business_key == "o-1"
    assert sorted(calls) == ["charge-payment", "reserve-stock", "ship-order", "validate-order"]
    assert done.variables == {
        "amount": 120,
        "validate_order": True,
        "reserve_stock": True,
        "charge_payment": True,
        "ship_order": True,
    }
    events = engine.history(inst.id)
    seqs = [e.seq for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    # Every token's transitions form a legal chain that starts at created.
    chains: dict[str, list[str]] = defaultdict(list)
    for e in events:
        if e.token_id and e.type.startswith("token_"):
            chains[e.token_id].append(e.type.removeprefix("token_"))
    # Only tokens that rested between transactions have a row; every token has its trail.
    assert {t.id for t in done.tokens} <= set(chains)
    assert len(chains) == 10 and {t.node_id for t in done.tokens} >= {"validate", "ship"}
    for token_id, chain in chains.items():
        assert chain[0] == "created", token_id
        for a, b in itertools.pairwise(chain):
            assert TokenState(b) in TRANSITIONS[TokenState][TokenState(a)], (token_id, chain)
        assert chain[-1] == "completed"
    assert [e.type for e in events if e.type == "join_fired"] == ["join_fired"]
    assert events[0].type == "instance_started" and events[-1].type == "instance_completed"
    assert {t.state for t in done.tokens} == {TokenState.COMPLETED}


def test_default_flow_skips_the_fork(database_url: str) -> None:
    calls: list[str] = []
    engine, q = make_engine(database_url, order_registry(calls))
    engine.deploy(order_process())
    inst = engine.start("order", {"amount": 50})
    drain(engine, q)
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    assert calls == ["validate-order", "ship-order"]


def test_idempotency_key_returns_the_first_instance(database_url: str) -> None:
    engine, _ = make_engine(database_url, order_registry())
    engine.deploy(order_process())
    first = engine.start("order", {"amount": 1}, idempotency_key="k-1")
    again = engine.start("order", {"amount": 999}, idempotency_key="k-1")
    assert again.id == first.id
    assert engine.get_instance(first.id).variables["amount"] == 1
    assert len(engine.instances()) == 1


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({"when": object()}, "not JSON"),
        ({"x": float("nan")}, "not JSON"),
        ({"blob": "x" * 300_000}, "over the limit"),
        ([1, 2], "JSON object"),
        ({"": 1}, "non-empty"),
    ],
)
def test_bad_variables_are_refused_and_nothing_is_stored(
    database_url: str, variables: Any, message: str
) -> None:
    engine, q = make_engine(database_url, order_registry())
    engine.deploy(order_process())
    before = table_dump(engine)
    with pytest.raises(VariableError, match=message):
        engine.start("order", variables)
    assert table_dump(engine) == before
    assert q.published == []


def test_handler_returning_bad_variables_fails_the_attempt(database_url: str) -> None:
    reg = HandlerRegistry()
    reg.register("bad", lambda ctx: {"x": {1, 2}}, retry=RetryPolicy.none())
    engine, q = make_engine(database_url, reg)
    engine.deploy(
        Process("p")
        .start("s")
        .service_task("t", handler="bad")
        .end("e")
        .sequence("s", "t", "e")
        .build()
    )
    inst = engine.start("p")
    drain(engine, q)
    tok = next(t for t in engine.get_instance(inst.id).tokens if t.node_id == "t")
    assert tok.state is TokenState.FAILED
    assert tok.error is not None and "VariableError" in tok.error
    assert "x" not in engine.get_instance(inst.id).variables


def test_unknown_process_key_is_not_found(database_url: str) -> None:
    engine, _ = make_engine(database_url)
    with pytest.raises(NotFound, match="no process definition with key 'nope'"):
        engine.start("nope")


def test_versioning_by_key(database_url: str) -> None:
    engine, q = make_engine(database_url, order_registry())
    v1 = engine.deploy(order_process())
    assert engine.deploy(order_process()).id == v1.id
    old = engine.start("order", {"amount": 5})
    changed = (
        Process("order")
        .start("s")
        .service_task("ship", handler="ship-order")
        .end("e")
        .sequence("s", "ship", "e")
        .build()
    )
    v2 = engine.deploy(changed)
    assert (v1.version, v2.version) == (1, 2)
    assert engine.start("order").definition_id == v2.id
    assert engine.get_instance(old.id).definition_id == v1.id
    drain(engine, q)
    assert engine.get_instance(old.id).state is InstanceState.COMPLETED


def test_user_task_completion_moves_on_and_cannot_repeat(database_url: str) -> None:
    engine, _q = make_engine(database_url)
    engine.deploy(
        Process("approve")
        .start("s")
        .user_task("review", assignee="ann")
        .end("e")
        .sequence("s", "review", "e")
        .build()
    )
    inst = engine.start("approve")
    (task,) = engine.user_tasks(inst.id)
    assert (task.node_id, task.assignee, task.state) == ("review", "ann", "open")
    with pytest.raises(VariableError):
        engine.complete_user_task(task.id, {"bad": object()})
    assert engine.get_instance(inst.id).state is InstanceState.ACTIVE
    engine.complete_user_task(task.id, {"approved": True})
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.COMPLETED
    assert done.variables == {"approved": True}
    before = table_dump(engine)
    with pytest.raises(NotFound):
        engine.complete_user_task(task.id, {"approved": False})
    with pytest.raises(NotFound):
        engine.complete_user_task("no-such-task")
    assert table_dump(engine) == before


def test_terminate_suspend_resume(database_url: str) -> None:
    engine, q = make_engine(database_url, order_registry())
    engine.deploy(order_process())
    inst = engine.start("order", {"amount": 500})
    engine.suspend(inst.id)
    assert engine.get_instance(inst.id).state is InstanceState.SUSPENDED
    # A suspended instance hands out no work: the published step is not claimed.
    assert drain(engine, q) == 0
    with pytest.raises(InvalidOperation, match="only an active"):
        engine.suspend(inst.id)
    engine.resume(inst.id)
    assert drain(engine, q) == 4
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    before = table_dump(engine)
    with pytest.raises(InvalidOperation, match="already completed"):
        engine.terminate(inst.id)
    with pytest.raises(InvalidOperation):
        engine.resume(inst.id)
    assert table_dump(engine) == before

    other = engine.start("order", {"amount": 500})
    engine.terminate(other.id)
    ended = engine.get_instance(other.id)
    assert ended.state is InstanceState.TERMINATED
    assert all(t.state in (TokenState.COMPLETED, TokenState.TERMINATED) for t in ended.tokens)
    assert drain(engine, q) == 0  # its published step is gone


def test_terminate_end_event_ends_every_branch(database_url: str) -> None:
    engine, _q = make_engine(database_url)
    engine.deploy(
        Process("t")
        .start("s")
        .parallel("fork")
        .user_task("wait")
        .end("stop", terminate=True)
        .end("e")
        .sequence("s", "fork")
        .flow("fork", "wait")
        .flow("fork", "stop")
        .flow("wait", "e")
        .build()
    )
    inst = engine.start("t")
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.TERMINATED
    assert engine.user_tasks(inst.id) == []
    assert engine.user_tasks(inst.id, state="cancelled")[0].node_id == "wait"


def test_fork_inside_a_loop_opens_a_scope_per_pass(database_url: str) -> None:
    reg = HandlerRegistry()
    reg.register("a", lambda ctx: {"a": ctx.variables.get("a", 0) + 1})
    reg.register("b", lambda ctx: None)
    reg.register("count", lambda ctx: {"n": ctx.variables.get("n", 0) + 1})
    engine, q = make_engine(database_url, reg)
    engine.deploy(
        Process("loop")
        .start("s")
        .exclusive("merge")
        .parallel("fork")
        .service_task("ta", handler="a")
        .service_task("tb", handler="b")
        .parallel("join")
        .service_task("count", handler="count")
        .exclusive("again")
        .end("e")
        .sequence("s", "merge", "fork")
        .flow("fork", "ta")
        .flow("fork", "tb")
        .flow("ta", "join")
        .flow("tb", "join")
        .sequence("join", "count", "again")
        .flow("again", "merge", condition="n < 3", id="loop_back")
        .flow("again", "e", id="done", default=True)
        .build()
    )
    inst = engine.start("loop")
    drain(engine, q)
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.COMPLETED
    assert done.variables == {"a": 3, "n": 3}
    events = engine.history(inst.id)
    fired = [e for e in events if e.type == "join_fired"]
    assert len(fired) == 3
    assert len({e.payload["scope"] for e in fired}) == 3


def test_nested_forks_join_inner_then_outer(database_url: str) -> None:
    reg = HandlerRegistry()
    for name in ("x", "y", "z"):
        reg.register(name, lambda ctx, name=name: {name: True})
    engine, q = make_engine(database_url, reg)
    engine.deploy(
        Process("nest")
        .start("s")
        .parallel("outer_fork")
        .parallel("inner_fork")
        .service_task("x", handler="x")
        .service_task("y", handler="y")
        .parallel("inner_join")
        .service_task("z", handler="z")
        .parallel("outer_join")
        .end("e")
        .sequence("s", "outer_fork")
        .flow("outer_fork", "inner_fork")
        .flow("outer_fork", "z")
        .flow("inner_fork", "x")
        .flow("inner_fork", "y")
        .flow("x", "inner_join")
        .flow("y", "inner_join")
        .flow("inner_join", "outer_join")
        .flow("z", "outer_join")
        .sequence("outer_join", "e")
        .build()
    )
    inst = engine.start("nest")
    drain(engine, q)
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.COMPLETED
    assert done.variables == {"x": True, "y": True, "z": True}
    fired = [e.node_id for e in engine.history(inst.id) if e.type == "join_fired"]
    assert fired == ["inner_join", "outer_join"]


def test_failing_handler_retries_the_same_token_then_opens_an_incident(
    database_url: str,
) -> None:
    attempts: list[int] = []

    def boom(ctx: TaskContext) -> None:
        attempts.append(ctx.attempt)
        raise RuntimeError("card service down")

    reg = HandlerRegistry()
    reg.register("boom", boom)
    engine, q = make_engine(database_url, reg)
    engine.deploy(
        Process("f")
        .start("s")
        .service_task("t", handler="boom")
        .end("e")
        .sequence("s", "t", "e")
        .build()
    )
    inst = engine.start("f")
    drain(engine, q)
    assert attempts == [1, 2, 3]  # default policy: 3 attempts, no delay
    now = engine.get_instance(inst.id)
    assert now.state is InstanceState.ACTIVE
    (tok,) = [t for t in now.tokens if t.node_id == "t"]
    assert tok.state is TokenState.FAILED and tok.attempt == 3
    assert tok.error == "RuntimeError: card service down"
    types = [e.type for e in engine.history(inst.id)]
    assert types.count("attempt_failed") == 3
    assert "incident_opened" in types


def test_fail_instance_policy_ends_the_instance_failed(database_url: str) -> None:
    reg = HandlerRegistry()

    def boom(ctx: TaskContext) -> None:
        raise ValueError("bad data")

    reg.register("boom", boom, retry=RetryPolicy.none().fail_instance())
    engine, q = make_engine(database_url, reg)
    engine.deploy(
        Process("f")
        .start("s")
        .parallel("fork")
        .service_task("t", handler="boom")
        .user_task("u")
        .end("e1")
        .end("e2")
        .sequence("s", "fork")
        .flow("fork", "t")
        .flow("fork", "u")
        .flow("t", "e1")
        .flow("u", "e2")
        .build()
    )
    inst = engine.start("f")
    drain(engine, q)
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.FAILED
    assert engine.user_tasks(inst.id) == []


def test_gateway_without_a_matching_flow_fails_its_token(database_url: str) -> None:
    engine, _q = make_engine(database_url)
    engine.deploy(
        Process("g")
        .start("s")
        .exclusive("gw")
        .end("a")
        .end("b")
        .sequence("s", "gw")
        .flow("gw", "a", condition="x > 1")
        .flow("gw", "b", condition="x < -1")
        .build()
    )
    inst = engine.start("g", {"x": 0})
    (tok,) = [t for t in engine.get_instance(inst.id).tokens if t.node_id == "gw"]
    assert tok.state is TokenState.FAILED
    assert tok.error is not None and "no condition matched" in tok.error
    missing = engine.start("g", {})
    (tok,) = [t for t in engine.get_instance(missing.id).tokens if t.node_id == "gw"]
    assert tok.state is TokenState.FAILED and "failed" in (tok.error or "")


def test_illegal_transition_raises_and_changes_nothing(database_url: str) -> None:
    engine, q = make_engine(database_url, order_registry())
    engine.deploy(order_process())
    inst = engine.start("order", {"amount": 5})
    drain(engine, q)
    before = table_dump(engine)
    core = engine.core
    with (
        pytest.raises(IllegalTransition, match="completed -> ready"),
        unit_of_work(core) as unit,
    ):
        work = unit.work(inst.id)
        # completed tokens are not loaded as live; load one explicitly
        from bpm.store.instances import tokens_of

        done = tokens_of(unit.conn, inst.id)[0]
        work.tokens[done.id] = done
        work.transition(done.id, TokenState.READY)
    assert table_dump(engine) == before


def test_deployment_error_stores_nothing(database_url: str) -> None:
    engine, _ = make_engine(database_url)
    before = table_dump(engine)
    with pytest.raises(DeploymentError, match="missing"):
        engine.deploy(Process("bad").start("s").end("e").flow("s", "missing"))
    with pytest.raises(DeploymentError, match="is not a file"):
        engine.deploy("/no/such/file.bpmn")
    with pytest.raises(DeploymentError):
        engine.deploy("<definitions>not bpmn")
    assert table_dump(engine) == before


def test_concurrent_starts_with_one_idempotency_key_make_one_instance(
    pg_database_url: str,
) -> None:
    import threading

    engines = [make_engine(pg_database_url, order_registry())[0] for _ in range(6)]
    engines[0].deploy(order_process())
    barrier = threading.Barrier(len(engines))
    ids: list[str] = []
    errors: list[BaseException] = []

    def start(engine: Engine) -> None:
        barrier.wait()
        try:
            ids.append(engine.start("order", {"amount": 7}, idempotency_key="same").id)
        except BaseException as exc:
            errors.append(exc)

    for _ in range(5):
        ids.clear()
        threads = [threading.Thread(target=start, args=(e,)) for e in engines]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert errors == []
        assert len(ids) == len(engines) and len(set(ids)) == 1
    assert len(engines[0].instances()) == 1
    for e in engines:
        e.close()


def test_claiming_user_tasks(database_url: str) -> None:
    engine, _q = make_engine(database_url)
    engine.deploy(
        Process("claim").start("s").user_task("review").end("e").sequence("s", "review", "e")
    )
    inst = engine.start("claim")
    (task,) = engine.user_tasks(inst.id)
    assert engine.claim_user_task(task.id, "ann").assignee == "ann"
    before = table_dump(engine)
    assert engine.claim_user_task(task.id, "ann").assignee == "ann"  # idempotent for ann
    assert table_dump(engine) == before
    with pytest.raises(InvalidOperation, match="already claimed"):
        engine.claim_user_task(task.id, "bob")
    with pytest.raises(NotFound):
        engine.claim_user_task("no-such-task", "ann")
    with pytest.raises(InvalidOperation, match="user id"):
        engine.claim_user_task(task.id, "")
    assert table_dump(engine) == before
    engine.unclaim_user_task(task.id)
    assert engine.user_tasks(inst.id)[0].assignee is None
    engine.complete_user_task(task.id)
    with pytest.raises(NotFound):
        engine.claim_user_task(task.id, "ann")
    with pytest.raises(NotFound):
        engine.unclaim_user_task(task.id)
