"""User tasks as people see them (issue 23 item 2), in-process against PostgreSQL: a user
lists their own and their groups' tasks only, ``candidateUser`` includes the user's groups'
tasks as Camunda's does, claim is refused to non-candidates (unless task authorization is
off), another user's task is invisible, comments, and two users completing one task at once:
one wins, the other gets Camunda's error. Every refusal changes nothing."""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from argon2 import PasswordHasher
from sqlalchemy import select

from bpm import Engine
from bpm.api.app import create_app
from bpm.api.auth import parse_api_keys
from bpm.identity import passwords
from bpm.store import tables as t
from tests.api.conftest import bpmn
from tests.api.inprocess import InProcess

OPS = {"Authorization": "Bearer ops-secret"}
KEYS = "ops:ops-secret,work:work-secret:orders"
PASSWORD = "correct horse battery"

APPROVAL = bpmn(
    "approval",
    """
    <bpmn:startEvent id="start"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="approve"/>
    <bpmn:userTask id="approve" name="Approve" camunda:candidateGroups="sales"/>
    <bpmn:sequenceFlow id="f2" sourceRef="approve" targetRef="end"/>
    <bpmn:endEvent id="end"/>
    """,
)
AUDIT = bpmn(
    "audit",
    """
    <bpmn:startEvent id="start"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="check"/>
    <bpmn:userTask id="check" name="Check" camunda:candidateUsers="carl"
        camunda:candidateGroups="finance"/>
    <bpmn:sequenceFlow id="f2" sourceRef="check" targetRef="end"/>
    <bpmn:endEvent id="end"/>
    """,
)


