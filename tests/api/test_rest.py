"""The REST surface against a real server: shapes the clients rely on, long polling, bad
input (Camunda error shape, nothing changed), process endpoints."""

from __future__ import annotations

import threading
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.conftest import Api, ApiServer, history_types, instance_state, one_task
from tests.engine_helpers import table_dump

PROPS = """
    <bpmn:extensionElements>
      <camunda:properties><camunda:property name="region" value="eu"/></camunda:properties>
    </bpmn:extensionElements>"""


def test_fetch_and_lock_shape_filters_and_order(api: Api) -> None:
    api.deploy(one_task("shape", "shape", task_body=PROPS))
    api.deploy(one_task("urgent", "shape", task_attrs='camunda:taskPriority="50"'))
    low = api.start(
        "shape",
        {
            "amount": 42,
            "big": 2**40,
            "ratio": 0.5,
            "ok": True,
            "none": None,
            "doc": {"a": [1]},
            "tags": ["x"],
        },
        "o-1",
    )
    high = api.start("urgent", {"amount": 1})
    r = api.http.post(
        "/external-task/fetchAndLock",
        json={
            "workerId": "w1",
            "maxTasks": 1,
            "usePriority": True,
            "sorting": None,
            "topics": [
                {
                    "topicName": "shape",
                    "lockDuration": 10_000,
                    "variables": None,
                    "processVariables": {},
                    "localVariables": False,
                }
            ],
            "unknownField": "ignored",
        },
    )
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    [first] = r.json()
    assert first["processInstanceId"] == high  # priority first
    [task] = api.fetch("w1", "shape", variables=None, **{})
    assert task["processInstanceId"] == low
    v = task["variables"]
    assert v["amount"] == {"type": "Integer", "value": 42, "valueInfo": {}}
    assert v["big"]["type"] == "Long" and v["ratio"]["type"] == "Double"
    assert v["ok"]["type"] == "Boolean" and v["none"]["type"] == "Null"
    assert v["doc"]["type"] == "Json" and v["doc"]["value"] == '{"a":[1]}'
    assert task["retries"] is None and task["businessKey"] == "o-1"
    assert task["workerId"] == "w1" and task["activityId"] == "work"
    assert task["processDefinitionKey"] == "shape" and task["extensionProperties"] == {}
    assert task["lockExpirationTime"].endswith("+0000")
    # variables by name, deserialized objects, extension properties, filters
    api.post(task["id"], "unlock")
    r = api.http.post(
        "/external-task/fetchAndLock",
        json={
            "workerId": 7,
            "maxTasks": 5,
            "topics": [
                {
                    "topicName": "shape",
                    "lockDuration": 10_000,
                    "variables": ["doc"],
                    "deserializeValues": True,
                    "includeExtensionProperties": True,
                    "businessKey": "o-1",
                    "processDefinitionKey": "shape",
                    "processVariables": {"amount": 42, "nope": "x"},
                }
            ],
        },
    )
    [task] = r.json()
    assert task["workerId"] == "7"
    info = {
        "objectTypeName": "java.util.LinkedHashMap",
        "serializationDataFormat": "application/json",
    }
    assert task["variables"] == {"doc": {"type": "Object", "value": {"a": [1]}, "valueInfo": info}}
    assert task["extensionProperties"] == {"region": "eu"}
    # workerId as a JSON number in complete (the Python client does that)
    r = api.post(
        task["id"],
        "complete",
        {
            "workerId": 7,
            "variables": {
                "s": {"value": "x", "type": "string"},
                "n": {"value": "12", "type": "Integer"},
                "j": {"value": '{"k": 1}', "type": "json"},
                "d": {"value": True},
            },
            "localVariables": {"loc": {"value": 1}},
        },
    )
    assert r.status_code == 204 and r.content == b""
    assert "content-type" not in r.headers
    got = api.engine.get_instance(low).variables
    assert (got["s"], got["n"], got["j"], got["d"], got["loc"]) == ("x", 12, {"k": 1}, True, 1)


