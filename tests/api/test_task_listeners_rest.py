"""A user task's complete listener over real HTTP: the API process (which registers no
handler) queues the completion and answers; a worker (this test process) runs the listener
and completes the task; a second complete while it is queued is a 400 that changes nothing."""

from __future__ import annotations

from typing import Any

from bpm import Engine
from bpm.handlers import HandlerRegistry, TaskContext
from bpm.runtime.states import InstanceState, TokenState
from tests.api.camunda_helpers import task_of
from tests.api.conftest import Api

BPMN = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d" targetNamespace="t">
  <bpmn:process id="rest_listened" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:userTask id="approve">
      <bpmn:extensionElements>
        <camunda:taskListener event="complete" delegateExpression="${checkApproval}"/>
      </bpmn:extensionElements>
    </bpmn:userTask>
    <bpmn:endEvent id="e"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="approve"/>
    <bpmn:sequenceFlow id="f2" sourceRef="approve" targetRef="e"/>
  </bpmn:process>
</bpmn:definitions>
"""


def test_a_complete_listener_runs_on_a_worker_not_in_the_api(
    api: Api, pg_database_url: str
) -> None:
    seen: list[Any] = []
    reg = HandlerRegistry()

    def check(ctx: TaskContext) -> dict[str, Any]:
        seen.append(ctx.variables.get("approved"))
        return {"checked": True}

    reg.register("checkApproval", check)
    api.deploy(BPMN)
    inst = api.start("rest_listened")
    task = task_of(api, inst)
    body = {"variables": {"approved": {"value": True}}}
    assert api.http.post(f"/task/{task['id']}/complete", json=body).status_code == 204
    again = api.http.post(f"/task/{task['id']}/complete", json=body)
    assert again.status_code == 400 and "being completed" in again.text
    waiting = api.engine.get_instance(inst)
    assert waiting.state is InstanceState.ACTIVE and "approved" not in waiting.variables
    (step,) = [t for t in waiting.tokens if t.state is TokenState.READY]
    worker = Engine(pg_database_url, registry=reg)
    try:
        assert worker.run_token(step.id) == 1
    finally:
        worker.close()
    assert seen == [True]
    done = api.engine.get_instance(inst)
    assert done.state is InstanceState.COMPLETED
    assert done.variables == {"approved": True, "checked": True}
