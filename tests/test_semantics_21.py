"""Semantics as the peers' own tests define them (issue 21, item 1): the sixteen
behaviours, each on both backends. Models named ``camunda/...`` are Camunda 7's own test
files (Apache-2.0), copied unchanged into ``tests/conformance/models/`` (PROVENANCE there)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bpm.bpmn import parse_bpmn
from bpm.builder import Process
from bpm.dialects import juel_to_cel
from bpm.errors import DeploymentError, ExpressionError
from bpm.expressions import compile_condition
from bpm.testing import BpmTest, assert_that

T0 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)
CAMUNDA = Path(__file__).parent / "conformance" / "models" / "camunda"


def tasks(kit: BpmTest, inst: object) -> list[str]:
    """The nodes of the instance's open user tasks, sorted."""
    return sorted(t.node_id for t in kit.engine.user_tasks(getattr(inst, "id", str(inst))))


@pytest.fixture
def kit(database_url: str) -> Iterator[BpmTest]:
    """The test kit on each backend (a fresh database per test)."""
    k = BpmTest.create(database_url, start=T0)
    undo = k.activate()
    try:
        yield k
    finally:
        undo()
        k.close()


# -- 1. a parallel join fires when every incoming flow has a token, whatever fork -------


def test_unstructured_join_of_two_nested_forks_fires(kit: BpmTest) -> None:
    # ParallelGatewayTest.testUnstructuredConcurrencyTwoForks
    kit.deploy(CAMUNDA / "ParallelGatewayTest.testUnstructuredConcurrencyTwoForks.bpmn20.xml")
    inst = kit.start("unstructuredConcurrencyTwoForks")
    assert_that(inst).is_completed().has_passed("join", "theEnd").has_no_incidents()


def test_unstructured_two_joins_fire(kit: BpmTest) -> None:
    # ParallelGatewayTest.testUnstructuredConcurrencyTwoJoins
    kit.deploy(CAMUNDA / "ParallelGatewayTest.testUnstructuredConcurrencyTwoJoins.bpmn20.xml")
    inst = kit.start("unstructuredConcurrencyTwoJoins")
    assert_that(inst).is_completed().has_no_incidents()


def test_unbalanced_fork_join_waits_for_each_flow(kit: BpmTest) -> None:
    # ParallelGatewayTest.testUnbalancedForkJoin
    kit.deploy(CAMUNDA / "ParallelGatewayTest.testUnbalancedForkJoin.bpmn20.xml")
    inst = kit.start("UnbalancedForkJoin")
    assert sorted(kit.waiting_at(inst)) == ["task1", "task2", "task3"]
    kit.complete(inst, "task1")
    assert sorted(kit.waiting_at(inst)) == ["firstJoin", "task2", "task3"]
    kit.complete(inst, "task2")
    assert sorted(kit.waiting_at(inst)) == ["task3", "task4"]
    kit.complete(inst, "task3")
    assert_that(inst).is_active()
    kit.complete(inst, "task4")
    assert_that(inst).is_completed()


# -- 2. JUEL `/` divides as decimals (EL 1.4.2.2), or the expression is refused ----------


def test_juel_division_is_decimal_in_a_completion_condition(kit: BpmTest) -> None:
    # MultiInstanceTest.testParallelUserTasksCompletionCondition: 3 of 5 is >= 0.5
    kit.deploy(CAMUNDA / "MultiInstanceTest.testParallelUserTasksCompletionCondition.bpmn20.xml")
    inst = kit.start("miParallelUserTasksCompletionCondition")
    tasks = kit.engine.user_tasks(inst.id)
    assert len(tasks) == 5
    for i, task in enumerate(tasks[:3]):
        assert len(kit.engine.user_tasks(inst.id)) == 5 - i
        kit.engine.complete_user_task(task.id, {})
        kit.run()
    assert_that(inst).is_completed()
    assert kit.engine.user_tasks(inst.id) == []


@pytest.mark.parametrize(
    ("juel", "cel"),
    [
        ("${a/b >= 0.6}", "double(a) / double(b) >= 0.6"),
        ("${a div b > 0.5}", "double(a) / double(b) > 0.5"),
        ("${x.n[0] / (c + d) > 1}", "double(x.n[0]) / double((c + d)) > 1"),
        ("${'a/b' == s}", "'a/b' == s"),
        ("a / b > 0", "a / b > 0"),  # plain CEL keeps CEL's rules
    ],
)
def test_juel_division_translation(juel: str, cel: str) -> None:
    assert juel_to_cel(juel) == cel


