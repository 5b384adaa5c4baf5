"""History over real HTTP: process instances with Camunda's states and times, activity
instances from the token events, incidents, variables and tasks; and external tasks that
keep their workerId after a failure."""

from __future__ import annotations

from tests.api.camunda_helpers import assert_error, review, task_of
from tests.api.conftest import Api


def test_history_of_process_instances_activities_tasks_and_variables(api: Api) -> None:
    done, killed, running = review(api)
    http = api.http
    task = task_of(api, done)
    http.post(f"/task/{task['id']}/complete", json={"variables": {"approved": {"value": False}}})
    assert http.delete(f"/process-instance/{killed}").status_code == 204

    listed = http.get("/history/process-instance", params={"processDefinitionKey": "review"})
    states = {h["id"]: h["state"] for h in listed.json()}
    assert states == {done: "COMPLETED", killed: "EXTERNALLY_TERMINATED", running: "ACTIVE"}
    one = http.get(f"/history/process-instance/{done}").json()
    assert one["businessKey"] == "o-0" and one["processDefinitionKey"] == "review"
    assert one["processDefinitionName"] == "Order review" and one["processDefinitionVersion"] == 1
    assert one["endTime"] is not None and one["durationInMillis"] >= 0
    assert one["startTime"].endswith("+0000") and one["removalTime"] is None
    assert http.get(f"/history/process-instance/{killed}").json()["deleteReason"] == (
        "deleted over REST"
    )
    finished = {"finished": "true", "sortBy": "startTime", "sortOrder": "desc"}
    assert [h["id"] for h in http.get("/history/process-instance", params=finished).json()] == [
        killed,
        done,
    ]
    assert http.get("/history/process-instance/count", params={"unfinished": "true"}).json() == {
        "count": 1
    }
    body = {"processInstanceBusinessKey": "o-2", "sorting": None, "variables": None}
    assert [h["id"] for h in http.post("/history/process-instance", json=body).json()] == [running]
    assert http.post("/history/process-instance/count", json={"finished": True}).json() == {
        "count": 2
    }

    acts = http.get("/history/activity-instance", params={"processInstanceId": done}).json()
    assert [(a["activityId"], a["activityType"], a["canceled"]) for a in acts] == [
        ("start", "startEvent", False),
        ("approve", "userTask", False),
        ("split", "exclusiveGateway", False),
        ("rejected", "noneEndEvent", False),
    ]
    assert acts[1]["taskId"] == task["id"] and acts[1]["durationInMillis"] >= 0
    assert all(a["endTime"] is not None for a in acts)
    open_acts = http.get("/history/activity-instance", params={"unfinished": "true"}).json()
    assert [(a["processInstanceId"], a["activityId"]) for a in open_acts] == [(running, "approve")]
    canceled = http.get(
        "/history/activity-instance", params={"processInstanceId": killed, "canceled": "true"}
    ).json()
    assert [a["activityId"] for a in canceled] == ["approve"]
    assert http.get(
        "/history/activity-instance/count", params={"activityType": "userTask"}
    ).json() == {"count": 3}

    tasks = http.get("/history/task", params={"processInstanceId": done}).json()
    assert [(t["taskDefinitionKey"], t["deleteReason"]) for t in tasks] == [
        ("approve", "completed")
    ]
    assert http.get("/history/task/count", params={"unfinished": "true"}).json() == {"count": 1}
    cancelled = http.post("/history/task", json={"processInstanceId": killed}).json()
    assert [t["deleteReason"] for t in cancelled] == ["deleted"]

    hv = http.get("/history/variable-instance", params={"processInstanceId": done}).json()
    assert {v["name"]: v["value"] for v in hv} == {
        "amount": 100,
        "approved": False,
        "reviewers": '["ann","bob"]',
    }
    assert all(v["processDefinitionKey"] == "review" for v in hv)
    assert http.post(
        "/history/variable-instance/count", json={"variableName": "amount"}
    ).json() == {"count": 3}