def basic(user: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{PASSWORD}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


ANN, BOB, CARL, ROOT = basic("ann"), basic("bob"), basic("carl"), basic("root")


@pytest.fixture(autouse=True)
def cheap_hashes() -> Iterator[None]:
    previous = passwords.use_parameters(PasswordHasher(time_cost=1, memory_cost=8, parallelism=1))
    yield
    passwords.use_parameters(previous)


def setup_people(http: InProcess) -> None:
    """ann, bob (sales); carl (finance); root (camunda-admin)."""
    for user in ("ann", "bob", "carl", "root"):
        body = {"profile": {"id": user}, "credentials": {"password": PASSWORD}}
        assert http.post("/user/create", json=body, headers=OPS).status_code == 204
    for group in ("sales", "finance", "camunda-admin"):
        assert http.post("/group/create", json={"id": group}, headers=OPS).status_code == 204
    for group, user in (
        ("sales", "ann"),
        ("sales", "bob"),
        ("finance", "carl"),
        ("camunda-admin", "root"),
    ):
        assert http.put(f"/group/{group}/members/{user}", headers=OPS).status_code == 204


def deploy_and_start(http: InProcess) -> tuple[str, str]:
    for name, xml in (("approval.bpmn", APPROVAL), ("audit.bpmn", AUDIT)):
        r = http.post("/deployment/create", files={"f": (name, xml.encode())}, headers=OPS)
        assert r.status_code == 200, r.text
    ids = []
    for key in ("approval", "audit"):
        r = http.post(f"/process-definition/key/{key}/start", json={}, headers=OPS)
        assert r.status_code == 200, r.text
        ids.append(r.json()["id"])
    return ids[0], ids[1]


@pytest.fixture
def served(pg_database_url: str) -> Iterator[tuple[InProcess, Engine]]:
    engine = Engine(pg_database_url)
    http = InProcess(create_app(engine, api_keys=parse_api_keys(KEYS)))
    setup_people(http)
    yield http, engine
    http.close()
    engine.close()


def task_ids(r: Any) -> list[str]:
    assert r.status_code == 200, r.text
    return [x["taskDefinitionKey"] for x in r.json()]


def task_rows(engine: Engine) -> list[dict[str, Any]]:
    with engine.db.connect() as conn:
        return [
            dict(r) for r in conn.execute(select(t.user_task).order_by(t.user_task.c.id)).mappings()
        ]


def test_users_see_their_own_and_their_groups_tasks_only(served: tuple[InProcess, Engine]) -> None:
    http, _ = served
    deploy_and_start(http)
    assert task_ids(http.get("/task", headers=ANN)) == ["approve"]
    assert task_ids(http.get("/task", headers=CARL)) == ["check"]
    assert task_ids(
        http.get("/task", headers=ROOT, params={"sortBy": "name", "sortOrder": "asc"})
    ) == ["approve", "check"]
    assert http.get("/task/count", headers=ANN).json() == {"count": 1}
    assert http.post("/task/count", json={}, headers=CARL).json() == {"count": 1}
    check = http.get("/task", headers=CARL).json()[0]
    r = http.get(f"/task/{check['id']}", headers=ANN)  # not hers: as if it did not exist
    assert r.status_code == 404 and r.json()["type"] == "InvalidRequestException"
    for path in ("identity-links", "variables", "form-variables", "comment"):
        assert http.get(f"/task/{check['id']}/{path}", headers=ANN).status_code == 404, path
    # a worker key has no business with user tasks
    assert http.get("/task", headers={"Authorization": "Bearer work-secret"}).status_code == 403


def test_candidate_user_includes_the_users_groups_as_camunda(
    served: tuple[InProcess, Engine],
) -> None:
    http, _ = served
    deploy_and_start(http)
    assert task_ids(http.get("/task", headers=OPS, params={"candidateUser": "ann"})) == ["approve"]
    assert task_ids(http.get("/task", headers=OPS, params={"candidateUser": "carl"})) == ["check"]
    assert task_ids(http.get("/task", headers=OPS, params={"candidateUser": "nobody"})) == []
    body = {"candidateUser": "bob", "withCandidateGroups": True}
    assert task_ids(http.post("/task", json=body, headers=OPS)) == ["approve"]
    approve = http.get("/task", headers=ANN).json()[0]
    assert (
        http.post(f"/task/{approve['id']}/claim", json={"userId": "ann"}, headers=ANN).status_code
        == 204
    )
    # claimed: no longer a candidate task, unless assigned ones are asked for
    assert task_ids(http.get("/task", headers=OPS, params={"candidateUser": "bob"})) == []
    wide = {"candidateUser": "bob", "includeAssignedTasks": "true"}
    assert task_ids(http.get("/task", headers=OPS, params=wide)) == ["approve"]
    assert task_ids(http.get("/task", headers=OPS, params={"involvedUser": "ann"})) == ["approve"]
    assert task_ids(http.get("/task", headers=OPS, params={"involvedUser": "carl"})) == ["check"]
    # bob still sees it (his group is its candidate), and it is ann's
    assert [x["assignee"] for x in http.get("/task", headers=BOB).json()] == ["ann"]


def test_claim_is_refused_to_non_candidates_and_for_others(
    served: tuple[InProcess, Engine],
) -> None:
    http, engine = served
    deploy_and_start(http)
    approve = http.get("/task", headers=ANN).json()[0]["id"]
    check = http.get("/task", headers=CARL).json()[0]["id"]
    before = task_rows(engine)
    refusals = [
        (http.post(f"/task/{check}/claim", json={"userId": "ann"}, headers=ANN), 404),  # unseen
        (
            http.post(f"/task/{approve}/claim", json={"userId": "bob"}, headers=ANN),
            403,
        ),  # for another
        (http.post(f"/task/{approve}/assignee", json={"userId": "ann"}, headers=ANN), 403),
        (http.put(f"/task/{approve}", json={"name": "mine"}, headers=ANN), 403),
        (http.post(f"/task/{approve}/complete", json={}, headers=CARL), 404),
        (http.post(f"/task/{approve}/claim", json={"userId": ""}, headers=ANN), 400),
    ]
    for r, status in refusals:
        assert r.status_code == status, (r.request.url, r.text)
    assert task_rows(engine) == before
    assert (
        http.post(f"/task/{approve}/claim", json={"userId": "ann"}, headers=ANN).status_code == 204
    )
    # bob sees it but it is ann's now: he may not take it, unclaim it or complete it
    after_claim = task_rows(engine)
    r = http.post(f"/task/{approve}/claim", json={"userId": "bob"}, headers=BOB)
    assert r.status_code == 400 and "ann" in r.json()["message"], r.text
    for action in ("unclaim", "complete"):
        r = http.post(f"/task/{approve}/{action}", json={}, headers=BOB)
        assert r.status_code == 403 and "assigned to 'ann'" in r.json()["message"], r.text
    assert task_rows(engine) == after_claim
    # an admin user gives any task to anyone
    assert (
        http.post(f"/task/{check}/assignee", json={"userId": "ann"}, headers=ROOT).status_code
        == 204
    )
    assert task_ids(
        http.get("/task", headers=ANN, params={"sortBy": "name", "sortOrder": "asc"})
    ) == ["approve", "check"]


def test_task_authorization_off_lets_every_user_see_and_claim(pg_database_url: str) -> None:
    engine = Engine(pg_database_url)
    http = InProcess(create_app(engine, api_keys=parse_api_keys(KEYS), task_authorization=False))
    try:
        setup_people(http)
        deploy_and_start(http)
        assert len(http.get("/task", headers=ANN).json()) == 2
        check = next(
            x for x in http.get("/task", headers=ANN).json() if x["taskDefinitionKey"] == "check"
        )
        assert (
            http.post(f"/task/{check['id']}/claim", json={"userId": "ann"}, headers=ANN).status_code
            == 204
        )
        # still only for oneself
        assert (
            http.post(f"/task/{check['id']}/claim", json={"userId": "bob"}, headers=BOB).status_code
            == 400
        )
    finally:
        http.close()
        engine.close()


def test_comments_are_kept_and_shown_to_who_sees_the_task(served: tuple[InProcess, Engine]) -> None:
    http, engine = served
    deploy_and_start(http)
    approve = http.get("/task", headers=ANN).json()[0]
    tid = approve["id"]
    r = http.post(f"/task/{tid}/comment/create", json={"message": "<b>looks fine</b>"}, headers=ANN)
    assert r.status_code == 200, r.text
    made = r.json()
    assert made["userId"] == "ann" and made["message"] == "<b>looks fine</b>"
    assert made["processInstanceId"] == approve["processInstanceId"]
    listed = http.get(f"/task/{tid}/comment", headers=BOB).json()
    assert [c["id"] for c in listed] == [made["id"]]
    assert (
        http.get(f"/task/{tid}/comment/{made['id']}", headers=BOB).json()["message"]
        == made["message"]
    )
    assert http.get(f"/task/{tid}/comment/nope", headers=BOB).status_code == 404
    with engine.db.connect() as conn:
        before = conn.execute(select(t.task_comment)).all()
    for body, words in (
        ({"message": ""}, "required"),
        ({"message": "x" * 4001}, "4000"),
        ({}, "message"),
    ):
        r = http.post(f"/task/{tid}/comment/create", json=body, headers=ANN)
        assert r.status_code == 400 and words in r.json()["message"], r.text
    assert (
        http.post(f"/task/{tid}/comment/create", json={"message": "hi"}, headers=CARL).status_code
        == 404
    )
    with engine.db.connect() as conn:
        assert conn.execute(select(t.task_comment)).all() == before


def test_two_users_completing_one_task_at_once_one_wins(
    served: tuple[InProcess, Engine], pg_database_url: str
) -> None:
    http, engine = served
    deploy_and_start(http)
    tid = http.get("/task", headers=ANN).json()[0]["id"]
    # both are candidates of the unassigned task: each may complete it
    results: list[int] = []
    barrier = threading.Barrier(2)
    engines = [Engine(pg_database_url) for _ in range(2)]
    apps = [InProcess(create_app(e, api_keys=parse_api_keys(KEYS))) for e in engines]
    for app in apps:  # FastAPI builds a route's body model on its first call: not in the race
        warm = {"variables": {"decision": {"value": "-"}}}
        assert app.post("/task/none/complete", json=warm, headers=ANN).status_code == 404

    def complete(client: InProcess, who: dict[str, str], value: str) -> None:
        barrier.wait()
        body = {"variables": {"decision": {"value": value}}}
        results.append(client.post(f"/task/{tid}/complete", json=body, headers=who).status_code)

    threads = [
        threading.Thread(target=complete, args=(apps[0], ANN, "ann")),
        threading.Thread(target=complete, args=(apps[1], BOB, "bob")),
    ]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for a, e in zip(apps, engines, strict=True):
        a.close()
        e.close()
    assert sorted(results) == [204, 404], results
    inst = engine.instances(definition_key="approval")[0]
    assert inst.state.value == "completed"
    assert inst.variables["decision"] in ("ann", "bob")
    r = http.post(f"/task/{tid}/complete", json={}, headers=ANN)
    assert r.status_code == 404
    assert r.json() == {
        "type": "InvalidRequestException",
        "message": f"No matching task with id {tid}",
        "code": None,
    }


def test_comments_of_ended_tasks_stay_readable_history_is_for_admins(
    served: tuple[InProcess, Engine],
) -> None:
    http, engine = served
    deploy_and_start(http)
    tid = http.get("/task", headers=ANN).json()[0]["id"]
    made = http.post(f"/task/{tid}/comment/create", json={"message": "ok"}, headers=ANN).json()
    assert http.post(f"/task/{tid}/claim", json={"userId": "ann"}, headers=ANN).status_code == 204
    assert http.post(f"/task/{tid}/complete", json={}, headers=ANN).status_code == 204
    assert http.get(f"/task/{tid}", headers=ANN).status_code == 404  # no longer open
    for who in (ANN, BOB, ROOT, OPS):  # who saw it (assignee, candidate group), admins
        listed = http.get(f"/task/{tid}/comment", headers=who)
        assert [c["id"] for c in listed.json()] == [made["id"]], listed.text
        one = http.get(f"/task/{tid}/comment/{made['id']}", headers=who)
        assert one.json()["message"] == "ok"
    with engine.db.connect() as conn:
        before = conn.execute(select(t.task_comment)).all()
    for r in (
        http.get(f"/task/{tid}/comment", headers=CARL),  # never saw it
        http.get(f"/task/{tid}/comment/{made['id']}", headers=CARL),
        http.post(f"/task/{tid}/comment/create", json={"message": "late"}, headers=ANN),
    ):
        assert r.status_code == 404, r.text
        assert r.json()["message"] == f"No matching task with id {tid}"
    with engine.db.connect() as conn:
        assert conn.execute(select(t.task_comment)).all() == before
    # history lists are for administrators: a user gets 403, not a filtered list
    for path in ("/history/task", "/history/task/count", "/history/process-instance",
                 "/history/activity-instance", "/history/variable-instance"):  # fmt: skip
        r = http.get(path, headers=ANN)
        assert r.status_code == 403 and r.json()["type"] == "AuthorizationException", r.text
        assert http.get(path, headers=ROOT).status_code == 200