@pytest.mark.parametrize("juel", ["${a * b / c > 1}", "${a / b + 1 > 1}", "${-a / b > 1}"])
def test_juel_division_in_a_chain_is_refused_and_nothing_deploys(kit: BpmTest, juel: str) -> None:
    before = kit.engine.definitions()
    with pytest.raises((DeploymentError, ExpressionError), match="mixed arithmetic"):
        kit.deploy(
            Process("chained")
            .start("s")
            .exclusive("gw")
            .end("yes")
            .end("no")
            .sequence("s", "gw")
            .flow("gw", "yes", condition=juel)
            .flow("gw", "no", default=True)
        )
    assert kit.engine.definitions() == before


# -- 3. a terminate end event in a called process completes the call activity ------------


@pytest.mark.parametrize(
    ("caller", "child"),
    [
        ("testTerminateInCallActivity", "subProcessTerminate"),
        ("testTerminateInCallActivityConcurrent", "subProcessConcurrentTerminate"),
        ("testTerminateInCallActivityMulitInstance", "subProcessTerminate"),
    ],
)
def test_terminate_in_a_called_process_continues_the_caller(
    kit: BpmTest, caller: str, child: str
) -> None:
    # TerminateEndEventTest.testTerminateInCallActivity{,Concurrent,MulitInstance}
    kit.deploy(
        CAMUNDA / f"TerminateEndEventTest.{caller}.bpmn",
        CAMUNDA / f"TerminateEndEventTest.{child}.bpmn",
    )
    inst = kit.start("terminateEndEventExample")
    assert kit.waiting_at(inst) == ["preNormalEnd"]
    assert_that(inst).has_passed("CallActivity_1", "EndEvent_1").has_no_incidents()
    kit.complete(inst, "preNormalEnd")
    assert_that(inst).is_completed()


# -- 4. a process catches its own signal ---------------------------------------------------

OWN_SIGNAL = """<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" targetNamespace="t">
  <signal id="sig" name="alert"/>
  <process id="own_signal" isExecutable="true">
    <startEvent id="s"/>
    <sequenceFlow id="f1" sourceRef="s" targetRef="throw"/>
    <intermediateThrowEvent id="throw">
      <signalEventDefinition signalRef="sig"/>
    </intermediateThrowEvent>
    <sequenceFlow id="f2" sourceRef="throw" targetRef="work"/>
    <userTask id="work"/>
    <sequenceFlow id="f3" sourceRef="work" targetRef="e"/>
    <endEvent id="e"/>
    <subProcess id="esp" triggeredByEvent="true">
      <startEvent id="caught" isInterrupting="false">
        <signalEventDefinition signalRef="sig"/>
      </startEvent>
      <sequenceFlow id="f4" sourceRef="caught" targetRef="noted"/>
      <userTask id="noted"/>
      <sequenceFlow id="f5" sourceRef="noted" targetRef="esp_end"/>
      <endEvent id="esp_end"/>
    </subProcess>
  </process>
</definitions>"""


def test_a_process_catches_its_own_signal_in_its_event_sub_process_once(kit: BpmTest) -> None:
    kit.deploy(OWN_SIGNAL)
    inst = kit.start("own_signal")
    # caught once (the listener at 'caught' waits for the next one)
    assert sorted(kit.waiting_at(inst)) == ["caught", "noted", "work"]
    kit.run()  # the broadcast after commit does not deliver it a second time
    assert sorted(kit.waiting_at(inst)) == ["caught", "noted", "work"]
    kit.complete(inst, "noted")
    kit.complete(inst, "work")
    assert_that(inst).is_completed().has_no_incidents()


def test_a_signal_that_interrupts_its_thrower_does_not_continue_it(kit: BpmTest) -> None:
    # SignalEventTest.testNoContinuationWhenSignalInterruptsThrowingActivity (CAM-4527)
    kit.deploy(
        CAMUNDA
        / "SignalEventTest.testNoContinuationWhenSignalInterruptsThrowingActivity.bpmn20.xml"
    )
    inst = kit.start("signalEventSubProcess")
    kit.complete(inst, "subProcessTask")
    assert tasks(kit, inst) == ["eventSubProcessTask"]
    assert_that(inst).has_not_passed("afterSubProcessTask")


