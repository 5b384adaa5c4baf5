"""Batches over Camunda's REST (issue 22, items 5 and 7): ``/batch``, ``/history/batch``,
the batch operations, and the operation log of every operator action."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bpm import Engine, InstanceState
from bpm.api.app import create_app
from bpm.api.auth import parse_api_keys
from bpm.builder import Process
from tests.api.inprocess import InProcess
from tests.engine_helpers import table_dump

OPS = {"Authorization": "Bearer ops-secret"}
WORKER = {"Authorization": "Bearer work-secret"}
KEYS = "ops:ops-secret,work:work-secret:orders"

BATCH_KEYS = {
    "id", "type", "totalJobs", "jobsCreated", "batchJobsPerSeed", "invocationsPerBatchJob",
    "seedJobDefinitionId", "monitorJobDefinitionId", "batchJobDefinitionId", "suspended",
    "tenantId", "createUserId", "startTime", "executionStartTime", "totalItems",
}  # fmt: skip


@pytest.fixture
def served(database_url: str) -> Iterator[tuple[InProcess, Engine]]:
    engine = Engine(database_url)
    engine.deploy(
        Process("two").start("s").user_task("a").user_task("b").end("e")
        .sequence("s", "a", "b", "e").build()
    )  # fmt: skip
    engine.deploy(
        Process("ext").start("s").service_task("x", topic="orders").end("e")
        .sequence("s", "x", "e").build()
    )  # fmt: skip
    http = InProcess(create_app(engine, api_keys=parse_api_keys(KEYS)))
    yield http, engine
    http.close()
    engine.close()


def started(engine: Engine, n: int, key: str = "two") -> list[str]:
    return [engine.start(key).id for _ in range(n)]


def ok(r: Any, status: int = 200) -> Any:
    assert r.status_code == status, r.text
    return r.json() if status == 200 else None


def test_a_suspension_batch_from_create_to_history(served: tuple[InProcess, Engine]) -> None:
    http, engine = served
    ids = started(engine, 3)
    body = {"processInstanceQuery": {"processDefinitionKey": "two"}, "suspended": True}
    batch = ok(http.post("/process-instance/suspended-async", json=body, headers=OPS))
    assert set(batch) == BATCH_KEYS
    assert batch["type"] == "instance-update-suspension-state"
    assert (batch["totalJobs"], batch["totalItems"], batch["createUserId"]) == (1, 3, "ops")
    assert batch["jobsCreated"] == 1 and batch["suspended"] is False
    assert ok(http.get(f"/batch/{batch['id']}", headers=OPS)) == batch
    assert ok(http.get("/batch/count", headers=OPS)) == {"count": 1}
    (stats,) = ok(http.get("/batch/statistics", headers=OPS))
    assert (stats["remainingJobs"], stats["completedJobs"], stats["failedJobs"]) == (1, 0, 0)
    assert ok(http.get("/batch/statistics/count", headers=OPS)) == {"count": 1}
    # nothing changed before a worker ran the chunk
    assert {engine.get_instance(i).state for i in ids} == {InstanceState.ACTIVE}
    assert engine.batches.run_ready() == 3
    assert {engine.get_instance(i).state for i in ids} == {InstanceState.SUSPENDED}
    # a completed batch leaves /batch, stays in /history/batch
    assert http.get(f"/batch/{batch['id']}", headers=OPS).status_code == 404
    assert ok(http.get("/batch", headers=OPS)) == []
    hist = ok(http.get(f"/history/batch/{batch['id']}", headers=OPS))
    assert hist["endTime"] is not None and hist["completedItems"] == 3
    assert hist["state"] == "completed"
    assert [h["id"] for h in ok(http.get("/history/batch?completed=true", headers=OPS))] == [
        batch["id"]
    ]
    assert ok(http.get("/history/batch/count?completed=false", headers=OPS)) == {"count": 0}
    ok(http.delete(f"/history/batch/{batch['id']}", headers=OPS), 204)
    assert http.get(f"/history/batch/{batch['id']}", headers=OPS).status_code == 404
    # who did it: the batch's creation and each suspension, by the API key
    log = ok(http.get("/history/user-operation", headers=OPS))
    suspended = [e for e in log if e["operationType"] == "Suspend" and e["processInstanceId"]]
    assert sorted(e["processInstanceId"] for e in suspended) == sorted(ids)
    created = [e for e in log if e["property"] == "nrOfInstances"]
    assert [(e["operationType"], e["newValue"], e["batchId"]) for e in created] == [
        ("Suspend", "3", batch["id"])
    ]
    assert {e["userId"] for e in log} == {"ops"}
    assert {e["batchId"] for e in suspended} == {batch["id"]}


def test_suspend_resume_delete_a_batch_and_its_failures(served: tuple[InProcess, Engine]) -> None:
    http, engine = served
    ids = started(engine, 2)
    body = {"processInstanceIds": [*ids, "gone"], "deleteReason": "cleanup"}
    batch = ok(http.post("/process-instance/delete", json=body, headers=OPS))
    bid = batch["id"]
    ok(http.put(f"/batch/{bid}/suspended", json={"suspended": True}, headers=OPS), 204)
    assert ok(http.get(f"/batch/{bid}", headers=OPS))["suspended"] is True
    assert ok(http.get("/batch?suspended=true", headers=OPS))[0]["id"] == bid
    assert engine.batches.run_ready() == 0
    ok(http.put(f"/batch/{bid}/suspended", json={"suspended": False}, headers=OPS), 204)
    assert engine.batches.run_ready() == 2
    failures = ok(http.get(f"/batch/{bid}/failures", headers=OPS))
    assert [(f["item"], f["chunk"]) for f in failures] == [("gone", 0)]
    assert "does not exist" in failures[0]["reason"]
    assert {engine.get_instance(i).state for i in ids} == {InstanceState.TERMINATED}
    # a running batch deleted: its history stays; with cascade it goes too
    again = ok(http.post("/process-instance/variables-async", headers=OPS, json={
        "processInstanceIds": started(engine, 1), "variables": {"x": {"value": 1}},
    }))  # fmt: skip
    ok(http.delete(f"/batch/{again['id']}", headers=OPS), 204)
    assert ok(http.get(f"/history/batch/{again['id']}", headers=OPS))["state"] == "deleted"
    third = ok(http.post("/process-instance/variables-async", headers=OPS, json={
        "processInstanceIds": started(engine, 1), "variables": {"x": {"value": 1}},
    }))  # fmt: skip
    ok(http.delete(f"/batch/{third['id']}?cascade=true", headers=OPS), 204)
    assert http.get(f"/history/batch/{third['id']}", headers=OPS).status_code == 404


def test_modification_async_and_many(served: tuple[InProcess, Engine]) -> None:
    http, engine = served
    ids = started(engine, 3)
    move = [{"type": "startBeforeActivity", "activityId": "b"},
            {"type": "cancel", "activityId": "a"}]  # fmt: skip
    # one instance, async: a batch of one
    body = {"instructions": move, "async": True, "annotation": "late"}
    one = ok(http.post(f"/process-instance/{ids[0]}/modification", headers=OPS, json=body))
    assert (one["type"], one["totalItems"]) == ("instance-modification", 1)
    assert [t.node_id for t in engine.user_tasks(ids[0])] == ["a"]
    engine.batches.run_ready()
    assert [t.node_id for t in engine.user_tasks(ids[0])] == ["b"]
    # many, synchronously, in one transaction: one that cannot be modified refuses all
    before = table_dump(engine)
    r = http.post("/process-instance/modification", headers=OPS,
                  json={"processInstanceIds": ids, "instructions": move})  # fmt: skip
    assert r.status_code == 400 and ids[0] in r.json()["message"]
    assert table_dump(engine) == before
    ok(http.post("/process-instance/modification", headers=OPS,
                 json={"processInstanceIds": ids[1:], "instructions": move}), 204)  # fmt: skip
    assert all([t.node_id for t in engine.user_tasks(i)] == ["b"] for i in ids[1:])
    # many, as a batch
    back = [{"type": "startBeforeActivity", "activityId": "a"},
            {"type": "cancel", "activityId": "b"}]  # fmt: skip
    many = ok(http.post("/process-instance/modification-async", headers=OPS,
                        json={"processInstanceIds": ids, "instructions": back}))  # fmt: skip
    assert many["totalItems"] == 3
    engine.batches.run_ready()
    assert all([t.node_id for t in engine.user_tasks(i)] == ["a"] for i in ids)


def test_retries_as_batches(served: tuple[InProcess, Engine]) -> None:
    http, engine = served
    ids = started(engine, 2, "ext")
    tasks = [t.id for t in engine.external_tasks(instance_id=ids[0])]
    tasks += [t.id for t in engine.external_tasks(instance_id=ids[1])]
    for task in tasks:
        engine.set_external_task_retries(task, 0)  # an incident each
    batch = ok(http.post("/external-task/retries-async", headers=OPS,
                         json={"processInstanceIds": ids, "retries": 3}))  # fmt: skip
    assert (batch["type"], batch["totalItems"]) == ("set-external-task-retries", 2)
    engine.batches.run_ready()
    assert {engine.external_task(t).retries for t in tasks} == {3}
    assert engine.incidents() == []
    log = engine.operation_log()
    by_ops = [e for e in log if e.operation_type == "SetExternalTaskRetries" and e.user_id == "ops"]
    assert {e.instance_id for e in by_ops} == {*ids, None}  # None: the batch's creation
    # job retries: a job is a failed step, named by its incident
    for task in tasks:
        engine.set_external_task_retries(task, 0)
    incidents = [i.id for i in engine.incidents()]
    job = ok(http.post("/job/retries", headers=OPS, json={"jobIds": incidents, "retries": 1}))
    assert job["type"] == "set-job-retries"
    engine.batches.run_ready()
    assert engine.incidents() == []


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("get", "/batch/nope", None, 404),
        ("get", "/history/batch/nope", None, 404),
        ("put", "/batch/nope/suspended", {"suspended": True}, 404),
        ("delete", "/batch/nope", None, 404),
        ("delete", "/history/batch/nope", None, 404),
        ("get", "/batch/nope/failures", None, 404),
        ("put", "/batch/nope/suspended", {"suspended": "maybe"}, 400),
        ("post", "/process-instance/delete", {}, 400),
        ("post", "/process-instance/delete", {"processInstanceIds": []}, 400),
        ("post", "/process-instance/suspended-async", {"processInstanceIds": ["x"]}, 400),
        ("post", "/process-instance/variables-async", {"processInstanceIds": ["x"]}, 400),
        ("post", "/process-instance/modification-async", {"processInstanceIds": ["x"]}, 400),
        ("post", "/process-instance/modification-async",
         {"processInstanceIds": ["x"], "instructions": [{"type": "cancel"}]}, 400),
        ("post", "/job/retries", {"retries": 1}, 400),
        ("post", "/job/retries", {"jobIds": ["x"], "retries": 0}, 400),
        ("post", "/external-task/retries-async", {"retries": 1}, 400),
        ("post", "/external-task/retries-async", {"externalTaskIds": ["x"], "retries": -1}, 400),
        ("get", "/batch?maxResults=-1", None, 400),
        ("get", "/history/batch?completed=perhaps", None, 400),
    ],
)  # fmt: skip
def test_bad_input_answers_camundas_shape_and_changes_nothing(
    served: tuple[InProcess, Engine], method: str, path: str, body: Any, status: int
) -> None:
    http, engine = served
    started(engine, 1)
    before = table_dump(engine)
    kwargs: dict[str, Any] = {"headers": OPS}
    if body is not None:
        kwargs["json"] = body
    r = getattr(http, method)(path, **kwargs)
    assert r.status_code == status, r.text
    err = r.json()
    assert set(err) >= {"type", "message"} and err["type"].endswith("Exception")
    assert table_dump(engine) == before


def test_a_worker_key_may_not_run_batches(served: tuple[InProcess, Engine]) -> None:
    http, engine = served
    ids = started(engine, 1)
    before = table_dump(engine)
    r = http.post("/process-instance/delete", json={"processInstanceIds": ids}, headers=WORKER)
    assert r.status_code == 403
    assert http.get("/batch", headers=WORKER).status_code == 403
    assert table_dump(engine) == before


def test_every_operator_action_is_in_the_operation_log(served: tuple[InProcess, Engine]) -> None:
    http, engine = served
    a, b = started(engine, 2)
    ok(http.put(f"/process-instance/{a}/suspended", json={"suspended": True}, headers=OPS), 204)
    ok(http.put(f"/process-instance/{a}/suspended", json={"suspended": False}, headers=OPS), 204)
    ok(http.post(f"/process-instance/{a}/variables", headers=OPS,
                 json={"modifications": {"x": {"value": 1}}}), 204)  # fmt: skip
    ok(http.delete(f"/process-instance/{b}", headers=OPS), 204)
    (ext,) = started(engine, 1, "ext")
    (task,) = engine.external_tasks(instance_id=ext)
    ok(http.post("/external-task/fetchAndLock", headers=OPS, json={
        "workerId": "w", "maxTasks": 1, "topics": [{"topicName": "orders", "lockDuration": 9000}],
    }))  # fmt: skip
    ok(http.post(f"/external-task/{task.id}/unlock", headers=OPS), 204)
    ok(http.put(f"/external-task/{task.id}/retries", json={"retries": 0}, headers=OPS), 204)
    (incident,) = engine.incidents()
    engine.retry_incident(incident.id, by="alice")
    log = ok(http.get("/history/user-operation", headers=OPS))
    seen = [(e["operationType"], e["entityType"], e["userId"]) for e in log]
    for entry in [
        ("Suspend", "ProcessInstance", "ops"), ("Activate", "ProcessInstance", "ops"),
        ("SetVariable", "Variable", "ops"), ("Delete", "ProcessInstance", "ops"),
        ("Unlock", "ExternalTask", "ops"), ("SetExternalTaskRetries", "ExternalTask", "ops"),
        ("SetJobRetries", "Job", "alice"),
    ]:  # fmt: skip
        assert entry in seen, (entry, seen)
    assert {e["processInstanceId"] for e in log} == {a, b, ext}
    count = ok(http.get("/history/user-operation/count?userId=alice", headers=OPS))
    assert count == {"count": 2}  # SetJobRetries: retries and incidentId
    # a refused action writes no entry
    n = len(log)
    assert http.put(f"/process-instance/{b}/suspended", json={"suspended": True},
                    headers=OPS).status_code == 404  # fmt: skip
    assert len(ok(http.get("/history/user-operation", headers=OPS))) == n


def test_typed_variables_keep_their_type_through_a_batch(served: tuple[InProcess, Engine]) -> None:
    http, engine = served
    (iid,) = started(engine, 1)
    variables = {
        "due": {"value": "2026-12-24T10:00:00.000+0000", "type": "Date"},
        "big": {"value": 7, "type": "Long"},
        "note": {"value": "x"},
    }
    body = {"processInstanceIds": [iid], "variables": variables}
    ok(http.post("/process-instance/variables-async", json=body, headers=OPS))
    assert engine.batches.run_ready() == 1
    inst = engine.get_instance(iid)
    assert inst.variable_types.get("due") == "Date" and inst.variable_types.get("big") == "Long"
    assert inst.variables["note"] == "x" and inst.variables["big"] == 7
