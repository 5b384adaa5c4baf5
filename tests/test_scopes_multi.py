"""Multi-instance activities and inclusive gateways (issue 10)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select

from bpm import Engine, TaskContext
from bpm.bpmn import parse_bpmn
from bpm.builder import Process
from bpm.errors import VariableError
from bpm.handlers import HandlerRegistry
from bpm.runtime.external import FetchRequest, TopicRequest
from bpm.runtime.states import InstanceState, ScopeKind, ScopeState
from bpm.store.tables import scope as scope_table
from tests.engine_helpers import QueueDispatcher, drain, table_dump
from tests.scopes_helpers import EMPTY, engine_on, live_nodes, nothing_live, open_tasks, types
from tests.test_scopes_model import chain, xml


@pytest.fixture
def calls() -> list[dict[str, Any]]:
    return []


@pytest.fixture
def registry(calls: list[dict[str, Any]]) -> HandlerRegistry:
    reg = HandlerRegistry()

    def double(ctx: TaskContext) -> dict[str, Any]:
        calls.append(dict(ctx.variables))
        return {"double": ctx.variables["item"] * 2}

    reg.register("double", double)
    return reg


@pytest.fixture
def local(
    sqlite_database_url: str, registry: HandlerRegistry
) -> Iterator[tuple[Engine, QueueDispatcher]]:
    eng, q = engine_on(sqlite_database_url, registry)
    eng.upgrade()
    yield eng, q
    eng.close()


@pytest.fixture
def both(database_url: str, registry: HandlerRegistry) -> Iterator[tuple[Engine, QueueDispatcher]]:
    eng, q = engine_on(database_url, registry)
    yield eng, q
    eng.close()


def _complete_all(engine: Engine, instance_id: str, node_id: str, order: list[int]) -> None:
    """Complete the open user tasks at ``node_id`` in the given order of their items."""
    tasks = {t.id: t for t in engine.user_tasks(instance_id) if t.node_id == node_id}
    by_counter: dict[int, str] = {}
    for scope in engine.get_instance(instance_id).scopes:
        if scope.kind is ScopeKind.INNER_INSTANCE and scope.state is ScopeState.ACTIVE:
            by_counter[scope.loop_counter or 0] = scope.id
    tokens = {t.id: t for t in engine.get_instance(instance_id).tokens}
    for index in order:
        task = next(t for t in tasks.values() if tokens[t.token_id].scope_id == by_counter[index])
        engine.complete_user_task(task.id, {"answer": index * 10})


# -- multi-instance -----------------------------------------------------------------------------


def test_parallel_instances_collect_their_outputs_in_input_order(
    both: tuple[Engine, QueueDispatcher], calls: list[dict[str, Any]]
) -> None:
    engine, q = both
    engine.deploy(
        Process("mi")
        .start("s")
        .service_task("double", handler="double", for_each="items", as_="item", collect="results")
        .end("e")
        .sequence("s", "double", "e")
    )
    inst = engine.start("mi", {"items": [3, 1, 2]})
    assert len(q.queue) == 3
    q.queue.reverse()  # the last item's step finishes first
    drain(engine, q)
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.COMPLETED
    assert done.variables == {
        "items": [3, 1, 2],
        "results": [{"double": 6}, {"double": 2}, {"double": 4}],
    }
    seen = sorted((c["loopCounter"], c["item"], c["nrOfInstances"]) for c in calls)
    assert seen == [(0, 3, 3), (1, 1, 3), (2, 2, 3)]
    assert sum(1 for x in types(engine, inst.id) if x == ("token_completed", "e")) == 1


def test_sequential_instances_run_one_after_the_other(
    local: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = local
    engine.deploy(
        Process("seq")
        .start("s")
        .user_task("ask", times=3, parallel=False, collect="answers", output="answer")
        .end("e")
        .sequence("s", "ask", "e")
    )
    inst = engine.start("seq")
    for expected in range(3):
        (task,) = engine.user_tasks(inst.id)
        scope = next(
            s
            for s in engine.get_instance(inst.id).scopes
            if s.kind is ScopeKind.INNER_INSTANCE and s.state is ScopeState.ACTIVE
        )
        assert scope.loop_counter == expected
        engine.complete_user_task(task.id, {"answer": expected * 10})
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.COMPLETED
    assert done.variables == {"answers": [0, 10, 20]}  # `answer` stayed in each instance


@pytest.mark.parametrize("output", ["answer", "= answer"])
def test_a_bare_name_output_is_evaluated_over_that_variable_alone(
    local: tuple[Engine, QueueDispatcher], monkeypatch: pytest.MonkeyPatch, output: str
) -> None:
    """Each inner instance's end reads its output; evaluated over every variable in view
    (all the items, the collection so far) that cost O(instances) per instance. The value
    is still the expression's (FEEL gives 1.0 as 1)."""
    from bpm.expressions import Expression
    from bpm.expressions_feel import FeelExpression

    engine, _ = local
    seen: list[list[str]] = []
    for cls in (Expression, FeelExpression):
        evaluate = cls.evaluate

        def spy(self: Any, variables: Any, _evaluate: Any = evaluate) -> Any:
            seen.append(sorted(variables))
            return _evaluate(self, variables)

        monkeypatch.setattr(cls, "evaluate", spy)
    engine.deploy(
        Process("bare")
        .start("s")
        .user_task("ask", for_each="items", as_="item", collect="answers", output=output)
        .end("e")
        .sequence("s", "ask", "e")
    )
    inst = engine.start("bare", {"items": list(range(3)), "big": ["x"] * 50})
    seen.clear()
    _complete_all(engine, inst.id, "ask", [2, 0, 1])
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.COMPLETED
    assert done.variables["answers"] == [0, 10, 20]
    assert seen == [["answer"]] * 3


