"""Task listeners of user tasks (issue 25): ``assignment``, ``update``, ``complete``,
``timeout`` (with its timer) and the user task's ``end`` execution listeners, run on a
worker while the task is open, on both backends. A failing one takes the step's retry
policy and then an incident on the user task with nothing of it written; a ``complete``
listener's failure (or ``ctx.deny``) leaves the task open."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bpm.bpmn import parse_bpmn
from bpm.errors import InvalidOperation
from bpm.handlers import HandlerRegistry, TaskContext
from bpm.model import nodes as n
from bpm.runtime.states import InstanceState, TokenState
from tests.engine_helpers import claim_one, drain, finish_one, make_engine, table_dump

T0 = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)

BPMN = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d" targetNamespace="t">
  <bpmn:process id="review" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:userTask id="approve" ASSIGNEE>
      <bpmn:extensionElements>
        <camunda:taskListener event="assignment" delegateExpression="${onAssign}"/>
        <camunda:taskListener event="update" class="com.acme.OnUpdate"/>
        <camunda:taskListener event="complete" class="com.acme.OnComplete"/>
        <camunda:executionListener event="end" expression="${onEnd.run(execution)}"/>
        <camunda:taskListener event="timeout" id="remind" class="com.acme.Remind">
          <bpmn:timerEventDefinition><bpmn:timeDuration>PT1H</bpmn:timeDuration></bpmn:timerEventDefinition>
        </camunda:taskListener>
      </bpmn:extensionElements>
    </bpmn:userTask>
    <bpmn:endEvent id="e"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="approve"/>
    <bpmn:sequenceFlow id="f2" sourceRef="approve" targetRef="e"/>
  </bpmn:process>
</bpmn:definitions>
"""


class Calls:
    def __init__(self) -> None:
        self.seen: list[str] = []
        self.fail: set[str] = set()
        self.deny = False
        self.reassign: str | None = None
        self.bad_priority = False

    def registry(self) -> HandlerRegistry:
        reg = HandlerRegistry()

        def on_assign(ctx: TaskContext) -> dict[str, Any]:
            self.seen.append(f"assignment:{ctx.task['assignee']}")
            if self.reassign is not None:
                ctx.set_assignee(self.reassign)
            if self.bad_priority:
                ctx.update_task(priority="high", assignee="zed")
            return {"assigned_to": ctx.task["assignee"]}

        def on_update(ctx: TaskContext) -> dict[str, Any]:
            self.seen.append(f"update:{ctx.task['priority']}")
            return {"updates": int(ctx.variables.get("updates", 0)) + 1}

        def on_complete(ctx: TaskContext) -> dict[str, Any]:
            self.seen.append(f"complete:{ctx.variables.get('approved')}")
            if "complete" in self.fail:
                raise RuntimeError("the ledger is down")
            if self.deny:
                ctx.deny("needs a second approver")
            return {"checked": True}

        def on_end(ctx: TaskContext) -> dict[str, Any]:
            self.seen.append(f"{ctx.properties['bpm:listenerEvent']}:{ctx.variables['checked']}")
            return {"ended": True}

        def remind(ctx: TaskContext) -> dict[str, Any]:
            self.seen.append(f"timeout:{ctx.task['id'] is not None}")
            ctx.update_task(priority=80)
            return {"reminded": int(ctx.variables.get("reminded", 0)) + 1}

        reg.register("onAssign", on_assign)
        reg.register("com.acme.OnUpdate", on_update)
        reg.register("com.acme.OnComplete", on_complete)
        reg.register("onEnd.run", on_end)
        reg.register("com.acme.Remind", remind)
        return reg


def model(assignee: str = "") -> str:
    return BPMN.replace("ASSIGNEE", f'camunda:assignee="{assignee}"' if assignee else "")