def test_a_signal_thrown_in_an_event_sub_process_reaches_a_boundary_around_it(
    kit: BpmTest,
) -> None:
    # SignalEventTest.testThrownSignalInEventSubprocessInSubprocess
    kit.deploy(CAMUNDA / "SignalEventTest.testThrownSignalInEventSubprocessInSubprocess.bpmn20.xml")
    inst = kit.start("embeddedEventSubprocess")
    assert tasks(kit, inst) == ["Task_1m1z433"]
    kit.advance("PT10S")
    assert tasks(kit, inst) == ["Task_1f50q9l"]
    assert kit.engine.timers(inst.id) == []


# -- 5. an error or escalation thrown in an event sub-process leaves it -------------------


def _rethrowing(kind: str, inner: str, *, outer_catch: bool = False) -> str:
    """A process whose event sub-process (catching every ``kind``) throws ``kind`` again
    after ``inner`` (a user task or nothing); ``outer_catch``: all of it inside a
    sub-process with a boundary event of that kind."""
    definition = (
        '<errorEventDefinition errorRef="boom"/>'
        if kind == "error"
        else '<escalationEventDefinition escalationRef="up"/>'
    )
    catch_all = "<errorEventDefinition/>" if kind == "error" else "<escalationEventDefinition/>"
    task = '<userTask id="inner_task"/>' if inner == "task" else ""
    first = "inner_task" if inner == "task" else "rethrow"
    after = (
        '<sequenceFlow id="f_it" sourceRef="inner_task" targetRef="rethrow"/>'
        if inner == "task"
        else ""
    )
    body = f"""
      <startEvent id="s"/>
      <sequenceFlow id="f1" sourceRef="s" targetRef="throw"/>
      <endEvent id="throw">{definition}</endEvent>
      <subProcess id="esp" triggeredByEvent="true">
        <startEvent id="caught">{catch_all}</startEvent>
        <sequenceFlow id="f2" sourceRef="caught" targetRef="{first}"/>
        {task}{after}
        <endEvent id="rethrow">{definition}</endEvent>
      </subProcess>"""
    if outer_catch:
        body = f"""
      <startEvent id="ps"/>
      <sequenceFlow id="p1" sourceRef="ps" targetRef="sub"/>
      <subProcess id="sub">{body}</subProcess>
      <sequenceFlow id="p2" sourceRef="sub" targetRef="normal"/>
      <endEvent id="normal"/>
      <boundaryEvent id="outer" attachedToRef="sub">{catch_all}</boundaryEvent>
      <sequenceFlow id="p3" sourceRef="outer" targetRef="handled"/>
      <userTask id="handled"/>"""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" targetNamespace="t">
  <error id="boom" errorCode="BOOM"/>
  <escalation id="up" escalationCode="UP"/>
  <process id="rethrow_{kind}" isExecutable="true">{body}
  </process>
