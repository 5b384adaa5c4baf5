"""User-task endpoints over real HTTP: list, read, claim, unclaim, complete; bad input."""

from __future__ import annotations

from typing import Any

import httpx

from tests.api.conftest import Api, bpmn, instance_state

REVIEW = bpmn(
    "review",
    """
    <bpmn:startEvent id="start"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="approve"/>
    <bpmn:userTask id="approve" name="Approve order" camunda:candidateGroups="sales,finance"/>
    <bpmn:sequenceFlow id="f2" sourceRef="approve" targetRef="end"/>
    <bpmn:endEvent id="end"/>""",
)


def assert_error(res: httpx.Response, status: int, kind: str, fragment: str) -> None:
    assert res.status_code == status, res.text
    assert res.headers["content-type"] == "application/json"
    body = res.json()
    assert body["type"] == kind and fragment in body["message"], body


def only_task(api: Api, **params: Any) -> dict[str, Any]:
    res = api.http.get("/task", params=params)
    assert res.status_code == 200, res.text
    (task,) = res.json()
    return dict(task)


def test_claim_and_complete_a_user_task(api: Api) -> None:
    api.deploy(REVIEW)
    inst = api.start("review", {"amount": 5})
    other = api.start("review")
    task = only_task(api, processInstanceId=inst)
    assert (task["name"], task["taskDefinitionKey"], task["assignee"]) == (
        "Approve order",
        "approve",
        None,
    )
    assert task["processDefinitionId"].startswith("review:1:")
    assert api.http.get(f"/task/{task['id']}").json()["id"] == task["id"]
    assert len(api.http.get("/task", params={"candidateGroup": "finance"}).json()) == 2
    assert api.http.get("/task", params={"candidateGroup": "hr"}).json() == []

    assert api.http.post(f"/task/{task['id']}/claim", json={"userId": "ann"}).status_code == 204
    assert only_task(api, assignee="ann")["id"] == task["id"]
    taken = api.http.post(f"/task/{task['id']}/claim", json={"userId": "bob"})
    assert_error(taken, 400, "BadUserRequestException", "already claimed")
    assert only_task(api, processInstanceId=inst)["assignee"] == "ann"
    assert api.http.post(f"/task/{task['id']}/unclaim").status_code == 204
    assert only_task(api, processInstanceId=inst)["assignee"] is None

    done = api.http.post(
        f"/task/{task['id']}/complete",
        json={"variables": {"approved": {"value": True, "type": "Boolean"}}},
    )
    assert done.status_code == 204, done.text
    assert instance_state(api.engine, inst) == "completed"
    assert api.engine.get_instance(inst).variables == {"amount": 5, "approved": True}
    assert instance_state(api.engine, other) == "active"
    again = api.http.post(f"/task/{task['id']}/complete", json={"variables": {}})
    assert_error(again, 404, "InvalidRequestException", task["id"])


def test_bad_task_requests_change_nothing(api: Api) -> None:
    api.deploy(REVIEW)
    inst = api.start("review")
    task = only_task(api, processInstanceId=inst)
    before = api.engine.history(inst)
    assert_error(api.http.get("/task/nope"), 404, "InvalidRequestException", "nope")
    assert_error(
        api.http.post("/task/nope/claim", json={"userId": "ann"}),
        404,
        "InvalidRequestException",
        "nope",
    )
    assert_error(api.http.post("/task/nope/complete", json={}), 404, "InvalidRequestException", "")
    missing_user = api.http.post(f"/task/{task['id']}/claim", json={})
    assert missing_user.status_code == 400 and "type" in missing_user.json()
    bad_vars = api.http.post(
        f"/task/{task['id']}/complete", json={"variables": {"x": {"value": 1, "type": "Nope"}}}
    )
    assert bad_vars.status_code == 400 and "type" in bad_vars.json()
    assert api.engine.history(inst) == before
    assert only_task(api, processInstanceId=inst)["assignee"] is None
    assert instance_state(api.engine, inst) == "active"
