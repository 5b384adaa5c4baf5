"""The activity instance tree and modification over Camunda's REST (issue 22)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bpm import Engine
from bpm.api.app import create_app
from bpm.api.auth import parse_api_keys
from bpm.builder import Process
from bpm.engine.modification import StartBefore
from tests.api.inprocess import InProcess
from tests.engine_helpers import table_dump

OPS = {"Authorization": "Bearer ops-secret"}
WORKER = {"Authorization": "Bearer work-secret"}
KEYS = "ops:ops-secret,work:work-secret:orders"


@pytest.fixture
def served(pg_database_url: str) -> Iterator[tuple[InProcess, Engine]]:
    engine = Engine(pg_database_url)
    engine.deploy(
        Process("line", name="Line")
        .start("s")
        .user_task("a", name="A")
        .sub_process(
            "sub",
            lambda b: b.start("is").user_task("look").end("ie").sequence("is", "look", "ie"),
        )
        .user_task("b")
        .end("e")
        .sequence("s", "a", "sub", "b", "e")
    )
    http = InProcess(create_app(engine, api_keys=parse_api_keys(KEYS)))
    yield http, engine
    http.close()
    engine.close()


def tree(http: InProcess, instance_id: str) -> dict[str, Any]:
    r = http.get(f"/process-instance/{instance_id}/activity-instances", headers=OPS)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def test_the_tree_in_camundas_shape(served: tuple[InProcess, Engine]) -> None:
    http, engine = served
    inst = engine.start("line")
    engine.modify(inst.id, [StartBefore("look")])
    body = tree(http, inst.id)
    assert set(body) == {
        "id", "parentActivityInstanceId", "activityId", "activityType", "processInstanceId",
        "processDefinitionId", "childActivityInstances", "childTransitionInstances",
        "executionIds", "activityName", "name", "incidentIds", "incidents",
    }  # fmt: skip
    assert body["id"] == inst.id and body["parentActivityInstanceId"] is None
    assert (body["activityId"], body["activityType"]) == (inst.definition_id, "processDefinition")
    a, sub = body["childActivityInstances"]
    assert (a["activityId"], a["activityType"], a["activityName"]) == ("a", "userTask", "A")
    assert a["parentActivityInstanceId"] == inst.id
    (look,) = sub["childActivityInstances"]
    assert look["parentActivityInstanceId"] == sub["id"] and look["activityId"] == "look"
    assert tree(http, inst.id) == body  # the same ids on every call


def test_a_modification_moves_a_token_and_names_its_key(served: tuple[InProcess, Engine]) -> None:
    http, engine = served
    inst = engine.start("line")
    a = tree(http, inst.id)["childActivityInstances"][0]
    r = http.post(
        f"/process-instance/{inst.id}/modification",
        json={
            "skipCustomListeners": True,
            "skipIoMappings": False,
            "annotation": "wrong branch",
            "instructions": [
                {
                    "type": "startBeforeActivity",
                    "activityId": "b",
                    "variables": {
                        "why": {"value": "ops", "type": "String"},
                        "mine": {"value": 1, "local": True},
                    },
                },
                {"type": "cancel", "activityInstanceId": a["id"]},
            ],
        },
        headers=OPS,
    )
    assert r.status_code == 204, r.text
    assert [t.node_id for t in engine.user_tasks(inst.id)] == ["b"]
    assert engine.get_instance(inst.id).variables == {"why": "ops", "mine": 1}
    (event,) = [e for e in engine.history(inst.id) if e.type == "instance_modified"]
    assert (event.payload["by"], event.payload["annotation"]) == ("ops", "wrong branch")


@pytest.mark.parametrize(
    ("instructions", "part"),
    [
        ([{"type": "startBeforeActivity", "activityId": "b"},
          {"type": "startBeforeActivity", "activityId": "nowhere"}],
         "instruction 1 (startBeforeActivity): activity 'nowhere' does not exist"),
        ([{"type": "cancel", "activityId": "b"}], "no token is at activity 'b'"),
        ([{"type": "cancel"}], "exactly one of activityId"),
        ([{"type": "startTransition"}], "transitionId is required"),
        ([{"type": "startBeforeActivity", "activityId": "b",
           "variables": {"x": {"value": "y" * 300_000}}}], "over the limit"),
        ([{"type": "jump", "activityId": "b"}], "type"),
        ([], "instructions"),
    ],
)  # fmt: skip
def test_a_bad_instruction_answers_400_and_changes_nothing(
    served: tuple[InProcess, Engine], instructions: list[dict[str, Any]], part: str
) -> None:
    http, engine = served
    inst = engine.start("line")
    before = table_dump(engine)
    r = http.post(
        f"/process-instance/{inst.id}/modification",
        json={"instructions": instructions},
        headers=OPS,
    )
    assert r.status_code == 400, r.text
    assert r.json()["type"] in ("InvalidRequestException", "BadUserRequestException")
    assert part in r.json()["message"]
    assert table_dump(engine) == before


def test_unknown_or_ended_instances_are_404_and_workers_403(
    served: tuple[InProcess, Engine],
) -> None:
    http, engine = served
    body = {"instructions": [{"type": "cancel", "activityId": "a"}]}
    for path in ("/process-instance/nope/activity-instances",):
        assert http.get(path, headers=OPS).status_code == 404
    assert (
        http.post("/process-instance/nope/modification", json=body, headers=OPS).status_code == 404
    )
    inst = engine.start("line")
    r = http.post(f"/process-instance/{inst.id}/modification", json=body, headers=WORKER)
    assert r.status_code == 403
    r = http.post(f"/process-instance/{inst.id}/modification", json=body, headers=OPS)
    assert r.status_code == 204 and engine.get_instance(inst.id).ended
    assert (
        http.get(f"/process-instance/{inst.id}/activity-instances", headers=OPS).status_code == 404
    )
    r = http.post(f"/process-instance/{inst.id}/modification", json=body, headers=OPS)
    assert r.status_code == 404


def test_each_modification_is_in_the_user_operation_log(
    served: tuple[InProcess, Engine],
) -> None:
    http, engine = served
    inst = engine.start("line")
    other = engine.start("line")
    body = {
        "annotation": "wrong branch",
        "instructions": [
            {"type": "startBeforeActivity", "activityId": "b"},
            {"type": "cancel", "activityId": "a"},
        ],
    }
    assert (
        http.post(f"/process-instance/{inst.id}/modification", json=body, headers=OPS).status_code
        == 204
    )
    engine.modify(other.id, [StartBefore("b")], by="alice", annotation="by hand")
    # a refused modification leaves no entry
    bad = {"instructions": [{"type": "cancel", "activityId": "nowhere"}]}
    assert (
        http.post(f"/process-instance/{inst.id}/modification", json=bad, headers=OPS).status_code
        == 400
    )
    r = http.get("/history/user-operation", params={"processInstanceId": inst.id}, headers=OPS)
    assert r.status_code == 200, r.text
    (entry,) = r.json()
    assert entry["operationType"] == "ModifyProcessInstance"
    assert (entry["entityType"], entry["category"]) == ("ProcessInstance", "Operator")
    assert (entry["userId"], entry["annotation"]) == ("ops", "wrong branch")
    assert entry["processDefinitionKey"] == "line" and entry["processInstanceId"] == inst.id
    everything = http.get(
        "/history/user-operation", params={"sortBy": "timestamp", "sortOrder": "desc"}, headers=OPS
    ).json()
    assert {e["userId"] for e in everything} == {"ops", "alice"}
    count = http.get("/history/user-operation/count", params={"userId": "alice"}, headers=OPS)
    assert count.json() == {"count": 1}
    assert [e.annotation for e in engine.operation_log()] == ["wrong branch", "by hand"]


def test_a_fetched_external_task_names_its_activity_instance_as_the_tree_does(
    served: tuple[InProcess, Engine],
) -> None:
    http, engine = served
    engine.deploy(
        Process("ext_ai")
        .start("s")
        .service_task("work", topic="orders")
        .end("e")
        .sequence("s", "work", "e")
    )
    inst = engine.start("ext_ai")
    body = {
        "workerId": "w",
        "maxTasks": 1,
        "topics": [{"topicName": "orders", "lockDuration": 1000}],
    }
    (task,) = http.post("/external-task/fetchAndLock", json=body, headers=WORKER).json()
    (work,) = tree(http, inst.id)["childActivityInstances"]
    assert task["activityInstanceId"] == work["id"]
    assert task["executionId"] == work["executionIds"][0]
    r = http.post(
        f"/process-instance/{inst.id}/modification",
        json={
            "instructions": [{"type": "cancel", "activityInstanceId": task["activityInstanceId"]}]
        },
        headers=OPS,
    )
    assert r.status_code == 204 and engine.get_instance(inst.id).ended