</definitions>"""


@pytest.mark.parametrize("kind", ["error", "escalation"])
def test_a_throw_in_an_event_sub_process_without_wait_ends(kit: BpmTest, kind: str) -> None:
    kit.deploy(_rethrowing(kind, "none"))
    inst = kit.start(f"rethrow_{kind}")  # returned: no loop
    assert_that(inst).is_ended().has_passed("caught", "rethrow")
    caught = [e for e in kit.engine.history(inst.id) if e.node_id == "caught"]
    assert len({e.token_id for e in caught if e.token_id}) == 1


@pytest.mark.parametrize("kind", ["error", "escalation"])
def test_a_throw_after_a_task_in_an_event_sub_process_does_not_reopen_it(
    kit: BpmTest, kind: str
) -> None:
    kit.deploy(_rethrowing(kind, "task"))
    inst = kit.start(f"rethrow_{kind}")
    assert tasks(kit, inst) == ["inner_task"]
    kit.complete(inst, "inner_task")
    assert tasks(kit, inst) == []
    assert_that(inst).is_ended()


@pytest.mark.parametrize("kind", ["error", "escalation"])
def test_a_throw_in_an_event_sub_process_reaches_the_boundary_around_its_parent(
    kit: BpmTest, kind: str
) -> None:
    kit.deploy(_rethrowing(kind, "task", outer_catch=True))
    inst = kit.start(f"rethrow_{kind}")
    kit.complete(inst, "inner_task")
    assert tasks(kit, inst) == ["handled"]
    assert_that(inst).has_not_passed("normal")


# -- 6. a failing output mapping of a completed task is an incident on its token ----------

FAILING_OUTPUT = """<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:camunda="http://camunda.org/schema/1.0/bpmn" targetNamespace="t">
  <process id="failing_output" isExecutable="true">
    <startEvent id="s"/>
    <sequenceFlow id="f1" sourceRef="s" targetRef="work"/>
    <{tag} id="work" {attrs}>
      <extensionElements><camunda:inputOutput>
        <camunda:outputParameter name="total">${{price * 2}}</camunda:outputParameter>
      </camunda:inputOutput></extensionElements>
    </{tag}>
    <sequenceFlow id="f2" sourceRef="work" targetRef="e"/>
    <endEvent id="e"/>
  </process>
</definitions>"""


@pytest.mark.parametrize("task", ["user", "external"])
def test_a_failing_output_mapping_on_complete_opens_an_incident(kit: BpmTest, task: str) -> None:
    tag, attrs = (
        ("userTask", "")
        if task == "user"
        else ("serviceTask", 'camunda:type="external" camunda:topic="t"')
    )
    kit.deploy(FAILING_OUTPUT.format(tag=tag, attrs=attrs))
    inst = kit.start("failing_output")
    kit.complete(inst, "work", {"other": 1})  # no IllegalTransition out of the complete
    (incident,) = kit.engine.incidents(inst.id)
    assert incident.type == "failedMapping" and incident.node_id == "work"
    assert "output mapping of 'work'" in incident.message
    assert_that(inst).is_active().has_not_passed("e")
    assert "total" not in kit.variables(inst)
    # the cause fixed, a retry runs the task again
    kit.engine.set_variables(inst.id, {"price": 4})
    kit.engine.retry_incident(incident.id)
    kit.run()
    kit.complete(inst, "work")
    assert_that(inst).is_completed().has_variables(total=8)


# -- 7. an unset variable named like a CEL type fails as unset ----------------------------


@pytest.mark.parametrize("name", ["list", "map", "int", "string", "type", "bool", "double"])
def test_an_unset_variable_named_like_a_cel_type_fails_as_unset(kit: BpmTest, name: str) -> None:
    kit.deploy(
        Process("typed")
        .start("s")
        .exclusive("gw")
        .end("yes")
        .end("no")
        .sequence("s", "gw")
        .flow("gw", "yes", condition=f"{name} == null")
        .flow("gw", "no", default=True)
    )
    inst = kit.start("typed")
    (incident,) = kit.engine.incidents(inst.id)
    assert incident.node_id == "gw" and f"'{name}'" in incident.message
    assert_that(inst).has_not_passed("yes", "no")
    # set, it reads as the variable
    other = kit.start("typed", {name: None})
    assert_that(other).is_completed().has_passed("yes")


def test_type_names_as_types_and_conversions_still_work() -> None:
    assert compile_condition("type(x) == list && string(n) == '1'").evaluate({"x": [], "n": 1})
    empty = compile_condition(juel_to_cel("${empty list}"))
    assert empty.evaluate({"list": []})
    with pytest.raises(ExpressionError, match="'list'"):
        empty.evaluate({})


# -- 8. calledElementBinding="deployment" calls the version deployed with the caller ------

CALLER = """<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:camunda="http://camunda.org/schema/1.0/bpmn" targetNamespace="t">
  <process id="caller" isExecutable="true" name="{mark}">
    <startEvent id="s"/>
    <sequenceFlow id="f1" sourceRef="s" targetRef="call"/>
    <callActivity id="call" calledElement="callee" camunda:calledElementBinding="deployment"/>
    <sequenceFlow id="f2" sourceRef="call" targetRef="e"/>
    <endEvent id="e"/>
  </process>
