"""The complex gateway (issue 20, item 3; BPMN 2.0.2, 13.3.5), on both backends.

As a fork it is an inclusive gateway. As a join it fires once per round, when its
``activationCondition`` (over the variables and ``activationCount``) holds; the round's
later tokens are consumed without firing again (the reset) until every incoming flow
brought one or nothing upstream can still arrive.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from bpm import Engine, InstanceState
from bpm.bpmn import parse_bpmn
from bpm.builder import Process
from bpm.errors import DeploymentError
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from bpm.runtime.states import TokenState

T0 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)
MODELER = Path(__file__).parent / "data" / "modeler" / "complex_gateway.bpmn"


def reviews(activation: str | None = "activationCount >= 2", key: str = "two_of_three") -> Process:
    """start -> fork -> a, b, c (user tasks) -> cg -> after (user task) -> end."""
    p = Process(key).start("s").parallel("fork").complex("cg", activation=activation)
    p = p.user_task("a").user_task("b").user_task("c").user_task("after").end("e")
    p = p.sequence("s", "fork")
    for branch in ("a", "b", "c"):
        p = p.sequence("fork", branch, "cg")
    return p.sequence("cg", "after", "e")


def complete(engine: Engine, instance_id: str, node_id: str, **variables: object) -> None:
    (task,) = engine.user_tasks(instance_id, node_id=node_id)
    engine.complete_user_task(task.id, dict(variables), now=T0)


def open_tasks(engine: Engine, instance_id: str) -> list[str]:
    return sorted(t.node_id for t in engine.user_tasks(instance_id))


def fired(engine: Engine, instance_id: str, node_id: str = "cg") -> int:
    return sum(
        1 for e in engine.history(instance_id) if e.type == "join_fired" and e.node_id == node_id
    )


def live_at(engine: Engine, instance_id: str, node_id: str) -> list[str]:
    tokens = engine.get_instance(instance_id).tokens
    return [
        t.blocked_id or "" for t in tokens if t.node_id == node_id and t.state is TokenState.WAITING
    ]


def test_two_of_three_fires_once_and_consumes_the_third(engine: Engine) -> None:
    engine.deploy(reviews().build())
    inst = engine.start("two_of_three", now=T0)
    complete(engine, inst.id, "a")
    assert open_tasks(engine, inst.id) == ["b", "c"]
    assert fired(engine, inst.id) == 0
    complete(engine, inst.id, "b")
    assert open_tasks(engine, inst.id) == ["after", "c"]
    assert fired(engine, inst.id) == 1
    assert live_at(engine, inst.id, "cg") == ["reset 1"]  # waits for the round's last token
    complete(engine, inst.id, "c")
    assert open_tasks(engine, inst.id) == ["after"]  # consumed: no second 'after'
    assert fired(engine, inst.id) == 1 and live_at(engine, inst.id, "cg") == []
    resets = [e for e in engine.history(inst.id) if e.type == "join_reset"]
    assert [e.node_id for e in resets] == ["cg"]
    complete(engine, inst.id, "after")
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED


def test_the_condition_reads_the_variables_the_branches_write(engine: Engine) -> None:
    engine.deploy(reviews("activationCount == 3 || urgent").build())
    inst = engine.start("two_of_three", {"urgent": False}, now=T0)
    complete(engine, inst.id, "a")
    assert fired(engine, inst.id) == 0
    complete(engine, inst.id, "b", urgent=True)
    assert open_tasks(engine, inst.id) == ["after", "c"] and fired(engine, inst.id) == 1
    complete(engine, inst.id, "c")
    complete(engine, inst.id, "after")
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.COMPLETED and fired(engine, inst.id) == 1


def test_without_a_condition_it_joins_as_an_inclusive_gateway(engine: Engine) -> None:
    engine.deploy(reviews(None).build())
    inst = engine.start("two_of_three", now=T0)
    complete(engine, inst.id, "a")
    complete(engine, inst.id, "b")
    assert fired(engine, inst.id) == 0 and open_tasks(engine, inst.id) == ["c"]
    complete(engine, inst.id, "c")
    assert open_tasks(engine, inst.id) == ["after"] and fired(engine, inst.id) == 1
    assert live_at(engine, inst.id, "cg") == []


def chosen(activation: str) -> ProcessModel:
    """An inclusive split sends tokens to a and b only (c's condition is false)."""
    return (
        Process("partial")
        .start("s")
        .inclusive("split")
        .complex("cg", activation=activation)
        .user_task("a")
        .user_task("b")
        .user_task("c")
        .user_task("after")
        .end("e")
        .sequence("s", "split")
        .flow("split", "a", condition="true")
        .flow("split", "b", condition="true")
        .flow("split", "c", condition="false")
        .sequence("a", "cg")
        .sequence("b", "cg")
        .sequence("c", "cg")
        .sequence("cg", "after", "e")
        .build()
    )


def test_the_reset_ends_when_nothing_upstream_is_left(engine: Engine) -> None:
    engine.deploy(chosen("activationCount >= 1"))
    inst = engine.start("partial", now=T0)
    complete(engine, inst.id, "a")
    assert open_tasks(engine, inst.id) == ["after", "b"]
    assert live_at(engine, inst.id, "cg") == ["reset 2"]
    complete(engine, inst.id, "b")  # consumed; no token can reach cg any more: reset ends
    assert live_at(engine, inst.id, "cg") == [] and fired(engine, inst.id) == 1
    complete(engine, inst.id, "after")
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED


def test_a_condition_that_can_no_longer_hold_is_an_incident(engine: Engine) -> None:
    engine.deploy(chosen("activationCount >= 3"))
    inst = engine.start("partial", now=T0)
    complete(engine, inst.id, "a")
    assert engine.incidents(inst.id) == []
    complete(engine, inst.id, "b")
    (incident,) = engine.incidents(inst.id)
    assert incident.node_id == "cg" and "activation condition is false" in incident.message
    assert fired(engine, inst.id) == 0 and open_tasks(engine, inst.id) == []
    engine.retry_incident(incident.id, now=T0)  # same variables: it fails again, once
    (again,) = engine.incidents(inst.id)
    assert again.id != incident.id


def test_as_a_fork_it_takes_every_true_condition_else_the_default(engine: Engine) -> None:
    p = (
        Process("route")
        .start("s")
        .complex("cg")
        .end("big")
        .end("huge")
        .end("small")
        .sequence("s", "cg")
        .flow("cg", "big", condition="amount > 100", id="to_big")
        .flow("cg", "huge", condition="amount > 1000", id="to_huge")
        .flow("cg", "small", id="to_small", default=True)
    )
    engine.deploy(p.build())
    for amount, passed in ((5000, {"big", "huge"}), (500, {"big"}), (5, {"small"})):
        inst = engine.start("route", {"amount": amount}, now=T0)
        ended = {
            e.node_id for e in engine.history(inst.id) if e.node_id in {"big", "huge", "small"}
        }
        assert ended == passed
        assert engine.get_instance(inst.id).state is InstanceState.COMPLETED


def test_a_model_as_camunda_modeler_writes_it(engine: Engine) -> None:
    model = parse_bpmn(MODELER.read_text())
    gateway = model.nodes["Gateway_two"]
    assert isinstance(gateway, n.ComplexGateway)
    assert gateway.default_flow == "Flow_normal"
    assert gateway.activation_condition == "activationCount >= 2 || veto"
    engine.deploy(MODELER.read_bytes().decode())
    plain = engine.start("reviews", {"veto": False}, now=T0)
    complete(engine, plain.id, "Activity_legal")
    complete(engine, plain.id, "Activity_money")
    assert open_tasks(engine, plain.id) == ["Activity_decide", "Activity_tech"]
    complete(engine, plain.id, "Activity_tech")
    assert open_tasks(engine, plain.id) == ["Activity_decide"]
    vetoed = engine.start("reviews", {"veto": False}, now=T0)
    complete(engine, vetoed.id, "Activity_tech", veto=True)  # one review with a veto fires
    assert "Activity_escalate" in open_tasks(engine, vetoed.id)
    assert "Activity_decide" not in open_tasks(engine, vetoed.id)
    complete(engine, vetoed.id, "Activity_legal")
    complete(engine, vetoed.id, "Activity_money")
    complete(engine, vetoed.id, "Activity_escalate")
    assert engine.get_instance(vetoed.id).state is InstanceState.COMPLETED
    assert fired(engine, vetoed.id, "Gateway_two") == 1


NO_WAY_OUT = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d">
  <bpmn:process id="stuck" isExecutable="true">
    <bpmn:startEvent id="s" />
    <bpmn:complexGateway id="cg" />
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="cg" />
  </bpmn:process>
</bpmn:definitions>
"""


def test_a_complex_gateway_without_outgoing_flows_is_refused_naming_it(engine: Engine) -> None:
    with pytest.raises(DeploymentError) as caught:
        engine.deploy(NO_WAY_OUT)
    (problem,) = caught.value.problems
    assert problem.element_id == "cg" and problem.element_type == "bpmn:complexGateway"
    assert "complex gateway 'cg' has no outgoing sequence flow" in problem.message
    assert problem.line == 5
    assert engine.definitions("stuck") == []  # nothing deployed
    with pytest.raises(DeploymentError, match="complex gateway 'cg' has no outgoing"):
        Process("stuck").start("s").complex("cg").sequence("s", "cg").build()


def test_a_bad_activation_condition_is_refused_naming_the_gateway() -> None:
    with pytest.raises(DeploymentError) as caught:
        parse_bpmn(
            NO_WAY_OUT.replace(
                '<bpmn:complexGateway id="cg" />',
                '<bpmn:complexGateway id="cg"><bpmn:activationCondition>${activationCount &gt;'
                "</bpmn:activationCondition></bpmn:complexGateway>"
                '<bpmn:endEvent id="e" />'
                '<bpmn:sequenceFlow id="f2" sourceRef="cg" targetRef="e" />',
            )
        )
    (problem,) = caught.value.problems
    assert problem.element_id == "cg" and "activation condition" in problem.message


def test_in_a_sub_process_the_round_is_the_sub_processs(engine: Engine) -> None:
    def inside(b: Process) -> object:
        b = b.start("ss").parallel("fork").user_task("a").user_task("b")
        b = b.complex("cg", activation="activationCount >= 1").user_task("inner").end("se")
        return (
            b.sequence("ss", "fork", "a", "cg")
            .sequence("fork", "b", "cg")
            .sequence("cg", "inner", "se")
        )

    engine.deploy(
        Process("nested")
        .start("s")
        .sub_process("sub", inside)
        .user_task("outer")
        .end("e")
        .sequence("s", "sub", "outer", "e")
        .build()
    )
    inst = engine.start("nested", now=T0)
    complete(engine, inst.id, "a")
    assert open_tasks(engine, inst.id) == ["b", "inner"]
    assert live_at(engine, inst.id, "cg") == ["reset 1"]
    complete(engine, inst.id, "inner")  # the marker still waits for b: the sub-process too
    assert open_tasks(engine, inst.id) == ["b"]
    complete(engine, inst.id, "b")  # consumed; the round ends; the sub-process completes
    assert open_tasks(engine, inst.id) == ["outer"] and fired(engine, inst.id) == 1
    complete(engine, inst.id, "outer")
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
