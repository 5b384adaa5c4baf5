"""Users, groups and memberships over Camunda's REST shapes (``/user``, ``/group``,
``/identity``), in-process against a real PostgreSQL database: who may see and change what,
passwords kept as argon2 hashes only, sign-ins slowed, and every refusal changes nothing."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from argon2 import PasswordHasher
from sqlalchemy import select

from bpm import Engine
from bpm.api.app import create_app
from bpm.api.auth import parse_api_keys
from bpm.errors import ConfigurationError
from bpm.identity import FileIdentity, GroupQuery, UserQuery, passwords
from bpm.identity.passwords import hash_password
from bpm.identity.throttle import SignInThrottle
from bpm.store import tables as t
from tests.api.inprocess import InProcess

KEYS = (
    "ops:ops-secret,view:view-secret:role=viewer,work:work-secret:orders,as-ann:ak-secret:user=ann"
)
OPS = {"Authorization": "Bearer ops-secret"}
PASSWORD = "correct horse battery"


def basic(user: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


ANN = basic("ann", PASSWORD)


@pytest.fixture(autouse=True)
def cheap_hashes() -> Iterator[None]:
    """argon2 at its recommended cost takes over a second on a loaded test machine: the
    cases use the same algorithm at its lowest cost (the parameters are in each hash)."""
    previous = passwords.use_parameters(PasswordHasher(time_cost=1, memory_cost=8, parallelism=1))
    yield
    passwords.use_parameters(previous)


@pytest.fixture
def served(pg_database_url: str) -> Iterator[tuple[InProcess, Engine]]:
    engine = Engine(pg_database_url)
    app = create_app(engine, api_keys=parse_api_keys(KEYS))
    client = InProcess(app)
    yield client, engine
    client.close()
    engine.close()


@pytest.fixture
def http(served: tuple[InProcess, Engine]) -> InProcess:
    return served[0]


def create_user(http: InProcess, user_id: str, password: str = PASSWORD, **profile: Any) -> None:
    body = {"profile": {"id": user_id, **profile}, "credentials": {"password": password}}
    r = http.post("/user/create", json=body, headers=OPS)
    assert r.status_code == 204, r.text


def people(http: InProcess) -> None:
    """ann (sales), bob (sales, finance), root (camunda-admin)."""
    create_user(http, "ann", firstName="Ann", lastName="Lee", email="ann@example.com")
    create_user(http, "bob", firstName="Bob", lastName="Stone")
    create_user(http, "root")
    for gid, name in (("sales", "Sales"), ("finance", "Finance"), ("camunda-admin", "Admins")):
        r = http.post(
            "/group/create", json={"id": gid, "name": name, "type": "WORKFLOW"}, headers=OPS
        )
        assert r.status_code == 204, r.text
    for gid, uid in (
        ("sales", "ann"),
        ("sales", "bob"),
        ("finance", "bob"),
        ("camunda-admin", "root"),
    ):
        assert http.put(f"/group/{gid}/members/{uid}", headers=OPS).status_code == 204


def rows(engine: Engine, table: Any) -> list[dict[str, Any]]:
    with engine.db.connect() as conn:
        return [dict(r) for r in conn.execute(select(table)).mappings()]


def error(r: Any, status: int, type_: str, words: str) -> None:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/json"
    body = r.json()
    assert body["type"] == type_, body
    assert words in body["message"], body


def test_an_admin_manages_users_groups_and_memberships_in_camundas_shapes(http: InProcess) -> None:
    people(http)
    r = http.get("/user", headers=OPS, params={"sortBy": "userId", "sortOrder": "asc"})
    assert r.json() == [
        {"id": "ann", "firstName": "Ann", "lastName": "Lee", "email": "ann@example.com"},
        {"id": "bob", "firstName": "Bob", "lastName": "Stone", "email": None},
        {"id": "root", "firstName": None, "lastName": None, "email": None},
    ]
    assert http.get("/user/count", headers=OPS).json() == {"count": 3}
    members = http.get("/user", headers=OPS, params={"memberOfGroup": "sales"}).json()
    assert [u["id"] for u in members] == ["ann", "bob"]
    liked = http.get("/user", headers=OPS, params={"lastNameLike": "St%"}).json()
    assert [u["id"] for u in liked] == ["bob"]
    assert http.get("/user/ann/profile", headers=OPS).json()["email"] == "ann@example.com"
    assert http.get("/group/sales", headers=OPS).json() == {
        "id": "sales", "name": "Sales", "type": "WORKFLOW"
    }  # fmt: skip
    bobs = http.get("/group", headers=OPS, params={"member": "bob", "sortBy": "id"}).json()
    assert [g["id"] for g in bobs] == ["finance", "sales"]
    assert http.get("/group/count", headers=OPS).json() == {"count": 3}
    info = http.get("/identity/groups", headers=OPS, params={"userId": "ann"}).json()
    assert info["groups"] == [{"id": "sales", "name": "Sales"}]
    assert [u["id"] for u in info["groupUsers"]] == ["ann", "bob"]
    assert info["groupUsers"][0]["displayName"] == "Ann Lee"
    assert (
        http.put(
            "/user/ann/profile", json={"id": "ann", "firstName": "Annie"}, headers=OPS
        ).status_code
        == 204
    )
    assert http.get("/user/ann/profile", headers=OPS).json()["firstName"] == "Annie"
    assert http.put("/group/sales", json={"name": "Sales EU"}, headers=OPS).status_code == 204
    assert http.delete("/group/sales/members/bob", headers=OPS).status_code == 204
    assert [g["id"] for g in http.get("/group", headers=OPS, params={"member": "bob"}).json()] == [
        "finance"
    ]
    assert http.delete("/user/bob", headers=OPS).status_code == 204
    assert http.get("/user/bob/profile", headers=OPS).status_code == 404
    assert http.delete("/group/finance", headers=OPS).status_code == 204
    assert http.get("/group/count", headers=OPS).json() == {"count": 2}


def test_passwords_are_argon2_hashes_only_and_users_sign_in_with_basic(
    served: tuple[InProcess, Engine],
) -> None:
    http, engine = served
    people(http)
    stored = {r["id"]: r["password_hash"] for r in rows(engine, t.identity_user)}
    assert all(h.startswith("$argon2id$") for h in stored.values())
    assert PASSWORD not in json.dumps(rows(engine, t.identity_user), default=str)
    me = http.get("/user/ann/profile", headers=ANN)
    assert me.status_code == 200 and PASSWORD not in me.text
    assert http.get("/user/ann/profile", headers=basic("ann", "wrong password")).status_code == 401
    assert http.get("/user/ann/profile", headers=basic("nobody", PASSWORD)).status_code == 401
    r = http.post("/identity/verify", json={"username": "bob", "password": PASSWORD}, headers=OPS)
    assert r.json() == {"authenticatedUser": "bob", "authenticated": True}
    r = http.post(
        "/identity/verify", json={"username": "bob", "password": "nope nope"}, headers=OPS
    )
    assert r.json() == {"authenticatedUser": None, "authenticated": False}


def test_a_user_sees_only_themselves_and_their_groups_and_may_not_administer(
    served: tuple[InProcess, Engine],
) -> None:
    http, engine = served
    people(http)
    assert [u["id"] for u in http.get("/user", headers=ANN).json()] == ["ann"]
    assert http.get("/user/count", headers=ANN).json() == {"count": 1}
    error(http.get("/user/bob/profile", headers=ANN), 404, "InvalidRequestException", "bob")
    assert [g["id"] for g in http.get("/group", headers=ANN).json()] == ["sales"]
    assert http.get("/group", headers=ANN, params={"member": "bob"}).json() == []
    error(http.get("/group/finance", headers=ANN), 404, "InvalidRequestException", "finance")
    error(
        http.get("/identity/groups", headers=ANN, params={"userId": "bob"}),
        403, "AuthorizationException", "may not read the groups",
    )  # fmt: skip
    before_users, before_members = (
        rows(engine, t.identity_user),
        rows(engine, t.identity_membership),
    )
    refused = [
        http.post("/user/create", json={"profile": {"id": "eve"}}, headers=ANN),
        http.put("/group/camunda-admin/members/ann", headers=ANN),
        http.delete("/group/sales/members/bob", headers=ANN),
        http.delete("/user/bob", headers=ANN),
        http.post("/group/create", json={"id": "mine"}, headers=ANN),
        http.put("/user/bob/profile", json={"firstName": "B"}, headers=ANN),
        http.put("/user/bob/credentials", json={"password": "new password 1"}, headers=ANN),
        # a user is not an operator or a worker
        http.get("/deployment", headers=ANN),
        http.post(
            "/external-task/fetchAndLock",
            json={"workerId": "w", "topics": [{"topicName": "orders", "lockDuration": 1000}]},
            headers=ANN,
        ),
    ]
    for r in refused:
        assert r.status_code == 403, (r.request.url, r.text)
        assert r.json()["type"] == "AuthorizationException"
    assert rows(engine, t.identity_user) == before_users
    assert rows(engine, t.identity_membership) == before_members
    # an admin user (camunda-admin) may
    root = basic("root", PASSWORD)
    assert http.get("/user/count", headers=root).json() == {"count": 3}
    assert http.get("/deployment", headers=root).status_code == 200


def test_changing_a_password_needs_the_current_one(served: tuple[InProcess, Engine]) -> None:
    http, engine = served
    people(http)
    before = rows(engine, t.identity_user)
    body = {"password": "a new password", "authenticatedUserPassword": "not mine"}
    error(
        http.put("/user/ann/credentials", json=body, headers=ANN),
        400, "InvalidRequestException", "authenticatedUserPassword",
    )  # fmt: skip
    short = {"password": "short", "authenticatedUserPassword": PASSWORD}
    error(
        http.put("/user/ann/credentials", json=short, headers=ANN),
        400,
        "InvalidRequestException",  # the body's schema says so (minLength 8)
        "password: String should have at least 8 characters",
    )
    assert rows(engine, t.identity_user) == before
    body["authenticatedUserPassword"] = PASSWORD
    assert http.put("/user/ann/credentials", json=body, headers=ANN).status_code == 204
    assert http.get("/user/ann/profile", headers=ANN).status_code == 401
    assert http.get("/user/ann/profile", headers=basic("ann", "a new password")).status_code == 200
    # an operator key sets anyone's password without one
    reset = {"password": "reset by ops"}
    assert http.put("/user/bob/credentials", json=reset, headers=OPS).status_code == 204
    assert http.get("/user/bob/profile", headers=basic("bob", "reset by ops")).status_code == 200


def test_bad_identity_input_is_refused_and_changes_nothing(
    served: tuple[InProcess, Engine],
) -> None:
    http, engine = served
    people(http)
    tables = (t.identity_user, t.identity_group, t.identity_membership)
    before = [rows(engine, x) for x in tables]
    cases = [
        (
            http.post(
                "/user/create",
                json={"profile": {"id": "ann"}, "credentials": {"password": "x" * 12}},
                headers=OPS,
            ),
            400,
            "already exists",
        ),
        (
            http.post(
                "/user/create",
                json={"profile": {"id": "eve"}, "credentials": {"password": "short"}},
                headers=OPS,
            ),
            400,
            "at least 8",
        ),
        (
            http.post(
                "/user/create",
                json={"profile": {"id": "a/b"}, "credentials": {"password": PASSWORD}},
                headers=OPS,
            ),
            400,
            "'/'",
        ),
        (
            http.post(
                "/user/create", json={"profile": {"id": "eve", "email": "no-at-sign"}}, headers=OPS
            ),
            400,
            "email",
        ),
        (
            http.post("/user/create", json={"profile": {"firstName": "no id"}}, headers=OPS),
            400,
            "profile.id",
        ),
        (http.post("/user/create", json={"profile": {"id": "x" * 300}}, headers=OPS), 400, "255"),
        (
            http.post("/user/create", json={"credentials": {"password": PASSWORD}}, headers=OPS),
            400,
            "profile",
        ),
        (
            http.post(
                "/user/create",
                content=b"{not json",
                headers={**OPS, "content-type": "application/json"},
            ),
            400,
            "",
        ),
        (http.post("/group/create", json={"id": "sales"}, headers=OPS), 400, "already exists"),
        (http.post("/group/create", json={"name": "no"}, headers=OPS), 400, "id: Field required"),
        (http.put("/user/nobody/profile", json={"firstName": "X"}, headers=OPS), 404, "nobody"),
        (http.put("/user/ann/profile", json={"id": "other"}, headers=OPS), 400, "cannot change"),
        (http.put("/group/sales", json={"id": "other"}, headers=OPS), 400, "cannot change"),
        (http.put("/group/nogroup/members/ann", headers=OPS), 404, "nogroup"),
        (http.put("/group/sales/members/nobody", headers=OPS), 404, "nobody"),
        (http.delete("/group/nogroup", headers=OPS), 404, "nogroup"),
        (http.delete("/user/nobody", headers=OPS), 404, "nobody"),
        (http.get("/user", headers=OPS, params={"sortBy": "password"}), 400, "cannot sort by"),
        (http.get("/user", headers=OPS, params={"potentialStarter": "p"}), 400, "potentialStarter"),
        (http.get("/identity/groups", headers=OPS), 400, "userId"),
        (http.post("/identity/verify", json={"username": "ann"}, headers=OPS), 400, "password"),
        # viewers read, workers do not come here
        (
            http.post(
                "/group/create", json={"id": "v"}, headers={"Authorization": "Bearer view-secret"}
            ),
            403,
            "read-only",
        ),
        (
            http.get("/user", headers={"Authorization": "Bearer work-secret"}),
            403,
            "limited to topics",
        ),
        (http.get("/user"), 401, "authentication required"),
    ]
    for r, status, words in cases:
        assert r.status_code == status, (r.request.method, r.request.url, r.text)
        assert r.headers["content-type"] == "application/json"
        assert words in r.json()["message"], r.json()
    assert [rows(engine, x) for x in tables] == before


def test_a_key_acts_as_its_user(http: InProcess) -> None:
    as_ann = {"Authorization": "Bearer ak-secret"}
    error(http.get("/user", headers=as_ann), 401, "AuthenticationException", "does not exist")
    people(http)
    assert [u["id"] for u in http.get("/user", headers=as_ann).json()] == ["ann"]
    assert http.post("/group/create", json={"id": "x"}, headers=as_ann).status_code == 403


def test_failed_sign_ins_are_slowed_per_user_then_refused_without_checking(
    http: InProcess,
) -> None:
    people(http)
    for _ in range(5):
        assert http.get("/user", headers=basic("ann", "guess guess")).status_code == 401
    r = http.get("/user", headers=ANN)  # the right password, too soon: not even checked
    error(r, 429, "AuthenticationException", "too many failed sign-ins")
    assert int(r.headers["retry-after"]) >= 1
    # another user from elsewhere is not held up by ann's count (the address bound is 20)
    assert http.get("/user", headers=basic("bob", PASSWORD)).status_code == 200


def test_the_throttle_counts_per_user_and_per_address_and_forgets() -> None:
    th = SignInThrottle(free_per_user=2, free_per_address=3, window=100, cap=30)
    assert th.wait("ann", "1.1.1.1", now=0) == 0
    th.failed("ann", "1.1.1.1", now=0)
    th.failed("ann", "1.1.1.1", now=1)
    assert th.wait("ann", "1.1.1.1", now=1) == 1.0  # 2 ** 0 after the free ones
    th.failed("ann", "1.1.1.1", now=2)
    assert th.wait("ann", "9.9.9.9", now=2) == 2.0  # per user, from any address
    assert th.wait("bob", "1.1.1.1", now=2) == 1.0  # per address, for any user
    assert th.wait("bob", "2.2.2.2", now=2) == 0
    for i in range(10):
        th.failed("ann", None, now=3 + i)
    assert th.wait("ann", None, now=12) == 30.0  # capped
    assert th.wait("ann", None, now=12 + 101) == 0  # the window passed
    th.succeeded("ann")
    assert th.wait("ann", None, now=13) == 0


def test_a_file_provider_is_read_only_and_refuses_plain_passwords(
    tmp_path: Path, pg_database_url: str
) -> None:
    path = tmp_path / "identity.json"
    doc: dict[str, list[dict[str, Any]]] = {
        "users": [
            {"id": "ann", "firstName": "Ann", "password": hash_password(PASSWORD)},
            {"id": "bob", "lastName": "Stone"},
        ],
        "groups": [{"id": "sales", "name": "Sales", "members": ["ann", "bob"]}, {"id": "hr"}],
    }
    path.write_text(json.dumps(doc))
    identity = FileIdentity(path)
    assert identity.check_password("ann", PASSWORD)
    assert not identity.check_password("bob", PASSWORD)  # no password: never signs in
    assert identity.groups_of("bob") == {"sales"}
    assert [u.id for u in identity.users(UserQuery(member_of_group="sales"))] == ["ann", "bob"]
    assert [g.id for g in identity.groups(GroupQuery(sorting=(("id", False),)))] == ["sales", "hr"]
    assert identity.count_users(UserQuery(last_name_like="St%")) == 1
    engine = Engine(pg_database_url)
    http = InProcess(create_app(engine, api_keys=parse_api_keys(KEYS), identity=identity))
    try:
        error(
            http.post("/group/create", json={"id": "x"}, headers=OPS),
            403,
            "AuthorizationException",
            "read-only",
        )
        error(
            http.put("/group/hr/members/ann", headers=OPS),
            403,
            "AuthorizationException",
            "read-only",
        )
        assert http.get("/group", headers=ANN).json() == [
            {"id": "sales", "name": "Sales", "type": None}
        ]
    finally:
        http.close()
        engine.close()
    assert identity.groups_of("ann") == {"sales"}
    doc["users"][1]["password"] = "plain-text"
    path.write_text(json.dumps(doc))
    with pytest.raises(ConfigurationError, match="argon2 hash"):
        FileIdentity(path)
    path.write_text('{"groups": [{"id": "g", "members": ["ghost"]}]}')
    with pytest.raises(ConfigurationError, match="no user 'ghost'"):
        FileIdentity(path)