def test_long_poll_answers_empty_before_the_timeout_and_wakes_on_creation(api: Api) -> None:
    api.deploy(one_task("poll", "poll"))
    t0 = time.monotonic()
    assert api.fetch("w1", "poll", timeout=1000) == []
    # it waited, and answered at its own timeout (not at a default one: Camunda's is 30 s);
    # the upper bound leaves room for a loaded machine (1.4 s seen at load average 14)
    assert 0.5 < time.monotonic() - t0 < 5.0
    got: list[dict[str, Any]] = []
    th = threading.Thread(target=lambda: got.extend(api.fetch("w1", "poll", timeout=15_000)))
    th.start()
    time.sleep(0.3)
    t0 = time.monotonic()
    iid = api.start("poll", {"n": 1})
    th.join()
    assert time.monotonic() - t0 < 5.0  # woken by the new task, not by its 15 s timeout
    assert got[0]["processInstanceId"] == iid
    r = api.http.post(
        "/external-task/fetchAndLock",
        json={
            "workerId": "w",
            "maxTasks": 1,
            "asyncResponseTimeout": 1_800_001,
            "topics": [{"topicName": "poll", "lockDuration": 1000}],
        },
    )
    assert r.status_code == 400 and r.json()["type"] == "InvalidRequestException"


def _snapshot(api: Api, task_id: str, iid: str) -> tuple[Any, ...]:
    task = api.http.get(f"/external-task/{task_id}").json()
    inst = api.engine.get_instance(iid)
    return task, inst.variables, inst.state, len(history_types(api.engine, iid))


BIG = "x" * (17 * 1024 * 1024)


@pytest.mark.parametrize(
    "method,path,kwargs,status",
    [
        ("post", "/external-task/{id}/complete", {"json": {}}, 400),
        ("post", "/external-task/{id}/complete", {"content": b"{not json"}, 400),
        ("post", "/external-task/{id}/complete", {"content": b"[1, 2]"}, 400),
        ("post", "/external-task/{id}/complete", {"json": {"workerId": True}}, 400),
        ("post", "/external-task/{id}/complete", {"json": {"workerId": "w" * 300}}, 400),
        (
            "post",
            "/external-task/{id}/complete",
            {"json": {"workerId": "w1", "variables": [1]}},
            400,
        ),
        (
            "post",
            "/external-task/{id}/complete",
            {"json": {"workerId": "w1", "variables": {"a": {"value": "x", "type": "Integer"}}}},
            400,
        ),
        (
            "post",
            "/external-task/{id}/complete",
            {"json": {"workerId": "w1", "variables": {"a": {"value": 1, "type": "Ghost"}}}},
            400,
        ),
        (
            "post",
            "/external-task/{id}/complete",
            {"json": {"workerId": "w1", "variables": {"a": {"value": "{", "type": "Json"}}}},
            400,
        ),
        (
            "post",
            "/external-task/{id}/complete",
            {"json": {"workerId": "w1", "variables": {"a": {"value": "x" * 300_000}}}},
            400,
        ),
        (
            "post",
            "/external-task/{id}/complete",
            {"json": {"workerId": "w1", "variables": {"a": {"value": "nul\u0000"}}}},
            400,
        ),
        ("post", "/external-task/{id}/complete", {"content": BIG.encode()}, 413),
        ("post", "/external-task/{id}/complete", {"json": {"workerId": "intruder"}}, 400),
        ("post", "/external-task/{id}/failure", {"json": {"workerId": "w1", "retries": -1}}, 400),
        (
            "post",
            "/external-task/{id}/failure",
            {"json": {"workerId": "w1", "retries": "many"}},
            400,
        ),
        ("post", "/external-task/{id}/bpmnError", {"json": {"workerId": "w1"}}, 400),
        (
            "post",
            "/external-task/{id}/extendLock",
            {"json": {"workerId": "w1", "newDuration": 0}},
            400,
        ),
        (
            "post",
            "/external-task/{id}/extendLock",
            {"json": {"workerId": "w2", "newDuration": 100}},
            400,
        ),
        (
            "post",
            "/external-task/{id}/lock",
            {"json": {"workerId": "w2", "lockDuration": 100}},
            400,
        ),
        ("put", "/external-task/{id}/retries", {"json": {"retries": -3}}, 400),
        ("post", "/external-task/unknown-id/complete", {"json": {"workerId": "w1"}}, 404),
        ("post", "/external-task/unknown-id/unlock", {}, 404),
        ("get", "/external-task/unknown-id", {}, 404),
        (
            "post",
            "/external-task/fetchAndLock",
            {"json": {"workerId": "w9", "maxTasks": "lots"}},
            400,
        ),
        (
            "post",
            "/external-task/fetchAndLock",
            {"json": {"workerId": "w9", "maxTasks": 1, "topics": [{"topicName": "bad"}]}},
            400,
        ),
        (
            "post",
            "/external-task/fetchAndLock",
            {
                "json": {
                    "workerId": "w9",
                    "maxTasks": 1,
                    "sorting": [{"sortBy": "nope"}],
                    "topics": [{"topicName": "bad", "lockDuration": 5}],
                }
            },
            400,
        ),
        (
            "post",
            "/external-task/fetchAndLock",
            {
                "content": b'{"workerId": "w", "maxTasks": 1,'
                + b'"topics": '
                + b"[" * 5000
                + b"]" * 5000
                + b"}"
            },
            400,
        ),
        ("post", "/process-definition/key/nope/start", {"json": {}}, 404),
        ("post", "/process-definition/key/bad/start", {"json": {"variables": "x"}}, 400),
        ("get", "/process-instance/unknown", {}, 404),
        ("delete", "/process-instance/unknown", {}, 404),
        ("post", "/deployment/create", {"files": {"f": ("x.bpmn", b"<not-bpmn")}}, 400),
        ("post", "/deployment/create", {"json": {}}, 400),
        ("get", "/no/such/route", {}, 404),
        ("patch", "/external-task/{id}/complete", {}, 405),
    ],
)
@pytest.mark.xdist_group("rest-bad-input")  # one worker, one server for every case
def test_bad_input_gets_a_camunda_error_and_changes_nothing(
    module_api: Api, method: str, path: str, kwargs: dict[str, Any], status: int
) -> None:
    api = module_api
    topic = f"bad-{uuid.uuid4().hex[:12]}"  # this case's own task on the shared server
    api.deploy(one_task("bad", topic))
    iid = api.start("bad", {"amount": 1})
    [task] = api.fetch("w1", topic)
    before = _snapshot(api, task["id"], iid)
    r = api.http.request(method.upper(), path.format(id=task["id"]), **kwargs)
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/json"
    body = r.json()
    assert set(body) >= {"type", "message", "code"} and "detail" not in body
    assert isinstance(body["message"], str) and body["message"]
    assert "Traceback" not in r.text
    assert _snapshot(api, task["id"], iid) == before