def test_the_parser_reads_every_task_listener() -> None:
    parsed = parse_bpmn(model())
    node = parsed.node("approve")
    assert isinstance(node, n.UserTask)
    assert [(x.kind, x.event, x.handler) for x in node.listeners] == [
        ("execution", "end", "onEnd.run"),
        ("task", "assignment", "onAssign"),
        ("task", "update", "com.acme.OnUpdate"),
        ("task", "complete", "com.acme.OnComplete"),
        ("task", "timeout", "com.acme.Remind"),
    ]
    timeout = node.listeners[-1]
    assert timeout.timer == n.TimerSpec(n.TimerKind.DURATION, "PT1H")
    assert not [w for w in parsed.warnings if "istener" in w]
    again = type(parsed).from_dict(parsed.to_dict())  # stored and read back
    assert again.node("approve") == node


def test_assignment_at_create_and_on_claim_run_on_a_worker(database_url: str) -> None:
    calls = Calls()
    engine, q = make_engine(database_url, calls.registry())
    engine.deploy(model("${who}"))
    inst = engine.start("review", {"who": "ann"}, now=T0)
    assert calls.seen == []  # never in this (the API's) process
    (task,) = engine.user_tasks(instance_id=inst.id)
    assert task.assignee == "ann"
    drain(engine, q)
    assert calls.seen == ["assignment:ann"]
    assert engine.get_instance(inst.id).variables["assigned_to"] == "ann"
    engine.unclaim_user_task(task.id, now=T0)
    calls.reassign = "carl"  # the listener changes the assignee: applied to the task
    engine.claim_user_task(task.id, "bob", now=T0)
    drain(engine, q)
    assert calls.seen == [
        "assignment:ann",
        "update:50",
        "assignment:None",
        "update:50",
        "assignment:bob",
    ]
    (task,) = engine.user_tasks(instance_id=inst.id)
    assert task.assignee == "carl"
    (tok,) = [t for t in engine.get_instance(inst.id).tokens if t.node_id == "approve"]
    assert tok.state is TokenState.WAITING  # back on its task


def test_update_runs_on_property_changes(database_url: str) -> None:
    from bpm.engine.user_tasks import TaskChanges, update_user_task

    calls = Calls()
    engine, q = make_engine(database_url, calls.registry())
    engine.deploy(model())
    inst = engine.start("review", now=T0)
    (task,) = engine.user_tasks(instance_id=inst.id)
    assert drain(engine, q) == 0  # no assignee: nothing to run at create
    update_user_task(engine.core, task.id, TaskChanges(name="Approve", priority=70), now=T0)
    drain(engine, q)
    assert calls.seen == ["update:70"]
    assert engine.get_instance(inst.id).variables == {"updates": 1}


def test_complete_runs_its_listeners_then_the_end_listener_then_moves_on(
    database_url: str,
) -> None:
    calls = Calls()
    engine, q = make_engine(database_url, calls.registry())
    engine.deploy(model())
    inst = engine.start("review", {"n": 1}, now=T0)
    (task,) = engine.user_tasks(instance_id=inst.id)
    engine.complete_user_task(task.id, {"approved": True}, now=T0)
    assert calls.seen == []
    assert engine.get_instance(inst.id).variables == {"n": 1}  # the completion waits
    with pytest.raises(InvalidOperation, match="being completed"):
        engine.complete_user_task(task.id, {"approved": False}, now=T0)
    with pytest.raises(InvalidOperation, match="being completed"):
        engine.claim_user_task(task.id, "ann", now=T0)
    drain(engine, q)
    assert calls.seen == ["complete:True", "end:True"]
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.COMPLETED
    assert done.variables == {"n": 1, "approved": True, "checked": True, "ended": True}
    assert engine.user_tasks(instance_id=inst.id, state="completed")[0].id == task.id
    # the timeout listener's timer went with the task
    assert engine.fire_due_timers(now=T0 + timedelta(hours=2)) == 0


