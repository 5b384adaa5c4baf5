"""Saved task filters (``/filter``) and tenants (``/tenant``) over Camunda's REST shapes,
in-process against PostgreSQL: a user sees and changes only their own filters (another's
answers 404), may not save one for someone else, a filter's query merges with the
request's and lists only what the caller may see; tenants are an admin's to change and a
user reads those they belong to. Every refusal changes nothing."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from argon2 import PasswordHasher

from bpm import Engine
from bpm.api.app import create_app
from bpm.api.auth import parse_api_keys
from bpm.identity import passwords
from tests.api.inprocess import InProcess

FORMS = Path(__file__).resolve().parents[1] / "data" / "forms"
OPS = {"Authorization": "Bearer ops-secret"}
WORK = {"Authorization": "Bearer work-secret"}
PASSWORD = "correct horse battery"


def basic(user: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{PASSWORD}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


ANN, BOB = basic("ann"), basic("bob")


@pytest.fixture(autouse=True)
def cheap_hashes() -> Iterator[None]:
    previous = passwords.use_parameters(PasswordHasher(time_cost=1, memory_cost=8, parallelism=1))
    yield
    passwords.use_parameters(previous)


@pytest.fixture
def http(pg_database_url: str) -> Iterator[InProcess]:
    engine = Engine(pg_database_url)
    keys = parse_api_keys("ops:ops-secret,work:work-secret:orders")
    client = InProcess(create_app(engine, api_keys=keys))
    for user in ("ann", "bob"):
        body = {"profile": {"id": user}, "credentials": {"password": PASSWORD}}
        assert client.post("/user/create", json=body, headers=OPS).status_code == 204
    assert client.post("/group/create", json={"id": "managers"}, headers=OPS).status_code == 204
    assert client.put("/group/managers/members/ann", headers=OPS).status_code == 204
    files = [("f", ("generated.bpmn", (FORMS / "generated.bpmn").read_bytes()))]
    assert client.post("/deployment/create", files=files, headers=OPS).status_code == 200
    for days in (2, 9):
        start = {"variables": {"days": {"value": days}}, "businessKey": f"leave-{days}"}
        r = client.post("/process-definition/key/leave/start", json=start, headers=OPS)
        assert r.status_code == 200, r.text
    yield client
    client.close()
    engine.close()


def create(http: InProcess, headers: dict[str, str], **body: Any) -> Any:
    return http.post("/filter/create", json={"resourceType": "Task", **body}, headers=headers)


def everything(http: InProcess) -> list[dict[str, Any]]:
    r = http.get("/filter?sortBy=filterId&sortOrder=asc", headers=OPS)
    assert r.status_code == 200, r.text
    return list(r.json())


def test_a_filter_is_its_owners(http: InProcess) -> None:
    r = create(http, ANN, name="Managers' tasks", query={"candidateGroups": ["managers"]},
               properties={"color": "#fff", "priority": 1})  # fmt: skip
    assert r.status_code == 200, r.text
    saved = r.json()
    assert saved["owner"] == "ann" and saved["resourceType"] == "Task"
    assert saved["query"] == {"candidateGroups": ["managers"]}
    fid = saved["id"]
    assert http.get("/filter", headers=ANN).json() == [saved]
    assert http.get(f"/filter/{fid}", headers=ANN).json() == saved
    counted = http.get(f"/filter/{fid}?itemCount=true", headers=ANN).json()
    assert counted["itemCount"] == 2
    assert http.get("/filter?itemCount=true", headers=ANN).json()[0]["itemCount"] == 2
    assert http.get("/filter/count", headers=ANN).json() == {"count": 1}
    # bob sees nothing of it, changes nothing of it
    assert http.get("/filter", headers=BOB).json() == []
    assert http.get("/filter/count", headers=BOB).json() == {"count": 0}
    before = everything(http)
    for r in (
        http.get(f"/filter/{fid}", headers=BOB),
        http.get(f"/filter/{fid}/list", headers=BOB),
        http.post(f"/filter/{fid}/count", json={}, headers=BOB),
        http.put(f"/filter/{fid}", json={"resourceType": "Task", "name": "mine"}, headers=BOB),
        http.delete(f"/filter/{fid}", headers=BOB),
    ):
        assert r.status_code == 404, r.text
        assert r.json()["message"] == f"Filter with id {fid} does not exist"
    # a worker key has no business with filters
    assert http.get("/filter", headers=WORK).status_code == 403
    assert create(http, WORK, name="x").status_code == 403
    assert everything(http) == before
    # the owner renames it; admins see it too
    r = http.put(f"/filter/{fid}", json={"resourceType": "Task", "name": "Mine"}, headers=ANN)
    assert r.status_code == 204, r.text
    assert [f["name"] for f in everything(http)] == ["Mine"]
    assert http.delete(f"/filter/{fid}", headers=ANN).status_code == 204
    assert everything(http) == []


def test_refused_filters_are_not_saved(http: InProcess) -> None:
    assert create(http, ANN, name="ok").status_code == 200
    before = everything(http)
    cases = [
        (create(http, ANN, name="for bob", owner="bob"), 403, "only for themselves"),
        (create(http, ANN, name="t", query={"caseInstanceId": "a"}), 400, "caseInstanceId"),
        (create(http, ANN, name="s", query={"sorting": [{"sortBy": "nope"}]}), 400, "sort"),
        (create(http, ANN, name="e", query={"assigneeExpression": "${x}"}), 400, "currentUser"),
        (create(http, ANN, name="   "), 400, "name"),
        (http.post("/filter/create", json={"resourceType": "Case", "name": "c"}, headers=ANN),
         400, "resourceType"),
    ]  # fmt: skip
    for r, status, words in cases:
        assert r.status_code == status, r.text
        assert words in r.json()["message"]
    fid = before[0]["id"]
    r = http.put(f"/filter/{fid}", json={"resourceType": "Task", "name": "x", "owner": "bob"},
                 headers=ANN)  # fmt: skip
    assert r.status_code == 403
    assert everything(http) == before
    # an admin may save a filter for anyone
    assert create(http, OPS, name="for bob", owner="bob").json()["owner"] == "bob"
    assert [f["name"] for f in http.get("/filter", headers=BOB).json()] == ["for bob"]


def test_running_a_filter_merges_the_query_and_shows_only_what_the_caller_may_see(
    http: InProcess,
) -> None:
    tasks = http.get("/task?sortBy=created&sortOrder=asc", headers=OPS).json()
    assert len(tasks) == 2
    query = {"processDefinitionKey": "leave", "candidateUserExpression": "${currentUser()}",
             "sorting": [{"sortBy": "created", "sortOrder": "asc"}]}  # fmt: skip
    fid = create(http, ANN, name="Candidate", query=query).json()["id"]
    listed = http.get(f"/filter/{fid}/list", headers=ANN).json()
    assert [t["id"] for t in listed] == [t["id"] for t in tasks]
    assert http.get(f"/filter/{fid}/count", headers=ANN).json() == {"count": 2}
    key = http.get(f"/process-instance/{tasks[0]['processInstanceId']}", headers=OPS).json()
    body = {"processInstanceBusinessKey": key["businessKey"]}
    narrowed = http.post(f"/filter/{fid}/list", json=body, headers=ANN).json()
    assert [t["id"] for t in narrowed] == [tasks[0]["id"]]
    assert http.post(f"/filter/{fid}/count", json=body, headers=ANN).json() == {"count": 1}
    # paging of a filter's list
    page = http.get(f"/filter/{fid}/list?firstResult=1&maxResults=1", headers=ANN).json()
    assert [t["id"] for t in page] == [tasks[1]["id"]]
    # the admin's filter naming "managers" lists nothing to bob, who is in no group
    mine = http.post("/filter/create", headers=OPS, json={
        "resourceType": "Task", "name": "all", "owner": "bob",
        "query": {"candidateGroupsExpression": "${currentUserGroups()}"}}).json()  # fmt: skip
    assert http.get(f"/filter/{mine['id']}/list", headers=BOB).json() == []
    assert http.get(f"/filter/{mine['id']}/count", headers=BOB).json() == {"count": 0}
    # an extending query with a filter this engine cannot run: 400, nothing listed
    r = http.post(f"/filter/{fid}/list", json={"caseInstanceId": "x"}, headers=ANN)
    assert r.status_code == 400 and "caseInstanceId" in r.json()["message"]


def test_tenants(http: InProcess) -> None:
    assert (
        http.post("/tenant/create", json={"id": "north", "name": "North"}, headers=OPS).status_code
        == 204
    )
    assert http.post("/tenant/create", json={"id": "south"}, headers=OPS).status_code == 204
    assert http.put("/tenant/north/user-members/bob", headers=OPS).status_code == 204
    assert http.put("/tenant/south/group-members/managers", headers=OPS).status_code == 204
    all_ = http.get("/tenant?sortBy=id&sortOrder=asc", headers=OPS).json()
    assert all_ == [{"id": "north", "name": "North"}, {"id": "south", "name": None}]
    assert http.get("/tenant/count", headers=OPS).json() == {"count": 2}
    assert http.get("/tenant", headers=BOB).json() == [{"id": "north", "name": "North"}]
    assert http.get("/tenant", headers=ANN).json() == [{"id": "south", "name": None}]
    assert http.get("/tenant?userMember=ann&includingGroupsOfUser=true", headers=OPS).json() == [
        {"id": "south", "name": None}
    ]
    assert http.get("/tenant?userMember=ann", headers=OPS).json() == []
    assert http.get("/tenant?groupMember=managers", headers=OPS).json()[0]["id"] == "south"
    assert http.get("/tenant/north", headers=BOB).json() == {"id": "north", "name": "North"}
    refused = [
        (http.get("/tenant/north", headers=ANN), 404),
        (http.get("/tenant?userMember=bob", headers=ANN), 200),
        (http.post("/tenant/create", json={"id": "west"}, headers=ANN), 403),
        (http.put("/tenant/north", json={"name": "Mine"}, headers=BOB), 403),
        (http.delete("/tenant/north", headers=BOB), 403),
        (http.put("/tenant/north/user-members/ann", headers=ANN), 403),
        (http.delete("/tenant/north/user-members/bob", headers=BOB), 403),
        (http.put("/tenant/south/group-members/x", headers=BOB), 403),
        (http.post("/tenant/create", json={"id": "north"}, headers=OPS), 400),
        (http.post("/tenant/create", json={"id": "a/b"}, headers=OPS), 400),
        (http.put("/tenant/nowhere/user-members/bob", headers=OPS), 404),
        (http.put("/tenant/north", json={"id": "other"}, headers=OPS), 400),
    ]
    for r, status in refused:
        assert r.status_code == status, r.text
    assert refused[1][0].json() == []
    assert http.get("/tenant?sortBy=id&sortOrder=asc", headers=OPS).json() == all_
    assert http.get("/tenant", headers=BOB).json() == [{"id": "north", "name": "North"}]
    assert http.get("/tenant", headers=ANN).json() == [{"id": "south", "name": None}]
    # an admin renames, removes members, deletes
    assert http.put("/tenant/north", json={"name": "Nord"}, headers=OPS).status_code == 204
    assert http.delete("/tenant/north/user-members/bob", headers=OPS).status_code == 204
    assert http.get("/tenant", headers=BOB).json() == []
    assert http.delete("/tenant/north", headers=OPS).status_code == 204
    assert http.get("/tenant/north", headers=OPS).status_code == 404
    assert http.get("/tenant/count", headers=OPS).json() == {"count": 1}


def test_tasks_and_instances_filter_by_their_definitions_tenant(http: InProcess) -> None:
    # another process (a deployment equal to an earlier one reuses its definition)
    xml = (FORMS / "generated.bpmn").read_bytes().replace(b'id="leave"', b'id="north"')
    files = [("f", ("north.bpmn", xml))]
    r = http.post("/deployment/create", files=files, data={"tenant-id": "north"}, headers=OPS)
    assert r.status_code == 200, r.text
    north_def = next(iter(r.json()["deployedProcessDefinitions"]))
    start = {"variables": {"days": {"value": 3}}}
    r = http.post(f"/process-definition/{north_def}/start", json=start, headers=OPS)
    assert r.status_code == 200, r.text
    north = r.json()["id"]
    tasks = http.get("/task", headers=OPS).json()
    assert len(tasks) == 3
    only = http.get("/task?tenantIdIn=north,south", headers=OPS).json()
    assert [t["processInstanceId"] for t in only] == [north]
    assert [t["tenantId"] for t in only] == ["north"]
    assert {t["tenantId"] for t in tasks} == {"north", None}
    assert {t["tenantId"] for t in http.get("/history/task", headers=OPS).json()} == {"north", None}
    assert len(http.get("/task?withoutTenantId=true", headers=OPS).json()) == 2
    assert http.get("/task/count?tenantIdIn=south", headers=OPS).json() == {"count": 0}
    assert http.post("/task", json={"tenantIdIn": ["north"]}, headers=OPS).json() == only
    both = http.post("/task/count", json={"tenantIdIn": ["north"], "withoutTenantId": True},
                     headers=OPS)  # fmt: skip
    assert both.json() == {"count": 3}
    running = http.get("/process-instance?tenantIdIn=north", headers=OPS).json()
    assert [i["id"] for i in running] == [north]
    # an instance shows its definition's tenant: the list, by id, the start's answer
    assert [i["tenantId"] for i in running] == ["north"]
    assert r.json()["tenantId"] == "north"
    assert http.get(f"/process-instance/{north}", headers=OPS).json()["tenantId"] == "north"
    listed = http.get("/process-instance", headers=OPS).json()
    assert sorted((i["tenantId"] or "") for i in listed) == ["", "", "north"]
    assert http.get("/process-instance/count", headers=OPS).json() == {"count": 3}
    history = http.get(f"/history/process-instance?processInstanceId={north}", headers=OPS)
    assert [i["tenantId"] for i in history.json()] == ["north"]
    assert http.get("/process-instance/count?withoutTenantId=true", headers=OPS).json() == {
        "count": 2
    }
    # a user's view is narrowed as ever: ann (managers) sees the north task, as a filter too
    fid = create(http, ANN, name="North", query={"tenantIdIn": ["north"]}).json()["id"]
    assert [
        t["processInstanceId"] for t in http.get(f"/filter/{fid}/list", headers=ANN).json()
    ] == [north]
    assert http.get(f"/filter/{fid}/count", headers=BOB).status_code == 404


def test_history_tasks_filter_by_their_definitions_tenant(http: InProcess) -> None:
    xml = (FORMS / "generated.bpmn").read_bytes().replace(b'id="leave"', b'id="north"')
    files = [("f", ("north.bpmn", xml))]
    r = http.post("/deployment/create", files=files, data={"tenant-id": "north"}, headers=OPS)
    assert r.status_code == 200, r.text
    north_def = next(iter(r.json()["deployedProcessDefinitions"]))
    r = http.post(f"/process-definition/{north_def}/start", json={}, headers=OPS)
    assert r.status_code == 200, r.text
    north = r.json()["id"]
    # the north task completed: history lists it (finished) by its definition's tenant
    (task,) = http.get(f"/task?processInstanceId={north}", headers=OPS).json()
    done = http.post(f"/task/{task['id']}/complete", json={}, headers=OPS)
    assert done.status_code in (200, 204), done.text
    listed = http.get("/history/task?tenantIdIn=north,south", headers=OPS).json()
    assert {(t["processInstanceId"], t["tenantId"]) for t in listed} == {(north, "north")}
    assert [t["endTime"] is not None for t in listed if t["id"] == task["id"]] == [True]
    assert http.get("/history/task?tenantIdIn=south", headers=OPS).json() == []
    none = http.get("/history/task?withoutTenantId=true", headers=OPS).json()
    assert len(none) == 2 and {t["tenantId"] for t in none} == {None}
    assert http.get("/history/task/count?withoutTenantId=true", headers=OPS).json() == {"count": 2}
    body = {"tenantIdIn": ["north"], "withoutTenantId": True}  # either of them
    assert http.post("/history/task/count", json=body, headers=OPS).json() == {
        "count": 2 + len(listed)
    }
    assert http.post("/history/task", json={"tenantIdIn": ["north"]}, headers=OPS).json() == listed
    assert http.post("/history/task", json={"tenantIdIn": []}, headers=OPS).json() == []
    # bad values: 400 naming the parameter, nothing changed; users may not read history
    before = http.get("/history/task", headers=OPS).json()
    tasks_before = http.get("/task", headers=OPS).json()
    for r in (
        http.get("/history/task?withoutTenantId=maybe", headers=OPS),
        http.get("/history/task/count?withoutTenantId=2", headers=OPS),
        http.post("/history/task", json={"tenantIdIn": "north"}, headers=OPS),
        http.post("/history/task/count", json={"withoutTenantId": "maybe"}, headers=OPS),
    ):
        assert r.status_code == 400, r.text
        assert r.json()["type"] == "InvalidRequestException"
        assert "TenantId" in r.json()["message"] or "tenantId" in r.json()["message"], r.text
    assert http.get("/history/task?tenantIdIn=north", headers=ANN).status_code == 403
    assert http.get("/history/task", headers=OPS).json() == before
    assert http.get("/task", headers=OPS).json() == tasks_before


def test_a_filters_single_result(http: InProcess) -> None:
    tasks = http.get("/task?sortBy=created&sortOrder=asc", headers=OPS).json()
    assert len(tasks) == 2
    query = {"processDefinitionKey": "leave", "candidateUserExpression": "${currentUser()}"}
    fid = create(http, ANN, name="Candidate", query=query).json()["id"]
    # more than one: Camunda's 400 (InvalidRequestException), whatever the method
    for r in (
        http.get(f"/filter/{fid}/singleResult", headers=ANN),
        http.post(f"/filter/{fid}/singleResult", json={}, headers=ANN),
        http.post(f"/filter/{fid}/singleResult", headers=ANN),
    ):
        assert r.status_code == 400, r.text
        assert r.json() == {
            "type": "InvalidRequestException",
            "message": "Filter does not returns a valid single result: query return 2 results"
            " instead of max 1",
            "code": None,
        }
    # exactly one: its TaskDto, as /task shows it
    key = http.get(f"/process-instance/{tasks[0]['processInstanceId']}", headers=OPS).json()
    body = {"processInstanceBusinessKey": key["businessKey"]}
    r = http.post(f"/filter/{fid}/singleResult", json=body, headers=ANN)
    assert r.status_code == 200, r.text
    assert r.json() == tasks[0]
    one = create(http, ANN, name="One", query=body).json()["id"]
    assert http.get(f"/filter/{one}/singleResult", headers=ANN).json() == tasks[0]
    # none: 204 without a body
    r = http.post(f"/filter/{fid}/singleResult", json={"name": "no such task"}, headers=ANN)
    assert r.status_code == 204 and r.content == b""
    mine = http.post("/filter/create", headers=OPS, json={
        "resourceType": "Task", "name": "groups", "owner": "bob",
        "query": {"candidateGroupsExpression": "${currentUserGroups()}"}}).json()  # fmt: skip
    assert http.get(f"/filter/{mine['id']}/singleResult", headers=BOB).status_code == 204
    # another user's filter, an unknown one, a bad extending query: refused, nothing changed
    before, tasks_before = everything(http), http.get("/task", headers=OPS).json()
    for r, status, text in (
        (http.get(f"/filter/{fid}/singleResult", headers=BOB), 404, f"Filter with id {fid}"),
        (http.post(f"/filter/{fid}/singleResult", json=body, headers=BOB), 404, fid),
        (http.get("/filter/nope/singleResult", headers=ANN), 404, "Filter with id nope"),
        (http.get(f"/filter/{fid}/singleResult", headers=WORK), 403, ""),
        (http.post(f"/filter/{fid}/singleResult", json={"caseInstanceId": "x"}, headers=ANN),
         400, "caseInstanceId"),
        (http.post(f"/filter/{fid}/singleResult", json={"tenantIdIn": "x"}, headers=ANN),
         400, "tenantIdIn"),
    ):  # fmt: skip
        assert r.status_code == status, r.text
        assert text in r.json()["message"], r.text
    assert everything(http) == before
    assert http.get("/task", headers=OPS).json() == tasks_before
    # an admin runs anyone's filter
    assert http.get(f"/filter/{one}/singleResult", headers=OPS).json() == tasks[0]
