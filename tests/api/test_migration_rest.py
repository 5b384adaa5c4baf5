"""Process instance migration over Camunda's REST (issue 22, items 3 and 4)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bpm import Engine
from bpm.api.app import create_app
from bpm.api.auth import parse_api_keys
from bpm.builder import Process
from bpm.store.operation_log import OperationLogQuery
from tests.api.inprocess import InProcess
from tests.engine_helpers import table_dump

OPS = {"Authorization": "Bearer ops-secret"}
WORKER = {"Authorization": "Bearer work-secret"}
KEYS = "ops:ops-secret,work:work-secret:pay"


def model(*, review: bool = True, message: str = "paid") -> Any:
    p = Process("order").start("s").parallel("fork").parallel("join").end("e")
    p = p.user_task("review") if review else p.user_task("check")
    first = "review" if review else "check"
    return (
        p.service_task("charge", topic="pay")
        .receive_message("paid", message)
        .sequence("s", "fork")
        .sequence("fork", first, "join")
        .sequence("fork", "charge", "join")
        .sequence("fork", "paid", "join")
        .sequence("join", "e")
    )


@pytest.fixture
def served(pg_database_url: str) -> Iterator[tuple[InProcess, Engine]]:
    engine = Engine(pg_database_url)
    http = InProcess(create_app(engine, api_keys=parse_api_keys(KEYS)))
    yield http, engine
    http.close()
    engine.close()


def generated(http: InProcess, source: str, target: str, **extra: Any) -> dict[str, Any]:
    r = http.post(
        "/migration/generate",
        json={"sourceProcessDefinitionId": source, "targetProcessDefinitionId": target, **extra},
        headers=OPS,
    )
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def test_generate_validate_execute_in_camundas_shape(served: tuple[InProcess, Engine]) -> None:
    http, engine = served
    v1 = engine.deploy(model())
    inst = engine.start("order")
    r = http.post(
        "/external-task/fetchAndLock",
        json={
            "workerId": "w1",
            "maxTasks": 1,
            "topics": [{"topicName": "pay", "lockDuration": 600000}],
        },
        headers=WORKER,
    )
    (task,) = r.json()
    v2 = engine.deploy(model(message="paid2"))
    plan = generated(http, v1.id, v2.id, updateEventTriggers=True)
    assert set(plan) == {
        "sourceProcessDefinitionId", "targetProcessDefinitionId", "instructions", "variables",
    }  # fmt: skip
    by_source = {i["sourceActivityIds"][0]: i for i in plan["instructions"]}
    assert by_source["paid"] == {
        "sourceActivityIds": ["paid"],
        "targetActivityIds": ["paid"],
        "updateEventTrigger": True,
    }
    assert by_source["review"]["updateEventTrigger"] is False
    r = http.post("/migration/validate", json=plan, headers=OPS)
    assert r.status_code == 200, r.text
    assert r.json() == {"instructionReports": [], "variableReports": {}}
    r = http.post(
        "/migration/execute",
        json={
            "migrationPlan": plan,
            "processInstanceIds": [inst.id],
            "skipCustomListeners": True,
            "skipIoMappings": True,
            "annotation": "move to v2",
        },
        headers=OPS,
    )
    assert r.status_code == 204, r.text
    assert engine.get_instance(inst.id).definition_id == v2.id
    # the worker completes with the lock it got before
    r = http.post(f"/external-task/{task['id']}/complete", json={"workerId": "w1"}, headers=WORKER)
    assert r.status_code == 204, r.text
    r = http.post("/message", json={"messageName": "paid2"}, headers=OPS)
    assert r.status_code == 204, r.text
    r = http.get("/history/user-operation", params={"operationType": "Migrate"}, headers=OPS)
    entries = r.json()
    (mine,) = [e for e in entries if e["processInstanceId"] == inst.id]
    assert (mine["userId"], mine["annotation"], mine["entityType"]) == (
        "ops",
        "move to v2",
        "ProcessInstance",
    )
    assert (mine["property"], mine["orgValue"], mine["newValue"]) == (
        "processDefinitionId",
        v1.id,
        v2.id,
    )
    assert {e["property"] for e in entries} == {"processDefinitionId", "nrOfInstances", "async"}


def test_a_bad_plan_answers_camundas_400_and_changes_nothing(
    served: tuple[InProcess, Engine],
) -> None:
    http, engine = served
    v1 = engine.deploy(model())
    inst = engine.start("order")
    v2 = engine.deploy(model(review=False))
    other = engine.deploy(
        Process("other").start("s").user_task("review").end("e").sequence("s", "review", "e")
    )
    bad = {
        "sourceProcessDefinitionId": v1.id,
        "targetProcessDefinitionId": v2.id,
        "instructions": [
            {"sourceActivityIds": ["nope"], "targetActivityIds": ["check"]},
            {"sourceActivityIds": ["charge"], "targetActivityIds": ["charge"]},
        ],
    }
    r = http.post("/migration/validate", json=bad, headers=OPS)
    assert r.status_code == 200
    (report,) = r.json()["instructionReports"]
    assert report["instruction"]["sourceActivityIds"] == ["nope"]
    assert report["failures"] == ["Source activity 'nope' does not exist"]
    before = table_dump(engine)
    cases = [
        (
            {"migrationPlan": bad, "processInstanceIds": [inst.id]},
            "MigrationPlanValidationException",
        ),
        (
            {
                "migrationPlan": {**bad, "targetProcessDefinitionId": other.id, "instructions": []},
                "processInstanceIds": [inst.id],
            },
            "BadUserRequestException",
        ),
        (
            {
                "migrationPlan": {**bad, "targetProcessDefinitionId": "order:7:nope"},
                "processInstanceIds": [inst.id],
            },
            "BadUserRequestException",
        ),
        (
            {"migrationPlan": generated(http, v1.id, v2.id), "processInstanceIds": [inst.id]},
            "MigratingProcessInstanceValidationException",
        ),
        (
            {
                "migrationPlan": generated(http, v1.id, v2.id),
                "processInstanceQuery": {"processDefinitionId": v1.id, "withIncident": True},
            },
            "InvalidRequestException",
        ),
    ]
    for body, kind in cases:
        r = http.post("/migration/execute", json=body, headers=OPS)
        assert r.status_code == 400, (kind, r.text)
        answer = r.json()
        assert answer["type"] == kind, answer
        assert answer["code"] is None and answer["message"]
    r = http.post("/migration/execute", json=cases[0][0], headers=OPS)
    assert r.json()["validationReport"]["instructionReports"][0]["failures"] == [
        "Source activity 'nope' does not exist"
    ]
    r = http.post("/migration/execute", json=cases[3][0], headers=OPS)
    report = r.json()["validationReport"]
    assert report["processInstanceId"] == inst.id
    assert "'review'" in report["failures"][0]
    assert table_dump(engine) == before
    # a worker key may not migrate
    r = http.post("/migration/execute", json=cases[3][0], headers=WORKER)
    assert r.status_code == 403
    r = http.post("/migration/executeAsync", json=cases[0][0], headers=OPS)
    assert r.status_code == 400 and r.json()["type"] == "MigrationPlanValidationException"
    assert table_dump(engine) == before  # no batch either
    assert engine.operation_log(OperationLogQuery(operation_type="Migrate")) == []


def test_the_dry_run_adds_a_report_per_instance(served: tuple[InProcess, Engine]) -> None:
    http, engine = served
    v1 = engine.deploy(model())
    stuck = engine.start("order")
    free = engine.start("order")
    (t,) = [x for x in engine.user_tasks(free.id) if x.node_id == "review"]
    engine.complete_user_task(t.id)
    v2 = engine.deploy(model(review=False))
    plan = generated(http, v1.id, v2.id)
    before = table_dump(engine)
    r = http.post(
        "/migration/validate",
        json={"migrationPlan": plan, "processInstanceQuery": {"processDefinitionKey": "order"}},
        headers=OPS,
    )
    assert r.status_code == 200, r.text
    assert table_dump(engine) == before
    body = r.json()
    assert body["instructionReports"] == [] and body["variableReports"] == {}
    reports = {x["processInstanceId"]: x for x in body["instanceReports"]}
    assert set(reports) == {stuck.id, free.id}
    assert reports[stuck.id]["canMigrate"] is False
    assert "'review'" in reports[stuck.id]["failures"][0]
    ok = reports[free.id]
    assert ok["canMigrate"] is True and ok["failures"] == []
    assert sorted(ok["activityIds"]) == ["charge", "join", "paid"]
    assert {(w["activityId"], w["kind"]) for w in ok["waits"]} == {
        ("charge", "external_task"),
        ("paid", "message"),
        ("join", "join"),
    }


def test_execute_async_makes_a_batch(served: tuple[InProcess, Engine]) -> None:
    http, engine = served
    v1 = engine.deploy(model())
    ids = [engine.start("order").id for _ in range(3)]
    v2 = engine.deploy(model(message="paid2"))
    plan = generated(http, v1.id, v2.id)
    r = http.post(
        "/migration/executeAsync",
        json={
            "migrationPlan": plan,
            "processInstanceQuery": {"processDefinitionId": v1.id},
            "annotation": "as a batch",
        },
        headers=OPS,
    )
    assert r.status_code == 200, r.text
    batch = r.json()
    assert batch["type"] == "instance-migration" and batch["totalJobs"] >= 1
    assert all(engine.get_instance(i).definition_id == v1.id for i in ids)  # not yet
    assert engine.batches.run_ready() == 3
    assert all(engine.get_instance(i).definition_id == v2.id for i in ids)
    r = http.get(f"/history/batch/{batch['id']}", headers=OPS)
    assert r.status_code == 200 and r.json()["type"] == "instance-migration"