def test_parse_error_details_and_process_endpoints(api: Api) -> None:
    r = api.http.post(
        "/deployment/create",
        files={
            "f": (
                "broken.bpmn",
                b"""<?xml version="1.0"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d">
  <bpmn:process id="p" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="f" sourceRef="s" targetRef="ghost"/>
  </bpmn:process>
</bpmn:definitions>""",
            )
        },
    )
    assert r.status_code == 400
    body = r.json()
    assert body["type"] == "ParseException"
    errors = body["details"]["broken.bpmn"]["errors"]
    assert errors and {"message", "line", "column", "mainBpmnElementId"} <= set(errors[0])
    assert api.http.get("/process-definition").json() == []

    dep = api.deploy(one_task("proc", "proc"), name="proc.bpmn")
    [(def_id, d)] = dep["deployedProcessDefinitions"].items()
    assert d["key"] == "proc" and d["version"] == 1 and d["resource"] == "proc.bpmn"
    assert api.http.get("/process-definition/key/proc").json()["id"] == def_id
    r = api.http.post(
        "/process-definition/key/proc/start",
        json={
            "businessKey": "b-1",
            "withVariablesInReturn": True,
            "variables": {"amount": {"value": 5, "type": "Long"}},
        },
    )
    inst = r.json()
    assert inst["definitionId"] == def_id and inst["businessKey"] == "b-1"
    assert inst["ended"] is False and inst["suspended"] is False and inst["tenantId"] is None
    assert inst["variables"]["amount"]["value"] == 5 and inst["links"][0]["rel"] == "self"
    iid = inst["id"]
    listed = api.http.get("/process-instance", params={"processDefinitionKey": "proc"}).json()
    assert [i["id"] for i in listed] == [iid]
    assert api.http.get("/process-instance", params={"businessKey": "b-1"}).json()[0]["id"] == iid
    assert api.http.get(f"/process-instance/{iid}/variables").json() == {
        "amount": {"type": "Long", "value": 5, "valueInfo": {}}  # as written (issue 14)
    }
    [task] = api.fetch("w1", "proc")
    assert api.http.delete(f"/process-instance/{iid}").status_code == 204
    assert api.http.get(f"/process-instance/{iid}").status_code == 404
    assert instance_state(api.engine, iid) == "terminated"
    # the instance's external task went with it
    assert api.post(task["id"], "complete", {"workerId": "w1"}).status_code == 404