</definitions>"""

CALLEE = """<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" targetNamespace="t">
  <process id="callee" isExecutable="true">
    <startEvent id="s"/>
    <sequenceFlow id="f1" sourceRef="s" targetRef="work"/>
    <userTask id="work" name="{mark}"/>
    <sequenceFlow id="f2" sourceRef="work" targetRef="e"/>
    <endEvent id="e"/>
  </process>
</definitions>"""


def _called(kit: BpmTest) -> str | None:
    inst = kit.start("caller")
    (child,) = kit.engine.get_instance(inst.id).children
    return kit.engine.user_tasks(child)[0].name


def test_deployment_binding_without_the_callee_in_the_deployment_is_an_incident(
    kit: BpmTest,
) -> None:
    kit.engine.create_deployment(("callee.bpmn", CALLEE.format(mark="v1")))
    kit.engine.create_deployment(("caller.bpmn", CALLER.format(mark="c1")))
    inst = kit.start("caller")
    (incident,) = kit.engine.incidents(inst.id)
    assert incident.node_id == "call" and "binding deployment" in incident.message
    assert kit.engine.get_instance(inst.id).children == ()
    assert kit.engine.user_tasks() == []


def test_deployment_binding_calls_the_version_deployed_with_the_caller(kit: BpmTest) -> None:
    kit.engine.create_deployment(
        ("caller.bpmn", CALLER.format(mark="c1")), ("callee.bpmn", CALLEE.format(mark="v1"))
    )
    # the callee's file again, unchanged, beside a changed caller: it keeps version 1
    kit.engine.create_deployment(
        ("caller.bpmn", CALLER.format(mark="c2")), ("callee.bpmn", CALLEE.format(mark="v1"))
    )
    kit.engine.create_deployment(("callee.bpmn", CALLEE.format(mark="v2")))
    assert _called(kit) == "v1"


# -- 9. a gateway without outgoing flows is an implicit end --------------------------------


@pytest.mark.parametrize("gateway", ["exclusiveGateway", "parallelGateway", "inclusiveGateway"])
def test_a_gateway_without_outgoing_flows_ends_its_path(kit: BpmTest, gateway: str) -> None:
    kit.deploy(f"""<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" targetNamespace="t">
  <process id="dead_end" isExecutable="true">
    <startEvent id="s"/>
    <sequenceFlow id="f1" sourceRef="s" targetRef="gw"/>
    <{gateway} id="gw"/>
  </process>
</definitions>""")
    inst = kit.start("dead_end")
    assert_that(inst).is_completed().has_passed("gw").has_no_incidents()


def test_an_event_gateway_without_outgoing_flows_is_still_refused(kit: BpmTest) -> None:
    before = kit.engine.definitions()
    with pytest.raises(DeploymentError, match="no outgoing sequence flow"):
        kit.deploy(Process("stuck").start("s").event_gateway("gw").sequence("s", "gw"))
    assert kit.engine.definitions() == before


# -- 10. conditions on flows leaving a start event ------------------------------------------


def test_conditions_on_flows_leaving_a_start_event_choose_the_paths(kit: BpmTest) -> None:
    kit.deploy(
        Process("start_choice")
        .start("s")
        .end("big")
        .end("small")
        .end("always")
        .flow("s", "big", condition="amount > 10", id="to_big")
        .flow("s", "small", condition="amount <= 10", id="to_small")
        .flow("s", "always", id="to_always")
    )
    inst = kit.start("start_choice", {"amount": 20})
    assert_that(inst).is_completed().has_passed("big", "always").has_not_passed("small")
    other = kit.start("start_choice", {"amount": 1})
    assert_that(other).is_completed().has_passed("small", "always").has_not_passed("big")


# -- 12. an errorRef naming no bpmn:error is the error code ----------------------------------


def test_an_error_ref_without_an_error_element_is_the_code(kit: BpmTest) -> None:
    kit.deploy("""<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" targetNamespace="t">
  <process id="raw_ref" isExecutable="true">
    <startEvent id="s"/>
    <sequenceFlow id="f1" sourceRef="s" targetRef="sub"/>
    <subProcess id="sub">
      <startEvent id="ss"/>
      <sequenceFlow id="f2" sourceRef="ss" targetRef="boom"/>
      <endEvent id="boom"><errorEventDefinition errorRef="PAYMENT_FAILED"/></endEvent>
    </subProcess>
    <sequenceFlow id="f3" sourceRef="sub" targetRef="normal"/>
    <endEvent id="normal"/>
    <boundaryEvent id="caught" attachedToRef="sub">
      <errorEventDefinition errorRef="PAYMENT_FAILED"/>
    </boundaryEvent>
    <sequenceFlow id="f4" sourceRef="caught" targetRef="handled"/>
    <endEvent id="handled"/>
  </process>