def test_incidents_history_and_external_task_worker_kept_after_failure(api: Api) -> None:
    review(api, 0)
    http = api.http
    inst = http.post("/process-definition/key/charge/start", json={}).json()["id"]
    (task,) = api.fetch("w1", "charge")
    failure = {"workerId": "w1", "errorMessage": "card declined", "retries": 1, "retryTimeout": 0}
    assert api.post(task["id"], "failure", failure).status_code == 204
    after = http.get(f"/external-task/{task['id']}").json()
    assert (after["workerId"], after["retries"], after["errorMessage"]) == (
        "w1",
        1,
        "card declined",
    )
    (refetched,) = api.fetch("w2", "charge")
    assert refetched["id"] == task["id"]
    assert http.get(f"/external-task/{task['id']}").json()["workerId"] == "w2"
    assert (
        api.post(task["id"], "failure", {**failure, "workerId": "w2", "retries": 0}).status_code
        == 204
    )
    failed = http.get(f"/external-task/{task['id']}").json()
    assert (failed["workerId"], failed["retries"]) == ("w2", 0)
    (incident,) = http.get("/history/incident", params={"open": "true"}).json()
    assert incident["incidentType"] == "failedExternalTask" and incident["open"] is True
    assert incident["processInstanceId"] == inst and incident["configuration"] == task["id"]
    assert http.put(f"/external-task/{task['id']}/retries", json={"retries": 2}).status_code == 204
    (resolved,) = http.get("/history/incident", params={"processInstanceId": inst}).json()
    assert resolved["resolved"] is True and resolved["endTime"] is not None
    assert http.get("/history/incident/count", params={"open": "true"}).json() == {"count": 0}
    assert http.get(f"/external-task/{task['id']}").json()["workerId"] == "w2"
    assert http.post(f"/external-task/{task['id']}/unlock").status_code == 204
    assert http.get(f"/external-task/{task['id']}").json()["workerId"] is None
    assert_error(http.get("/history/process-instance/nope"), 404, "InvalidRequestException", "nope")


def test_runtime_lists_page_in_sql_and_have_counts(api: Api) -> None:
    a, b, c = review(api)
    http = api.http
    assert http.post(f"/process-instance/{b}/variables", json={}).status_code == 204
    api.engine.suspend(c)
    listed = http.get("/process-instance", params={"firstResult": 1, "maxResults": 1}).json()
    assert [i["id"] for i in listed] == [b]
    assert http.get("/process-instance/count").json() == {"count": 3}
    assert http.get("/process-instance/count", params={"suspended": "true"}).json() == {"count": 1}
    assert [i["id"] for i in http.get("/process-instance", params={"active": "true"}).json()] == [
        a,
        b,
    ]
    assert http.get("/process-definition/count").json() == {"count": 2}
    assert http.get("/incident/count").json() == {"count": 0}
    charge = http.post("/process-definition/key/charge/start", json={}).json()["id"]
    (task,) = api.fetch("w1", "charge")
    api.post(task["id"], "failure", {"workerId": "w1", "errorMessage": "no", "retries": 0})
    assert http.get("/incident/count", params={"processInstanceId": charge}).json() == {"count": 1}
    (incident,) = http.get("/incident", params={"incidentType": "failedExternalTask"}).json()
    assert incident["processInstanceId"] == charge and incident["configuration"] == task["id"]
    assert_error(
        http.get("/process-instance", params={"maxResults": -1}), 400, "InvalidRequestException"
    )
    assert_error(http.get("/incident", params={"sortBy": "x"}), 400, "InvalidRequestException")


def test_external_task_reads_in_every_open_state(api: Api) -> None:
    review(api, 0)
    http = api.http
    inst = http.post("/process-definition/key/charge/start", json={}).json()["id"]
    (task,) = http.get("/external-task", params={"topicName": "charge"}).json()
    ready = http.get(f"/external-task/{task['id']}").json()
    assert (ready["workerId"], ready["lockExpirationTime"], ready["retries"]) == (None, None, None)
    (locked,) = api.fetch("w1", "charge", lock=1)  # expires at once
    expired = http.get(f"/external-task/{locked['id']}").json()
    assert expired["workerId"] == "w1" and expired["lockExpirationTime"] is not None
    api.engine.suspend(inst)
    suspended = http.get(f"/external-task/{task['id']}").json()
    assert suspended["suspended"] is True and suspended["workerId"] == "w1"
    api.engine.resume(inst)
    (again,) = api.fetch("w2", "charge")
    assert api.post(again["id"], "complete", {"workerId": "w2"}).status_code == 204
    assert_error(http.get(f"/external-task/{task['id']}"), 404, "RestException", task["id"])