def test_lock_unlock_and_uncaught_bpmn_error(api: Api) -> None:
    api.deploy(one_task("locks", "locks"))
    iid = api.start("locks", {"n": 1})
    [task] = api.fetch("w1", "locks")
    r = api.http.post(f"/external-task/{task['id']}/unlock")  # no body, no content type
    assert r.status_code == 204
    assert (
        api.post(task["id"], "lock", {"workerId": "w2", "lockDuration": 60_000}).status_code == 204
    )
    assert api.fetch("w1", "locks") == []
    assert api.http.get("/external-task", params={"workerId": "w2"}).json()[0]["id"] == task["id"]
    assert api.http.get("/external-task/count", params={"locked": True}).json() == {"count": 1}
    r = api.post(
        task["id"],
        "bpmnError",
        {"workerId": "w2", "errorCode": "NOPE", "errorMessage": "no handler for this"},
    )
    assert r.status_code == 204
    # no boundary catches it: an incident (the default failure action), not a silent end
    assert instance_state(api.engine, iid) == "active"
    assert "end" not in {e.node_id for e in api.engine.history(iid)}
    [incident] = api.http.get("/incident", params={"processInstanceId": iid}).json()
    assert incident["incidentType"] == "failedExternalTask"
    assert incident["incidentMessage"] == "no handler for this"
    before = table_dump(api.engine)
    assert (
        api.post(task["id"], "bpmnError", {"workerId": "w2", "errorCode": "NOPE"}).status_code
        == 204
    )  # idempotent for its worker: nothing changed
    assert table_dump(api.engine) == before


def test_pending_long_polls_are_bounded(pg_database_url: str, tmp_path: Path) -> None:
    import os

    os.environ["BPM_API_MAX_PENDING_POLLS"] = "2"
    try:
        server = ApiServer(pg_database_url, log=tmp_path / "api.log").start()
    finally:
        del os.environ["BPM_API_MAX_PENDING_POLLS"]
    try:
        body = {
            "workerId": "w",
            "maxTasks": 1,
            "asyncResponseTimeout": 3000,
            "topics": [{"topicName": "none", "lockDuration": 1000}],
        }
        codes: list[int] = []

        def poll() -> None:
            codes.append(
                httpx.post(
                    f"{server.base}/external-task/fetchAndLock", json=body, timeout=10
                ).status_code
            )

        threads = [threading.Thread(target=poll) for _ in range(2)]
        for th in threads:
            th.start()
        time.sleep(0.5)
        third = httpx.post(f"{server.base}/external-task/fetchAndLock", json=body, timeout=10)
        assert third.status_code == 429
        assert third.json()["type"] == "RestException"
        for th in threads:
            th.join()
        assert codes == [200, 200]
    finally:
        server.kill()


def test_reclaimer_returns_expired_locks_with_a_history_event(api: Api) -> None:
    api.deploy(one_task("reclaim", "reclaim"))
    iid = api.start("reclaim", {"n": 1})
    [task] = api.fetch("w1", "reclaim", lock=60_000)
    # time injected: a 300 ms lock with a real wait expired before its first check under load
    now = api.engine.core.now()
    assert api.engine.reclaim_expired_external_locks(now=now) == 0  # not expired yet
    later = now + timedelta(seconds=61)
    assert api.engine.reclaim_expired_external_locks(now=later) == 1
    assert api.engine.reclaim_expired_external_locks(now=later) == 0  # counted once
    info = api.http.get(f"/external-task/{task['id']}").json()
    # the lock is gone; the last worker stays until an unlock, as in Camunda
    assert info["workerId"] == "w1" and info["lockExpirationTime"] is None
    events = [e for e in api.engine.history(iid) if e.type == "external_task_lock_expired"]
    assert len(events) == 1 and events[0].payload["worker"] == "w1"
    # the worker that lost it cannot complete it any more; a new fetch gets it at once
    assert api.post(task["id"], "complete", {"workerId": "w1"}).status_code == 400
    assert [t["id"] for t in api.fetch("w2", "reclaim")] == [task["id"]]
