"""The cockpit's JSON API on a real ``bpm api`` process: roles, sessions, CSRF, reads,
actions, and bad input to every endpoint (a clear 4xx, nothing changed)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from bpm import Engine, EngineConfig, RetryPolicy
from bpm.builder import Process
from bpm.handlers import HandlerRegistry, TaskContext
from bpm.runtime.external import FetchRequest, TopicRequest
from tests.api.conftest import ApiServer, one_task
from tests.engine_helpers import QueueDispatcher, drain, make_engine, table_dump

KEYS = "ops:opsecret,view:viewsecret:role=viewer,w:wsecret:topicA"
OPS = {"Authorization": "Bearer opsecret"}
VIEW = {"Authorization": "Bearer viewsecret"}
ROOT = Path(__file__).resolve().parents[2]


class World:
    """A server with keys, an engine in the test that plays the workers, and data."""

    def __init__(self, server: ApiServer, url: str) -> None:
        self.server = server
        self.broken = {"charge": True}
        reg = HandlerRegistry()
        reg.register("charge", self._charge, retry=RetryPolicy.none())
        self.engine, self.q = make_engine(url, reg, EngineConfig(max_variable_bytes=2000))
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=30)
        self.engine.deploy(
            Process("pay", name="Payment")
            .start("start")
            .service_task("charge", handler="charge")
            .timer("cool_off", duration="PT1H")
            .end("end")
            .sequence("start", "charge", "cool_off", "end")
            .build()
        )
        self.engine.deploy((ROOT / "examples" / "order.bpmn").read_text(), resource="order.bpmn")
        self.engine.deploy(one_task("ext", "topicA"))

    def _charge(self, ctx: TaskContext) -> dict[str, Any]:
        if self.broken["charge"]:
            raise RuntimeError("card declined")
        return {"charged": True}

    def failing(self, business_key: str = "f") -> str:
        inst = self.engine.start("pay", {"amount": 5}, business_key=business_key)
        drain(self.engine, self.q)
        return inst.id

    def run_workers(self) -> None:
        """Play the workers: the API process publishes nowhere, so sweep Ready steps up
        (as beat's sweeper would) and run them."""
        self.engine.redispatch_stale_ready(now=datetime.now(UTC) + timedelta(minutes=1))
        drain(self.engine, self.q)

    def dump(self) -> dict[str, list[tuple[Any, ...]]]:
        return table_dump(self.engine)

    def login(self, secret: str) -> tuple[httpx.Client, str]:
        client = httpx.Client(base_url=self.http.base_url, timeout=30)
        r = client.post("/api/session", json={"secret": secret})
        assert r.status_code == 200, r.text
        return client, str(r.json()["csrf"])


@pytest.fixture
def world(pg_database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    monkeypatch.setenv("BPM_MAX_VARIABLE_BYTES", "2000")  # for the server process
    server = ApiServer(pg_database_url, keys=KEYS, log=tmp_path / "api.log").start()
    w = World(server, pg_database_url)
    yield w
    w.http.close()
    w.engine.close()
    server.kill()


def test_who_may_read(world: World) -> None:
    http = world.http
    r = http.get("/api/definitions")
    assert r.status_code == 401 and "WWW-Authenticate" not in r.headers
    assert r.json()["type"] == "AuthenticationException"
    assert http.get("/api/definitions", headers={"Authorization": "Bearer nope"}).status_code == 401
    worker = http.get("/api/definitions", headers={"Authorization": "Bearer wsecret"})
    assert worker.status_code == 403 and "worker key" in worker.json()["message"]
    assert http.get("/api/definitions", headers=VIEW).status_code == 200
    basic = http.get("/api/definitions", auth=("view", "viewsecret"))
    assert basic.status_code == 200
    assert http.get("/api/session").json()["authenticated"] is False
    me = http.get("/api/session", headers=VIEW).json()
    assert me["role"] == "viewer" and me["canAct"] is False
    assert http.get("/api/session", headers=OPS).json()["canAct"] is True
    # the pages and the assets are served without credentials (they hold no data)
    page = http.get("/cockpit")
    assert page.status_code == 200 and "bpmn-navigated-viewer" in page.text
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    js = http.get("/cockpit/static/vendor/bpmn-js/bpmn-navigated-viewer.production.min.js")
    assert js.status_code == 200 and "bpmn-js" in js.text[:200]


def test_viewer_keys_are_read_only_everywhere(world: World) -> None:
    iid = world.failing()
    before = world.dump()
    r = world.http.post(f"/api/instances/{iid}/suspend", headers=VIEW)
    assert r.status_code == 403 and "read-only" in r.json()["message"]
    # the Camunda REST API refuses writes by a viewer key as well
    r = world.http.delete(f"/engine-rest/process-instance/{iid}", headers=VIEW)
    assert r.status_code == 403 and "read-only" in r.json()["message"]
    assert world.http.get("/engine-rest/process-definition", headers=VIEW).status_code == 200
    assert world.dump() == before


def test_session_login_csrf_and_origin(world: World) -> None:
    iid = world.failing()
    http = world.http
    assert http.post("/api/session", json={"secret": "wrong"}).status_code == 401
    assert http.post("/api/session", json={"secret": "wsecret"}).status_code == 403
    r = http.post("/api/session", json={"secret": "opsecret"})
    assert r.status_code == 200
    cookie = r.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie
    ops, csrf = world.login("opsecret")
    assert ops.get("/api/session").json()["csrf"] == csrf
    before = world.dump()
    refused = [
        ops.post(f"/api/instances/{iid}/suspend"),  # no token: what a forged form sends
        ops.post(f"/api/instances/{iid}/suspend", headers={"X-CSRF-Token": "forged"}),
        ops.post(
            f"/api/instances/{iid}/suspend",
            headers={"X-CSRF-Token": csrf, "Origin": "http://evil.example"},
        ),
        # a form post from another site, with the cookie the browser attaches
        ops.post(
            f"/api/instances/{iid}/terminate",
            content=b"reason=x",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        ),
        # Basic credentials may be remembered by a browser: never enough to act
        http.post(f"/api/instances/{iid}/suspend", auth=("ops", "opsecret")),
    ]
    for r in refused:
        assert r.status_code == 403, r.text
        assert r.json()["type"] == "AuthorizationException"
    assert world.dump() == before
    # another session's token does not fit this session
    _other, other_csrf = world.login("opsecret")
    r = ops.post(f"/api/instances/{iid}/suspend", headers={"X-CSRF-Token": other_csrf})
    assert r.status_code == 403
    assert world.dump() == before
    viewer, view_csrf = world.login("viewsecret")
    r = viewer.post(f"/api/instances/{iid}/suspend", headers={"X-CSRF-Token": view_csrf})
    assert r.status_code == 403 and "read-only" in r.json()["message"]
    assert world.dump() == before

    ok = ops.post(
        f"/api/instances/{iid}/suspend",
        headers={"X-CSRF-Token": csrf, "Origin": str(http.base_url).rstrip("/")},
    )
    assert ok.status_code == 200 and ok.json()["state"] == "suspended"
    assert ops.delete("/api/session").status_code == 200


def test_reads(world: World) -> None:
    failing = world.failing("f-1")
    world.broken["charge"] = False
    waiting = world.engine.start("pay", business_key="w-1").id
    drain(world.engine, world.q)
    get = lambda path, **params: world.http.get(path, params=params, headers=VIEW)  # noqa: E731

    defs = {d["key"]: d for d in get("/api/definitions").json()["items"]}
    assert defs["pay"]["counts"] == {"active": 2} and defs["pay"]["openIncidents"] == 1
    one = get(f"/api/definitions/{defs['pay']['id']}").json()
    assert one["incidentsByNode"][0]["nodeId"] == "charge"

    generated = get(f"/api/definitions/{defs['pay']['id']}/xml")
    assert generated.headers["content-type"].startswith("application/xml")
    assert "BPMNShape" in generated.text and 'bpmnElement="cool_off"' in generated.text
    source = get(f"/api/definitions/{defs['order']['id']}/xml").text
    assert source == (ROOT / "examples" / "order.bpmn").read_text()

    page = get("/api/instances", has_incident="true").json()
    assert [i["id"] for i in page["items"]] == [failing] and page["next"] is None
    assert page["items"][0]["openIncidents"] == 1
    assert [i["id"] for i in get("/api/instances", business_key="w-1").json()["items"]] == [waiting]
    first = get("/api/instances", limit=1).json()
    assert first["items"][0]["id"] == waiting and first["next"]
    second = get("/api/instances", limit=1, cursor=first["next"]).json()
    assert second["items"][0]["id"] == failing

    view = get(f"/api/instances/{waiting}").json()
    assert view["overlay"]["cool_off"]["waiting"] == 1
    assert view["overlay"]["cool_off"]["reasons"] == ["timer"]
    assert view["timers"][0]["nodeId"] == "cool_off"
    failed = get(f"/api/instances/{failing}").json()
    assert failed["overlay"]["charge"]["failed"] == 1
    assert failed["incidents"][0]["message"] == "RuntimeError: card declined"

    trail = get(f"/api/instances/{waiting}/trail").json()["items"]
    assert [e["seq"] for e in trail] == [e.seq for e in world.engine.history(waiting)]
    newer = get(f"/api/instances/{waiting}/trail", after_seq=trail[-2]["seq"]).json()["items"]
    assert [e["seq"] for e in newer] == [trail[-1]["seq"]]

    incidents = get("/api/incidents").json()
    assert incidents["total"] == 1 and incidents["groups"][0]["count"] == 1
    work = get("/api/work").json()
    assert work["readyTokens"] == 0 and work["timersDueNextMinute"] == 0


def test_actions(world: World) -> None:
    http, engine = world.http, world.engine
    a, b, c = world.failing("a"), world.failing("b"), world.failing("c")
    world.broken["charge"] = False

    inc_a = engine.incidents(a)[0].id
    r = http.post(f"/api/incidents/{inc_a}/retry", headers=OPS)
    assert r.status_code == 200 and r.json()["state"] == "resolved"
    world.run_workers()
    assert engine.get_instance(a).variables["charged"] is True

    pay = engine.definition("pay").id
    r = http.post(
        "/api/incidents/retry", headers=OPS, json={"definitionId": pay, "nodeId": "charge"}
    )
    assert r.status_code == 200 and r.json()["retried"] == 2
    world.run_workers()
    assert engine.incidents() == []
    again = http.post("/api/incidents/retry", headers=OPS, json={"ids": [inc_a]}).json()
    assert again["retried"] == 0 and "not open" in again["results"][0]["error"]

    (timer,) = engine.timers(b)
    r = http.post(f"/api/timers/{timer.id}/fire", headers=OPS)
    assert r.status_code == 200
    assert engine.fire_due_timers() == 1
    assert engine.get_instance(b).state.value == "completed"

    r = http.post(f"/api/instances/{c}/variables", headers=OPS, json={"variables": {"n": 7}})
    assert r.status_code == 200 and r.json()["variables"]["n"] == 7
    assert engine.history(c)[-1].payload["by"] == "ops (cockpit)"
    assert http.post(f"/api/instances/{c}/suspend", headers=OPS).json()["state"] == "suspended"
    assert http.post(f"/api/instances/{c}/resume", headers=OPS).json()["state"] == "active"
    r = http.post(f"/api/instances/{c}/terminate", headers=OPS, json={"reason": "test over"})
    assert r.status_code == 200 and r.json()["state"] == "terminated"
    assert engine.history(c)[-1].payload["reason"] == "test over"

    ext = engine.start("ext").id
    (task,) = engine.fetch_and_lock(FetchRequest("w1", 1, (TopicRequest("topicA", 60_000),)))
    r = http.post(f"/api/external-tasks/{task.id}/unlock", headers=OPS)
    assert r.status_code == 200 and r.json()["state"] == "ready" and r.json()["lockOwner"] is None
    assert engine.history(ext)[-1].type == "external_task_unlocked"
    r = http.post(f"/api/external-tasks/{task.id}/unlock", headers=OPS)
    assert r.status_code == 400 and "not locked" in r.json()["message"]


BAD_READS = [
    ("/api/instances/no-such-instance", {}, 404),
    ("/api/instances/no-such-instance/trail", {}, 404),
    ("/api/definitions/pay:9:nope", {}, 404),
    ("/api/definitions/pay:9:nope/xml", {}, 404),
    ("/api/instances/" + "x" * 301, {}, 400),
    ("/api/instances", {"state": "sleeping"}, 400),
    ("/api/instances", {"state": "active,bogus"}, 400),
    ("/api/instances", {"started_after": "yesterday"}, 400),
    ("/api/instances", {"started_after": "2030-01-02", "started_before": "2030-01-01"}, 400),
    ("/api/instances", {"has_incident": "maybe"}, 400),
    ("/api/instances", {"limit": "0"}, 400),
    ("/api/instances", {"limit": "100000"}, 400),
    ("/api/instances", {"limit": "ten"}, 400),
    ("/api/instances", {"cursor": "not-a-cursor"}, 400),
    ("/api/instances", {"business_key": "k" * 300}, 400),
    ("/api/instances/x/trail", {"after_seq": "-1"}, 400),
    ("/api/incidents", {"limit": "-5"}, 400),
    ("/api/nothing-here", {}, 404),
]


def test_bad_reads_answer_a_clear_4xx(world: World) -> None:
    for path, params, status in BAD_READS:
        r = world.http.get(path, params=params, headers=VIEW)
        assert r.status_code == status, (path, params, r.text)
        body = r.json()
        assert set(body) >= {"type", "message"} and body["message"], body
        assert "Traceback" not in r.text


def test_bad_actions_answer_a_clear_4xx_and_change_nothing(world: World) -> None:
    iid = world.failing()
    (inc,) = world.engine.incidents(iid)
    big = "x" * 3000  # over the engine's max_variable_bytes (2000) in this test
    huge = "y" * 200_000  # over the body limit of a variables edit
    bad: list[tuple[str, Any, int, str]] = [
        ("/api/instances/no-such/terminate", {}, 404, "does not exist"),
        ("/api/instances/no-such/suspend", None, 404, "does not exist"),
        ("/api/instances/no-such/resume", None, 404, "does not exist"),
        ("/api/instances/no-such/variables", {"variables": {"a": 1}}, 404, "does not exist"),
        ("/api/incidents/no-such/retry", None, 404, "does not exist"),
        ("/api/timers/no-such/fire", None, 404, "does not exist"),
        ("/api/external-tasks/no-such/unlock", None, 404, ""),
        (f"/api/instances/{iid}/resume", None, 400, "not suspended"),
        (f"/api/instances/{iid}/variables", {"variables": {"big": big}}, 400, "over the limit"),
        (f"/api/instances/{iid}/variables", {"variables": {"h": huge}}, 413, "over"),
        (f"/api/instances/{iid}/variables", {"variables": {}}, 400, "at least one"),
        (f"/api/instances/{iid}/variables", {"variables": [1, 2]}, 400, "variables"),
        (f"/api/instances/{iid}/variables", {"vars": {"a": 1}}, 400, ""),
        (f"/api/instances/{iid}/variables", b"{not json", 400, "not valid JSON"),
        (f"/api/instances/{iid}/terminate", {"reason": "r" * 2000}, 400, "reason"),
        ("/api/incidents/retry", {}, 400, "either"),
        ("/api/incidents/retry", {"ids": [inc.id], "definitionId": "x", "nodeId": "y"}, 400, ""),
        ("/api/incidents/retry", {"definitionId": "only"}, 400, "either"),
        ("/api/incidents/retry", {"ids": ["i"] * 1001}, 400, ""),
        ("/api/incidents/retry", {"definitionId": "pay:9:no", "nodeId": "charge"}, 404, ""),
    ]
    before = world.dump()
    for path, body, status, words in bad:
        if isinstance(body, bytes):
            r = world.http.post(
                path, content=body, headers={**OPS, "Content-Type": "application/json"}
            )
        else:
            r = world.http.post(path, json=body, headers=OPS)
        assert r.status_code == status, (path, r.text[:300])
        assert words in r.json()["message"], (path, r.json())
        assert "Traceback" not in r.text
    assert world.dump() == before
    world.engine.terminate(iid)
    r = world.http.post(f"/api/incidents/{inc.id}/retry", headers=OPS)
    assert r.status_code == 400 and "not open" in r.json()["message"]


def test_keyless_server_shows_but_does_not_act(pg_database_url: str, tmp_path: Path) -> None:
    """``bpm api --insecure-no-auth``: the cockpit reads; only ``bpm dev`` may act keyless."""
    server = ApiServer(pg_database_url, log=tmp_path / "api.log").start()
    engine = Engine(pg_database_url, dispatcher=QueueDispatcher())
    try:
        engine.deploy(one_task("ext", "t"))
        iid = engine.start("ext").id
        http = httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=30)
        me = http.get("/api/session").json()
        assert me["authenticated"] is True and me["canAct"] is False
        assert http.get("/api/instances").status_code == 200
        before = table_dump(engine)
        r = http.post(f"/api/instances/{iid}/suspend", headers={"X-CSRF-Token": me["csrf"]})
        assert r.status_code == 403 and "bpm dev" in r.json()["message"]
        assert table_dump(engine) == before
    finally:
        engine.close()
        server.kill()