def test_a_failing_complete_listener_leaves_the_task_open_with_nothing_written(
    database_url: str,
) -> None:
    calls = Calls()
    calls.fail.add("complete")
    engine, q = make_engine(database_url, calls.registry())
    engine.deploy(model())
    inst = engine.start("review", {"n": 1}, now=T0)
    (task,) = engine.user_tasks(instance_id=inst.id)
    engine.complete_user_task(task.id, {"approved": True}, now=T0)
    drain(engine, q)
    assert calls.seen == ["complete:True"] * 3  # the default policy: 3 attempts
    (incident,) = engine.incidents(inst.id)
    assert incident.node_id == "approve"
    assert "complete listener 'com.acme.OnComplete' of 'approve' failed" in (incident.message or "")
    after = engine.get_instance(inst.id)
    assert after.variables == {"n": 1}  # nothing of the completion
    assert after.state is InstanceState.ACTIVE
    assert [t.id for t in engine.user_tasks(instance_id=inst.id)] == [task.id]  # still open
    calls.fail.clear()  # fixed: retrying the incident completes it
    engine.retry_incident(incident.id, now=T0)
    drain(engine, q)
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    assert engine.get_instance(inst.id).variables["approved"] is True


def test_a_denied_completion_keeps_the_task_open(database_url: str) -> None:
    calls = Calls()
    calls.deny = True
    engine, q = make_engine(database_url, calls.registry())
    engine.deploy(model())
    inst = engine.start("review", {"n": 1}, now=T0)
    (task,) = engine.user_tasks(instance_id=inst.id)
    engine.complete_user_task(task.id, {"approved": True}, now=T0)
    drain(engine, q)
    assert calls.seen == ["complete:True"]  # denied: no end listener, no incident
    assert engine.incidents(inst.id) == []
    assert engine.get_instance(inst.id).variables == {"n": 1}
    (denied,) = [e for e in engine.history(inst.id) if e.type == "user_task_completion_denied"]
    assert denied.payload["reason"] == "needs a second approver"
    (tok,) = [t for t in engine.get_instance(inst.id).tokens if t.node_id == "approve"]
    assert tok.state is TokenState.WAITING
    calls.deny = False
    engine.complete_user_task(task.id, {"approved": "twice"}, now=T0)
    drain(engine, q)
    assert engine.get_instance(inst.id).variables["approved"] == "twice"
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED


def test_a_timeout_listener_fires_on_its_timer_and_the_task_stays_open(
    database_url: str,
) -> None:
    calls = Calls()
    engine, q = make_engine(database_url, calls.registry())
    engine.deploy(model())
    inst = engine.start("review", now=T0)
    (task,) = engine.user_tasks(instance_id=inst.id)
    assert engine.fire_due_timers(now=T0 + timedelta(minutes=59)) == 0
    assert engine.fire_due_timers(now=T0 + timedelta(hours=1)) == 1
    assert calls.seen == []  # the poller queues it; a worker runs it
    drain(engine, q)
    assert calls.seen == ["timeout:True"]
    (task,) = engine.user_tasks(instance_id=inst.id)
    assert task.priority == 80  # the listener changed it
    assert engine.get_instance(inst.id).variables == {"reminded": 1}
    assert engine.fire_due_timers(now=T0 + timedelta(hours=5)) == 0  # once
    engine.complete_user_task(task.id, {"approved": True}, now=T0)
    drain(engine, q)
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED


def test_a_redelivered_message_runs_the_listeners_once_per_attempt(database_url: str) -> None:
    calls = Calls()
    engine, q = make_engine(database_url, calls.registry())
    engine.deploy(model("ann"))
    inst = engine.start("review", now=T0)
    (token_id,) = list(q.queue)
    from bpm.engine.execution import run_handler

    step = claim_one(engine.core, token_id, "worker-a", T0)
    assert step is not None and step.task is not None
    assert claim_one(engine.core, token_id, "worker-b", T0) is None  # a duplicate: held
    outcome = run_handler(engine.core, step, "worker-a")
    finish_one(engine.core, step, outcome, "worker-a", T0)
    assert engine.run_token(token_id) == 0  # redelivered after the finish: nothing runs
    assert calls.seen == ["assignment:ann"]
    assert len([e for e in engine.history(inst.id) if e.type == "listeners_ran"]) == 1