</definitions>""")
    inst = kit.start("raw_ref")
    assert_that(inst).is_completed().has_passed("caught", "handled").has_not_passed("normal")
    assert kit.variables(inst)["error_code"] == "PAYMENT_FAILED"


# -- 15. expressions inside task attributes are evaluated ----------------------------------


def test_expressions_in_user_task_attributes_are_evaluated(kit: BpmTest) -> None:
    # MultiInstanceTest.testParallelUserTasksBasedOnCollection: name="My Task ${loopCounter}",
    # camunda:assignee="${assignee}" per inner instance, completion condition 3/5 >= 0.6
    kit.deploy(CAMUNDA / "MultiInstanceTest.testParallelUserTasksBasedOnCollection.bpmn20.xml")
    people = ["kermit", "gonzo", "mispiggy", "fozzie", "bubba"]
    inst = kit.start("miParallelUserTasksBasedOnCollection", {"assigneeList": people})
    found = sorted(kit.engine.user_tasks(inst.id), key=lambda t: t.assignee or "")
    assert [t.assignee for t in found] == sorted(people)
    assert sorted(t.name or "" for t in found) == [f"My Task {i}" for i in range(5)]
    for task in found[:3]:
        kit.engine.complete_user_task(task.id, {})
        kit.run()
    assert kit.engine.user_tasks(inst.id) == []
    assert_that(inst).is_completed()


def test_expressions_in_candidates_due_date_and_priority(kit: BpmTest) -> None:
    kit.deploy("""<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:camunda="http://camunda.org/schema/1.0/bpmn" targetNamespace="t">
  <process id="attrs" isExecutable="true">
    <startEvent id="s"/>
    <sequenceFlow id="f1" sourceRef="s" targetRef="t"/>
    <userTask id="t" name="Review ${order.id}" camunda:assignee="${order.owner}"
        camunda:candidateUsers="${order.owner},${deputy}"
        camunda:candidateGroups="${order.team}" camunda:dueDate="${order.due}"
        camunda:priority="${order.rank * 10}"/>
    <sequenceFlow id="f2" sourceRef="t" targetRef="e"/>
    <endEvent id="e"/>
  </process>
</definitions>""")
    order = {"id": 7, "owner": "ann", "team": "sales", "due": "2030-02-01T00:00:00Z", "rank": 3}
    inst = kit.start("attrs", {"order": order, "deputy": "bob"})
    (task,) = kit.engine.user_tasks(inst.id)
    assert (task.name, task.assignee, task.priority) == ("Review 7", "ann", 30)
    assert task.candidate_users == ("ann", "bob") and task.candidate_groups == ("sales",)
    assert task.due_at == datetime(2030, 2, 1, tzinfo=UTC)
    # unset: the setting is empty, the task is still made
    other = kit.start("attrs", {"order": {"id": 8}})
    (task,) = kit.engine.user_tasks(other.id)
    assert (task.name, task.assignee, task.due_at, task.priority) == ("Review 8", None, None, 50)


# -- 16. camunda:out of a variable the child never set writes null -------------------------


def test_camunda_out_of_an_unset_child_variable_writes_null(kit: BpmTest) -> None:
    kit.deploy(
        """<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:camunda="http://camunda.org/schema/1.0/bpmn" targetNamespace="t">
  <process id="parent" isExecutable="true">
    <startEvent id="s"/>
    <sequenceFlow id="f1" sourceRef="s" targetRef="call"/>
    <callActivity id="call" calledElement="kid">
      <extensionElements>
        <camunda:in source="given" target="given"/>
        <camunda:out source="never" target="result"/>
        <camunda:out source="given" target="back"/>
      </extensionElements>
    </callActivity>
    <sequenceFlow id="f2" sourceRef="call" targetRef="e"/>
    <endEvent id="e"/>
  </process>
  <process id="kid" isExecutable="true">
    <startEvent id="ks"/>
    <sequenceFlow id="k1" sourceRef="ks" targetRef="ke"/>
    <endEvent id="ke"/>
  </process>
