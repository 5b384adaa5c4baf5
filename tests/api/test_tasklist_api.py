"""The task list's own calls (``/tasklist/api/...``) and its session on ``/engine-rest``,
in-process against PostgreSQL: a sign-in makes an HttpOnly SameSite=Strict cookie; reads
need only the cookie, writes also the session's CSRF token and no foreign Origin; a new
password ends the session; a generated form comes back as a form-js schema."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from argon2 import PasswordHasher

from bpm import Engine
from bpm.api.app import create_app
from bpm.api.auth import parse_api_keys
from bpm.identity import passwords
from tests.api.inprocess import InProcess

FORMS = Path(__file__).resolve().parents[1] / "data" / "forms"
OPS = {"Authorization": "Bearer ops-secret"}
PASSWORD = "correct horse battery"
ROOT = "http://t"


@pytest.fixture(autouse=True)
def cheap_hashes() -> Iterator[None]:
    previous = passwords.use_parameters(PasswordHasher(time_cost=1, memory_cost=8, parallelism=1))
    yield
    passwords.use_parameters(previous)


@pytest.fixture
def http(pg_database_url: str) -> Iterator[InProcess]:
    engine = Engine(pg_database_url)
    client = InProcess(create_app(engine, api_keys=parse_api_keys("ops:ops-secret")))
    body = {"profile": {"id": "ann"}, "credentials": {"password": PASSWORD}}
    assert client.post("/user/create", json=body, headers=OPS).status_code == 204
    assert client.post("/group/create", json={"id": "managers"}, headers=OPS).status_code == 204
    assert client.put("/group/managers/members/ann", headers=OPS).status_code == 204
    files = [("f", ("generated.bpmn", (FORMS / "generated.bpmn").read_bytes()))]
    assert client.post("/deployment/create", files=files, headers=OPS).status_code == 200
    start = {"variables": {"days": {"value": 2}}}
    assert (
        client.post("/process-definition/key/leave/start", json=start, headers=OPS).status_code
        == 200
    )
    yield client
    client.close()
    engine.close()


def sign_in(http: InProcess) -> str:
    r = http.post(f"{ROOT}/tasklist/api/session", json={"username": "ann", "password": PASSWORD})
    assert r.status_code == 200, r.text
    cookie = r.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    assert PASSWORD not in r.text
    return str(r.json()["csrf"])


def test_the_session_reads_with_the_cookie_and_writes_with_its_token(http: InProcess) -> None:
    assert http.get(f"{ROOT}/tasklist/api/session").status_code == 401
    page = http.get(f"{ROOT}/tasklist")
    assert (
        page.status_code == 200 and "script-src 'self'" in page.headers["content-security-policy"]
    )
    csrf = sign_in(http)
    me = http.get(f"{ROOT}/tasklist/api/session").json()
    assert me == {"user": "ann", "groups": ["managers"], "csrf": csrf}
    (task,) = http.get("/task").json()  # the cookie alone reads, as ann
    assert task["taskDefinitionKey"] == "approve"
    url = f"/task/{task['id']}/claim"
    refused = [
        http.post(url, json={"userId": "ann"}),  # no token
        http.post(url, json={"userId": "ann"}, headers={"X-CSRF-Token": "forged"}),
        http.post(
            url,
            json={"userId": "ann"},
            headers={"X-CSRF-Token": csrf, "Origin": "http://evil.example"},
        ),
    ]
    for r in refused:
        assert r.status_code == 403 and r.json()["type"] == "AuthorizationException", r.text
    assert http.get(f"/task/{task['id']}").json()["assignee"] is None
    assert http.post(url, json={"userId": "ann"}, headers={"X-CSRF-Token": csrf}).status_code == 204
    schema = http.get(f"{ROOT}/tasklist/api/task/{task['id']}/form").json()["schema"]
    by_key = {c["key"]: c for c in schema["components"]}
    assert by_key["approved"]["type"] == "checkbox"
    assert by_key["note"]["validate"] == {"maxLength": 200}
    # a new password ends the session
    body = {"password": "another password", "authenticatedUserPassword": PASSWORD}
    r = http.put("/user/ann/credentials", json=body, headers={"X-CSRF-Token": csrf})
    assert r.status_code == 204, r.text
    assert http.get(f"{ROOT}/tasklist/api/session").status_code == 401
    assert http.get("/task").status_code == 401


def test_sign_in_refusals(http: InProcess) -> None:
    for body, status in (
        ({"username": "ann", "password": "wrong password"}, 401),
        ({"username": "nobody", "password": PASSWORD}, 401),
        ({"username": "", "password": PASSWORD}, 400),
        ({"username": "ann"}, 400),
    ):
        r = http.post(f"{ROOT}/tasklist/api/session", json=body)
        assert r.status_code == status, r.text
        assert "set-cookie" not in r.headers
    sign_in(http)
    r = http.delete(f"{ROOT}/tasklist/api/session")
    assert r.status_code == 204 and 'bpm_tasklist=""' in r.headers["set-cookie"]