def test_a_listener_that_sets_a_bad_priority_changes_nothing(database_url: str) -> None:
    calls = Calls()
    calls.bad_priority = True
    engine, q = make_engine(database_url, calls.registry())
    engine.deploy(model("ann"))
    inst = engine.start("review", {"n": 1}, now=T0)
    drain(engine, q)
    (incident,) = engine.incidents(inst.id)
    assert incident.node_id == "approve" and "priority" in (incident.message or "")
    assert engine.get_instance(inst.id).variables == {"n": 1}
    (task,) = engine.user_tasks(instance_id=inst.id)
    assert (task.assignee, task.priority) == ("ann", 50)


BOUNDARY = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d" targetNamespace="t">
  <bpmn:process id="expiring" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:userTask id="approve" camunda:assignee="ann">
      <bpmn:extensionElements>
        <camunda:taskListener event="delete" class="com.acme.OnDelete"/>
        <camunda:executionListener event="end">
          <camunda:script scriptFormat="python">closed = task["id"] is not None</camunda:script>
        </camunda:executionListener>
        <camunda:taskListener event="assignment">
          <camunda:script scriptFormat="python">task["assignee"] = "desk-" + task["assignee"]
seen_assignee = task["assignee"]</camunda:script>
        </camunda:taskListener>
      </bpmn:extensionElements>
    </bpmn:userTask>
    <bpmn:boundaryEvent id="late" attachedToRef="approve">
      <bpmn:timerEventDefinition><bpmn:timeDuration>PT2H</bpmn:timeDuration></bpmn:timerEventDefinition>
    </bpmn:boundaryEvent>
    <bpmn:endEvent id="e"/>
    <bpmn:endEvent id="expired"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="approve"/>
    <bpmn:sequenceFlow id="f2" sourceRef="approve" targetRef="e"/>
    <bpmn:sequenceFlow id="f3" sourceRef="late" targetRef="expired"/>
  </bpmn:process>