def test_a_bare_name_output_keeps_the_expression_s_value(
    local: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = local
    engine.deploy(
        Process("feel-out")
        .start("s")
        .user_task("ask", times=2, collect="answers", output="= answer")
        .end("e")
        .sequence("s", "ask", "e")
    )
    inst = engine.start("feel-out")
    for task in engine.user_tasks(inst.id):
        engine.complete_user_task(task.id, {"answer": 1.0})
    answers = engine.get_instance(inst.id).variables["answers"]
    assert answers == [1, 1] and [type(a) for a in answers] == [int, int]


def test_a_completion_condition_cancels_the_remaining_instances(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    engine.deploy(
        Process("enough")
        .start("s")
        .user_task(
            "vote",
            for_each="voters",
            as_="voter",
            until="nrOfCompletedInstances >= 2",
            collect="votes",
            output="answer",
        )
        .user_task("after")
        .end("e")
        .sequence("s", "vote", "after", "e")
    )
    inst = engine.start("enough", {"voters": ["a", "b", "c", "d"]})
    assert open_tasks(engine, inst.id) == ["vote"] * 4
    _complete_all(engine, inst.id, "vote", [2, 0])
    assert open_tasks(engine, inst.id) == ["after"]
    assert len(engine.user_tasks(inst.id, state="cancelled")) == 2
    assert engine.get_instance(inst.id).variables["votes"] == [0, None, 20, None]
    assert live_nodes(engine, inst.id) == ["after"]


def test_a_multi_instance_sub_process_gives_each_instance_its_variables(
    local: tuple[Engine, QueueDispatcher],
) -> None:
    engine, q = local
    engine.deploy(
        Process("subs")
        .start("s")
        .sub_process(
            "per_item",
            lambda b: (
                b.start("ps")
                .service_task("double", handler="double")
                .end("pe")
                .sequence("ps", "double", "pe")
            ),
            for_each="items",
            as_="item",
            collect="results",
            output="double",
        )
        .end("e")
        .sequence("s", "per_item", "e")
    )
    inst = engine.start("subs", {"items": [5, 6]})
    drain(engine, q)
    done = engine.get_instance(inst.id)
    assert done.variables == {"items": [5, 6], "results": [10, 12]}
    inners = [s for s in done.scopes if s.kind is ScopeKind.INNER_INSTANCE]
    assert sorted((s.loop_counter, s.variables["item"]) for s in inners) == [(0, 5), (1, 6)]


def test_zeebe_multi_instance_with_an_external_worker(
    local: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = local
    engine.deploy(
        xml(
            '<bpmn:startEvent id="s" /><bpmn:serviceTask id="t"><bpmn:extensionElements>'
            '<zeebe:taskDefinition type="price" /></bpmn:extensionElements>'
            "<bpmn:multiInstanceLoopCharacteristics><bpmn:extensionElements>"
            '<zeebe:loopCharacteristics inputCollection="= skus" inputElement="sku" '
            'outputCollection="prices" outputElement="= price" />'
            "</bpmn:extensionElements></bpmn:multiInstanceLoopCharacteristics>"
            '</bpmn:serviceTask><bpmn:endEvent id="e" />' + chain("s", "t", "e"),
            key="zeebe_mi",
        )
    )
    inst = engine.start("zeebe_mi", {"skus": ["a", "b"]})
    tasks = engine.fetch_and_lock(FetchRequest("w", 5, (TopicRequest("price", 10_000),)))
    assert sorted(t.variables["sku"] for t in tasks if t.variables) == ["a", "b"]
    for task in tasks:
        assert task.variables is not None
        engine.complete_external_task(task.id, "w", {"price": f"{task.variables['sku']}-9"})
    done = engine.get_instance(inst.id)
    assert done.variables == {"skus": ["a", "b"], "prices": ["a-9", "b-9"]}


def test_an_empty_collection_skips_the_activity(local: tuple[Engine, QueueDispatcher]) -> None:
    engine, q = local
    engine.deploy(
        Process("none")
        .start("s")
        .service_task("double", handler="double", for_each="items", as_="item", collect="r")
        .end("e")
        .sequence("s", "double", "e")
    )
    inst = engine.start("none", {"items": []})
    assert engine.get_instance(inst.id).variables == {"items": [], "r": []}
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    assert q.published == []


def test_a_collection_that_is_not_a_list_gets_an_incident(
    local: tuple[Engine, QueueDispatcher],
) -> None:
    engine, q = local
    engine.deploy(
        Process("bad")
        .start("s")
        .service_task("double", handler="double", for_each="items", as_="item", collect="r")
        .end("e")
        .sequence("s", "double", "e")
    )
    inst = engine.start("bad", {"items": "abc"})
    (incident,) = engine.incidents(inst.id)
    assert incident.type == "failedMultiInstance" and "not a list" in (incident.message or "")
    assert engine.get_instance(inst.id).scopes == ()  # nothing was opened
    engine.set_variables(inst.id, {"items": [1]})
    engine.retry_incident(incident.id)
    drain(engine, q)
    assert engine.get_instance(inst.id).variables["r"] == [{"double": 2}]


# -- inclusive gateways -------------------------------------------------------------------------


def _inclusive(default: bool) -> Process:
    p = (
        Process("incl")
        .start("s")
        .inclusive("split", default="f_c" if default else None)
        .user_task("a")
        .user_task("b")
        .user_task("c")
        .inclusive("join")
        .user_task("after")
        .end("e")
        .flow("s", "split")
        .flow("split", "a", condition="x > 0")
        .flow("split", "b", condition="y > 0")
        .sequence("a", "join", "after", "e")
        .flow("b", "join")
        .flow("c", "join")
    )
    if default:
        p.flow("split", "c", id="f_c", default=True)
    else:
        p.flow("split", "c", condition="z > 0")
    return p


def test_inclusive_fork_takes_every_true_flow_and_the_join_waits_for_them(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = both
    engine.deploy(_inclusive(default=True))
    inst = engine.start("incl", {"x": 1, "y": 1})
    assert open_tasks(engine, inst.id) == ["a", "b"]
    engine.complete_user_task(next(t.id for t in engine.user_tasks(inst.id) if t.node_id == "a"))
    assert open_tasks(engine, inst.id) == ["b"]  # the join waits: b can still arrive
    engine.complete_user_task(next(t.id for t in engine.user_tasks(inst.id) if t.node_id == "b"))
    assert open_tasks(engine, inst.id) == ["after"]
    fired = [e for e in engine.history(inst.id) if e.type == "join_fired"]
    assert len(fired) == 1 and len(fired[0].payload["tokens"]) == 2


def test_inclusive_fork_takes_the_default_when_nothing_is_true(
    local: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = local
    engine.deploy(_inclusive(default=True))
    inst = engine.start("incl", {"x": 0, "y": 0})
    assert open_tasks(engine, inst.id) == ["c"]


def test_inclusive_fork_without_default_and_nothing_true_gets_an_incident(
    local: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = local
    engine.deploy(_inclusive(default=False))
    inst = engine.start("incl", {"x": 0, "y": 0, "z": 0})
    (incident,) = engine.incidents(inst.id)
    assert "no condition matched" in (incident.message or "")
    assert open_tasks(engine, inst.id) == []


def test_the_join_fires_when_an_upstream_token_goes_elsewhere(
    local: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = local
    engine.deploy(
        Process("elsewhere")
        .start("s")
        .parallel("fork")
        .user_task("a")
        .user_task("b")
        .exclusive("go", default="f_away")
        .inclusive("join")
        .user_task("after")
        .end("away")
        .end("e")
        .sequence("s", "fork", "a", "join", "after", "e")
        .sequence("fork", "b", "go")
        .flow("go", "join", condition="b_joins")
        .flow("go", "away", id="f_away", default=True)
    )
    inst = engine.start("elsewhere")
    engine.complete_user_task(next(t.id for t in engine.user_tasks(inst.id) if t.node_id == "a"))
    assert open_tasks(engine, inst.id) == ["b"]
    engine.complete_user_task(
        next(t.id for t in engine.user_tasks(inst.id) if t.node_id == "b"), {"b_joins": False}
    )
    assert open_tasks(engine, inst.id) == ["after"]


def test_an_inclusive_merge_and_join_on_a_loop(local: tuple[Engine, QueueDispatcher]) -> None:
    engine, _ = local
    engine.deploy(
        parse_bpmn(
            xml(
                '<bpmn:startEvent id="s" /><bpmn:inclusiveGateway id="merge" />'
                '<bpmn:inclusiveGateway id="split" /><bpmn:userTask id="a" />'
                '<bpmn:userTask id="b" /><bpmn:inclusiveGateway id="join" />'
                '<bpmn:exclusiveGateway id="again" default="f_out" /><bpmn:endEvent id="e" />'
                + chain("s", "merge", "split", "a", "join", "again")
                + chain("split", "b", "join")
                + '<bpmn:sequenceFlow id="f_back" sourceRef="again" targetRef="merge">'
                "<bpmn:conditionExpression>${more}</bpmn:conditionExpression>"
                "</bpmn:sequenceFlow>"
                '<bpmn:sequenceFlow id="f_out" sourceRef="again" targetRef="e" />',
                key="loop",
            )
        )
    )
    inst = engine.start("loop", {"more": True})
    for last_round in (False, True):
        assert open_tasks(engine, inst.id) == ["a", "b"]
        for node in ("b", "a"):
            task = next(t for t in engine.user_tasks(inst.id) if t.node_id == node)
            engine.complete_user_task(task.id, {"more": not last_round} if node == "a" else {})
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.COMPLETED
    joins = [e.node_id for e in engine.history(inst.id) if e.type == "join_fired"]
    assert joins == ["merge", "join", "merge", "join"]
    assert nothing_live(engine, inst.id) == EMPTY


def test_a_rejected_user_task_completion_changes_nothing(
    local: tuple[Engine, QueueDispatcher],
) -> None:
    engine, _ = local
    engine.deploy(_inclusive(default=True))
    inst = engine.start("incl", {"x": 1, "y": 0})
    task = engine.user_tasks(inst.id)[0]
    before = table_dump(engine)
    with pytest.raises(VariableError, match="not JSON"):
        engine.complete_user_task(task.id, {"bad": object()})
    assert table_dump(engine) == before


def _forking_body(b: Process) -> object:
    """Each inner instance forks into user tasks ``a`` and ``b`` and joins them."""
    return (
        b.start("ps")
        .parallel("fork")
        .user_task("a")
        .user_task("b")
        .parallel("join")
        .end("pe")
        .sequence("ps", "fork")
        .sequence("fork", "a", "join")
        .sequence("fork", "b", "join")
        .sequence("join", "pe")
    )


def test_a_join_inside_a_multi_instance_body_waits_for_its_own_inner_instance(
    both: tuple[Engine, QueueDispatcher],
) -> None:
    """Two inner instances each fork and join. Branch ``a`` of the first and branch ``b``
    of the second reach the join: two tokens at one join, one per incoming flow, yet they
    belong to different inner instances and must not fire it."""
    engine, _ = both
    engine.deploy(
        Process("mi_join")
        .start("s")
        .sub_process("each", _forking_body, for_each="items", as_="item")
        .end("e")
        .sequence("s", "each", "e")
    )
    inst = engine.start("mi_join", {"items": ["x", "y"]})
    scope_of = {
        s.id: s.loop_counter
        for s in engine.get_instance(inst.id).scopes
        if s.kind is ScopeKind.INNER_INSTANCE
    }
    assert sorted(scope_of.values()) == [0, 1]

    def inner_of_scope(scope_id: str | None) -> int | None:
        """The loop counter of the inner instance around a scope (fork scopes are not
        listed by ``get_instance``: read their parents from the table)."""
        with engine.db.connect() as conn:
            parents = dict(conn.execute(select(scope_table.c.id, scope_table.c.parent_id)).all())
        while scope_id is not None and scope_id not in scope_of:
            scope_id = parents.get(scope_id)
        return scope_of[scope_id] if scope_id is not None else None

    def inner_of(token_id: str) -> int | None:
        tokens = {t.id: t for t in engine.get_instance(inst.id).tokens}
        return inner_of_scope(tokens[token_id].scope_id)

    def task(node: str, inner: int) -> str:
        found = [
            t.id
            for t in engine.user_tasks(inst.id)
            if t.node_id == node and inner_of(t.token_id) == inner
        ]
        assert len(found) == 1, (node, inner, engine.user_tasks(inst.id))
        return found[0]

    engine.complete_user_task(task("a", 0))
    engine.complete_user_task(task("b", 1))

    assert [e for e in engine.history(inst.id) if e.type == "join_fired"] == []
    assert open_tasks(engine, inst.id) == ["a", "b"]  # b of the first, a of the second
    assert inner_of(engine.user_tasks(inst.id)[0].token_id) != inner_of(
        engine.user_tasks(inst.id)[1].token_id
    )
    waiting = [
        t
        for t in engine.get_instance(inst.id).tokens
        if t.node_id == "join" and t.state.value == "waiting"
    ]
    assert len(waiting) == 2 and {inner_of(t.id) for t in waiting} == {0, 1}

    engine.complete_user_task(task("b", 0))
    fired = [e for e in engine.history(inst.id) if e.type == "join_fired"]
    assert len(fired) == 1
    assert inner_of_scope(fired[0].payload["scope"]) == 0
    assert engine.get_instance(inst.id).state is InstanceState.ACTIVE

    engine.complete_user_task(task("a", 1))
    fired = [e for e in engine.history(inst.id) if e.type == "join_fired"]
    assert [inner_of_scope(e.payload["scope"]) for e in fired] == [0, 1]
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    assert nothing_live(engine, inst.id) == EMPTY