</definitions>"""
    )
    inst = kit.start("parent", {"given": 1})
    assert_that(inst).is_completed().has_no_incidents().has_variables(result=None, back=1)


# -- 11. cron timeCycle on intermediate and boundary timers --------------------------------

CRON_TIMERS = """<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" targetNamespace="t">
  <process id="crons" isExecutable="true">
    <startEvent id="s"/>
    <sequenceFlow id="f1" sourceRef="s" targetRef="wait"/>
    <intermediateCatchEvent id="wait">
      <timerEventDefinition><timeCycle>0 0 10 * * ?</timeCycle></timerEventDefinition>
    </intermediateCatchEvent>
    <sequenceFlow id="f2" sourceRef="wait" targetRef="work"/>
    <userTask id="work"/>
    <sequenceFlow id="f3" sourceRef="work" targetRef="e"/>
    <endEvent id="e"/>
    <boundaryEvent id="remind" attachedToRef="work" cancelActivity="false">
      <timerEventDefinition><timeCycle>0 */30 * * * ?</timeCycle></timerEventDefinition>
    </boundaryEvent>
    <sequenceFlow id="f4" sourceRef="remind" targetRef="nudge"/>
    <userTask id="nudge"/>
  </process>
</definitions>"""


def test_cron_cycles_on_intermediate_and_boundary_timers(kit: BpmTest) -> None:
    kit.deploy(CRON_TIMERS)
    inst = kit.start("crons")  # 09:00
    (timer,) = kit.engine.timers(inst.id)
    assert timer.fire_at == datetime(2030, 1, 1, 10, 0, tzinfo=UTC)
    kit.advance_to(datetime(2030, 1, 1, 10, 0, tzinfo=UTC))
    assert tasks(kit, inst) == ["work"]
    kit.advance_to(datetime(2030, 1, 1, 11, 0, tzinfo=UTC))  # 10:30 and 11:00
    assert tasks(kit, inst) == ["nudge", "nudge", "work"]
    (pending,) = kit.engine.timers(inst.id)
    assert pending.fire_at == datetime(2030, 1, 1, 11, 30, tzinfo=UTC)
    kit.complete(inst, "work")
    assert kit.engine.timers(inst.id) == []


CRON_EVENT_SUB_PROCESS = """<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" targetNamespace="t">
  <process id="cron_esp" isExecutable="true">
    <startEvent id="s"/>
    <sequenceFlow id="f1" sourceRef="s" targetRef="work"/>
    <userTask id="work"/>
    <sequenceFlow id="f2" sourceRef="work" targetRef="e"/>
    <endEvent id="e"/>
    <subProcess id="esp" triggeredByEvent="true">
      <startEvent id="tick" isInterrupting="false">
        <timerEventDefinition><timeCycle>0 */30 * * * ?</timeCycle></timerEventDefinition>
      </startEvent>
      <sequenceFlow id="f3" sourceRef="tick" targetRef="nudge"/>
      <userTask id="nudge"/>
    </subProcess>
  </process>