</bpmn:definitions>
"""


def deleting_registry(seen: list[str], fail: set[str] | None = None) -> HandlerRegistry:
    reg = HandlerRegistry()
    failing = fail if fail is not None else set()

    def on_delete(ctx: TaskContext) -> dict[str, Any]:
        seen.append(f"delete:{ctx.task['assignee']}")
        if "delete" in failing:
            raise RuntimeError("audit log is down")
        return {"deleted": True}

    reg.register("com.acme.OnDelete", on_delete)
    return reg


def test_a_python_listener_changes_the_task_and_a_cancelled_task_runs_delete_listeners(
    database_url: str,
) -> None:
    seen: list[str] = []
    engine, q = make_engine(database_url, deleting_registry(seen))
    engine.deploy(BOUNDARY)
    inst = engine.start("expiring", now=T0)
    drain(engine, q)  # the assignment script (in the sandbox): task["assignee"] applies
    (task,) = engine.user_tasks(instance_id=inst.id)
    assert task.assignee == "desk-ann"
    assert engine.get_instance(inst.id).variables == {"seen_assignee": "desk-ann"}
    assert engine.fire_due_timers(now=T0 + timedelta(hours=2)) == 1  # interrupts the task
    assert engine.user_tasks(instance_id=inst.id) == []
    assert engine.get_instance(inst.id).state is InstanceState.ACTIVE  # delete listeners first
    drain(engine, q)
    assert seen == ["delete:desk-ann"]
    done = engine.get_instance(inst.id)
    assert done.state is InstanceState.COMPLETED
    assert done.variables == {"seen_assignee": "desk-ann", "deleted": True, "closed": True}


def test_a_failing_delete_listener_is_an_incident_and_retrying_it_ends_the_instance(
    database_url: str,
) -> None:
    seen: list[str] = []
    failing = {"delete"}
    engine, q = make_engine(database_url, deleting_registry(seen, failing))
    engine.deploy(BOUNDARY)
    inst = engine.start("expiring", now=T0)
    drain(engine, q)
    engine.fire_due_timers(now=T0 + timedelta(hours=2))
    drain(engine, q)
    assert seen == ["delete:desk-ann"] * 3
    (incident,) = engine.incidents(inst.id)
    assert incident.node_id == "approve"
    assert "delete listener 'com.acme.OnDelete'" in (incident.message or "")
    assert "deleted" not in engine.get_instance(inst.id).variables
    failing.clear()  # fixed
    engine.retry_incident(incident.id, now=T0)
    drain(engine, q)
    assert engine.user_tasks(instance_id=inst.id) == []  # no task was made again
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    assert engine.get_instance(inst.id).variables["deleted"] is True


def test_a_terminated_instance_runs_no_delete_listeners_and_leaves_nothing_live(
    database_url: str,
) -> None:
    seen: list[str] = []
    engine, q = make_engine(database_url, deleting_registry(seen))
    engine.deploy(BOUNDARY)
    inst = engine.start("expiring", now=T0)
    drain(engine, q)
    engine.terminate(inst.id, now=T0)
    assert drain(engine, q) == 0 and seen == []
    after = engine.get_instance(inst.id)
    assert after.state is InstanceState.TERMINATED
    assert not [t for t in after.tokens if t.state in (TokenState.READY, TokenState.WAITING)]


ZEEBE = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="d" targetNamespace="t">
  <bpmn:process id="z" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:userTask id="approve">
      <bpmn:extensionElements>
        <zeebe:userTask/>
        <zeebe:assignmentDefinition assignee="ann"/>
        <zeebe:taskListeners>
          <zeebe:taskListener eventType="assigning" type="z-assign"/>
          <zeebe:taskListener eventType="completing" type="z-check" retries="1"/>
          <zeebe:taskListener eventType="updating" type="=dynamic"/>
        </zeebe:taskListeners>
      </bpmn:extensionElements>
    </bpmn:userTask>
    <bpmn:endEvent id="e"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="approve"/>
    <bpmn:sequenceFlow id="f2" sourceRef="approve" targetRef="e"/>
  </bpmn:process>
</bpmn:definitions>
"""


def test_zeebe_task_listeners_run_as_their_job_type_and_completing_may_deny(
    database_url: str,
) -> None:
    parsed = parse_bpmn(ZEEBE)
    node = parsed.node("approve")
    assert isinstance(node, n.UserTask)
    assert [(x.event, x.handler, x.retries) for x in node.listeners] == [
        ("assignment", "z-assign", None),
        ("complete", "z-check", 1),
    ]
    assert any("type '=dynamic' is ignored" in w for w in parsed.warnings)
    seen: list[str] = []
    reg = HandlerRegistry()
    reg.register("z-assign", lambda ctx: seen.append("assign") or {"a": 1})

    def check(ctx: TaskContext) -> dict[str, Any]:
        seen.append(f"check:{ctx.variables.get('ok')}")
        if not ctx.variables.get("ok"):
            ctx.deny("not ok")
        if ctx.variables.get("ok") == "boom":
            raise RuntimeError("boom")
        return {"checked": True}

    reg.register("z-check", check)
    engine, q = make_engine(database_url, reg)
    engine.deploy(ZEEBE)
    inst = engine.start("z", now=T0)
    drain(engine, q)
    (task,) = engine.user_tasks(instance_id=inst.id)
    engine.complete_user_task(task.id, {"ok": False}, now=T0)
    drain(engine, q)
    assert engine.user_tasks(instance_id=inst.id)[0].id == task.id  # denied: still open
    engine.complete_user_task(task.id, {"ok": "boom"}, now=T0)
    drain(engine, q)
    (incident,) = engine.incidents(inst.id)  # retries="1": one attempt, then the incident
    assert incident.node_id == "approve" and "boom" in (incident.message or "")
    assert seen == ["assign", "check:False", "check:boom"]
    assert engine.get_instance(inst.id).variables == {"a": 1}