</definitions>"""


def test_a_cron_cycle_starts_a_non_interrupting_event_sub_process_at_every_match(
    kit: BpmTest,
) -> None:
    # Camunda's StartTimerEventTest.testNonInterruptingTimeCycleInEventSubProcess: it was an
    # incident ("not a supported cycle") when the instance started
    kit.deploy(CRON_EVENT_SUB_PROCESS)
    inst = kit.start("cron_esp")  # 09:00
    assert_that(inst).has_no_incidents()
    (timer,) = kit.engine.timers(inst.id)
    assert timer.fire_at == datetime(2030, 1, 1, 9, 30, tzinfo=UTC)
    kit.advance_to(datetime(2030, 1, 1, 10, 0, tzinfo=UTC))  # 09:30 and 10:00
    assert tasks(kit, inst) == ["nudge", "nudge", "work"]
    (pending,) = kit.engine.timers(inst.id)
    assert pending.fire_at == datetime(2030, 1, 1, 10, 30, tzinfo=UTC)
    for task in kit.engine.user_tasks(inst.id):
        kit.engine.complete_user_task(task.id, {})
        kit.run()
    assert_that(inst).is_completed()
    assert kit.engine.timers(inst.id) == []


def test_a_cron_that_does_not_parse_is_refused_and_nothing_deploys(kit: BpmTest) -> None:
    before = kit.engine.definitions()
    with pytest.raises(DeploymentError, match="wait"):
        kit.deploy(CRON_TIMERS.replace("0 0 10 * * ?", "0 0 99 * * ?"))
    assert kit.engine.definitions() == before


# -- 13. isForCompensation on a compensation event sub-process is accepted -----------------

COMPENSATION_ESP = """<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" targetNamespace="t">
  <process id="comp_esp" isExecutable="true">
    <startEvent id="s"/>
    <sequenceFlow id="f1" sourceRef="s" targetRef="sub"/>
    <subProcess id="sub">
      <startEvent id="ss"/>
      <sequenceFlow id="f2" sourceRef="ss" targetRef="book"/>
      <userTask id="book"/>
      <sequenceFlow id="f3" sourceRef="book" targetRef="se"/>
      <endEvent id="se"/>
      <subProcess id="undo" triggeredByEvent="true" {attr}>
        <startEvent id="us"><compensateEventDefinition/></startEvent>
        <sequenceFlow id="f4" sourceRef="us" targetRef="unbook"/>
        <userTask id="unbook"/>
        <sequenceFlow id="f5" sourceRef="unbook" targetRef="ue"/>
        <endEvent id="ue"/>
      </subProcess>
    </subProcess>
    <sequenceFlow id="f6" sourceRef="sub" targetRef="undo_all"/>
    <endEvent id="undo_all"><compensateEventDefinition/></endEvent>
  </process>
</definitions>"""


@pytest.mark.parametrize("attr", ['isForCompensation="true"', ""])
def test_is_for_compensation_on_a_compensation_event_sub_process(kit: BpmTest, attr: str) -> None:
    (definition,) = kit.deploy(COMPENSATION_ESP.format(attr=attr)).definitions
    assert definition.key == "comp_esp"
    inst = kit.start("comp_esp")
    kit.complete(inst, "book")
    assert tasks(kit, inst) == ["unbook"]  # the event sub-process compensates the sub-process
    kit.complete(inst, "unbook")
    assert_that(inst).is_ended()


def test_is_for_compensation_on_another_event_sub_process_is_ignored_with_a_warning(
    kit: BpmTest,
) -> None:
    text = (
        COMPENSATION_ESP.format(attr='isForCompensation="true"')
        .replace(
            "<compensateEventDefinition/></startEvent>",
            '<signalEventDefinition signalRef="sig"/></startEvent>',
        )
        .replace("<process ", '<signal id="sig" name="undo-now"/><process ')
    )
    model = parse_bpmn(text)
    assert any("isForCompensation" in w and "'undo'" in w for w in model.warnings)


# -- a parallel join fed by a loop through itself: warned at deploy -------------------------


def test_a_parallel_join_fed_by_a_loop_through_itself_is_warned(kit: BpmTest) -> None:
    looped = (
        Process("looped")
        .start("s")
        .parallel("join")
        .task("work")
        .exclusive("again")
        .end("e")
        .sequence("s", "join", "work", "again")
        .flow("again", "join", condition="n < 3", id="back")
        .flow("again", "e", default=True, id="out")
    )
    (definition,) = kit.deploy(looped).definitions  # deploys: a warning, not a refusal
    warnings = kit.engine.model(definition.id).warnings
    assert any("'join'" in w and "back" in w and "never fire" in w for w in warnings)
    # a structured loop around a fork and its join is not warned
    structured = (
        Process("structured")
        .start("s")
        .exclusive("merge")
        .parallel("fork")
        .task("a")
        .task("b")
        .parallel("join")
        .exclusive("again")
        .end("e")
        .sequence("s", "merge", "fork")
        .sequence("fork", "a", "join")
        .sequence("fork", "b", "join")
        .sequence("join", "again")
        .flow("again", "merge", condition="n < 3", id="back")
        .flow("again", "e", default=True, id="out")
    )
    (other,) = kit.deploy(structured).definitions
    assert not any("never fire" in w for w in kit.engine.model(other.id).warnings)