def test_a_modification_that_moves_the_token_runs_the_delete_listeners(
    database_url: str,
) -> None:
    from bpm.engine.modification import Cancel, StartBefore

    seen: list[str] = []
    engine, q = make_engine(database_url, deleting_registry(seen))
    engine.deploy(BOUNDARY)
    inst = engine.start("expiring", now=T0)
    drain(engine, q)
    engine.modify(inst.id, [StartBefore("expired"), Cancel(activity_id="approve")], now=T0)
    assert engine.user_tasks(instance_id=inst.id) == []
    drain(engine, q)
    assert seen == ["delete:desk-ann"]
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED


def test_a_lost_worker_reruns_the_listeners_on_the_next_attempt(database_url: str) -> None:
    """kill -9 mid-listener: the lease runs out, the next attempt runs them again; the lost
    worker's late finish is dropped; the task is completed once."""
    from bpm.engine.execution import run_handler

    calls = Calls()
    engine, q = make_engine(database_url, calls.registry())
    engine.deploy(model())
    inst = engine.start("review", now=T0)
    (task,) = engine.user_tasks(instance_id=inst.id)
    engine.complete_user_task(task.id, {"approved": True}, now=T0)
    (token_id,) = list(q.queue)
    first = claim_one(engine.core, token_id, "worker-a", T0)
    assert first is not None
    lost = run_handler(engine.core, first, "worker-a")  # ran; then the worker was killed
    later = T0 + engine.core.config.default_lease + timedelta(seconds=1)
    assert engine.reclaim_expired_leases(now=later) == 1
    second = claim_one(engine.core, token_id, "worker-b", later)
    assert second is not None and second.token.attempt == 2
    finish_one(engine.core, second, run_handler(engine.core, second, "worker-b"), "worker-b", later)
    assert finish_one(engine.core, first, lost, "worker-a", later) == []  # dropped
    assert calls.seen == ["complete:True", "end:True"] * 2  # once per attempt
    assert engine.get_instance(inst.id).state is InstanceState.COMPLETED
    completed = [e for e in engine.history(inst.id) if e.type == "user_task_completed"]
    assert len(completed) == 1


def test_bad_task_listeners_are_refused_at_deploy_with_nothing_stored(database_url: str) -> None:
    from bpm.errors import DeploymentError

    engine, _ = make_engine(database_url)
    before = table_dump(engine)
    no_timer = model().replace(
        "<bpmn:timerEventDefinition><bpmn:timeDuration>PT1H</bpmn:timeDuration>"
        "</bpmn:timerEventDefinition>",
        "",
    )
    with pytest.raises(DeploymentError, match="timeout camunda:taskListener needs one"):
        engine.deploy(no_timer)
    with pytest.raises(DeploymentError, match="retries 'x' must be a count"):
        engine.deploy(ZEEBE.replace('retries="1"', 'retries="x"'))
    escape = BOUNDARY.replace('task["id"] is not None', "().__class__.__bases__")
    with pytest.raises(DeploymentError, match="__class__"):
        engine.deploy(escape)
    assert table_dump(engine) == before


def test_refused_changes_while_a_completion_is_queued_change_nothing(database_url: str) -> None:
    from bpm.engine.user_tasks import TaskChanges, update_user_task

    calls = Calls()
    engine, q = make_engine(database_url, calls.registry())
    engine.deploy(model())
    inst = engine.start("review", now=T0)
    (task,) = engine.user_tasks(instance_id=inst.id)
    engine.complete_user_task(task.id, {"approved": True}, now=T0)
    before = table_dump(engine)
    with pytest.raises(InvalidOperation, match="being completed"):
        engine.complete_user_task(task.id, {"approved": False}, now=T0)
    with pytest.raises(InvalidOperation, match="being completed"):
        engine.claim_user_task(task.id, "ann", now=T0)
    with pytest.raises(InvalidOperation, match="being completed"):
        update_user_task(engine.core, task.id, TaskChanges(priority=1), now=T0)
    assert table_dump(engine) == before
    drain(engine, q)
    assert engine.get_instance(inst.id).variables["approved"] is True
