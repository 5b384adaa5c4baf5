"""Workers are who they say: worker ids are namespaced by API key (issue 13 item 3,
issue 18 items 7 and 8)."""

from __future__ import annotations

import subprocess
import textwrap
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from bpm import Engine
from bpm.api.auth import parse_api_keys
from bpm.errors import ConfigurationError
from tests.api.conftest import ApiServer, history_types, instance_state, one_task
from tests.api.test_clients import _js_client_dir
from tests.engine_helpers import table_dump
from tests.support import eventually

KEYS = "k1:s1,k2:s2,ka:sa:jobs:workers=wa1|wa2"


@pytest.fixture
def keyed(pg_database_url: str, tmp_path: Path) -> Iterator[tuple[ApiServer, Engine]]:
    server = ApiServer(pg_database_url, keys=KEYS, log=tmp_path / "api.log").start()
    engine = Engine(pg_database_url)
    yield server, engine
    engine.close()
    server.kill()


def _client(server: ApiServer, key: str, secret: str) -> httpx.Client:
    return httpx.Client(base_url=server.base, auth=(key, secret), timeout=30)


def _fetch(worker: str, topic: str = "jobs") -> dict[str, Any]:
    return {
        "workerId": worker,
        "maxTasks": 5,
        "topics": [{"topicName": topic, "lockDuration": 60_000}],
    }


def test_another_key_cannot_complete_fail_or_extend_a_task_locked_under_a_worker_id(
    keyed: tuple[ApiServer, Engine],
) -> None:
    """Key k2's worker-1 is not k1's worker-1: it may fetch under that id (its own worker),
    but every report on k1's worker's task is one by another worker (400), nothing
    changed."""
    server, engine = keyed
    with _client(server, "k1", "s1") as one, _client(server, "k2", "s2") as two:
        assert (
            one.post(
                "/deployment/create", files={"f": ("p.bpmn", one_task("wid", "jobs").encode())}
            ).status_code
            == 200
        )
        iid = one.post("/process-definition/key/wid/start", json={}).json()["id"]
        [task] = one.post("/external-task/fetchAndLock", json=_fetch("worker-1")).json()
        assert task["workerId"] == "worker-1"  # as k1 sent it
        before = history_types(engine, iid)
        attempts = {
            "complete": {"workerId": "worker-1"},
            "failure": {"workerId": "worker-1", "errorMessage": "x", "retries": 0},
            "bpmnError": {"workerId": "worker-1", "errorCode": "E"},
            "extendLock": {"workerId": "worker-1", "newDuration": 600_000},
            "lock": {"workerId": "worker-1", "lockDuration": 600_000},
        }
        for action, body in attempts.items():
            r = two.post(f"/external-task/{task['id']}/{action}", json=body)
            assert r.status_code == 400, (action, r.text)
            assert r.json()["type"] == "BadUserRequestException"
            assert "locked by worker 'k1:worker-1'" in r.json()["message"]
        # k2's own worker-1 fetches: nothing free (k1's worker holds the task)
        r = two.post("/external-task/fetchAndLock", json=_fetch("worker-1"))
        assert r.status_code == 200 and r.json() == []
        # nothing changed: same lock, same expiry, same trail, instance still waiting
        now = engine.external_task(task["id"])
        assert now.lock_owner == "k1:worker-1"
        assert now.lock_expires_at is not None
        assert (
            one.get(f"/external-task/{task['id']}").json()["lockExpirationTime"]
            == (task["lockExpirationTime"])
        )
        assert history_types(engine, iid) == before
        assert instance_state(engine, iid) == "active"
        # the owner still completes it
        r = one.post(f"/external-task/{task['id']}/complete", json={"workerId": "worker-1"})
        assert r.status_code == 204, r.text
        assert instance_state(engine, iid) == "completed"


def test_a_key_cannot_squat_another_keys_worker_id(keyed: tuple[ApiServer, Engine]) -> None:
    """Issue 18 item 7: k2 used ``some-random-id`` (the Camunda JS client's default) first,
    and k1's real workers under that id were refused with 403 for good."""
    server, engine = keyed
    with _client(server, "k1", "s1") as one, _client(server, "k2", "s2") as two:
        files = {"f": ("sq.bpmn", one_task("squat", "jobs").encode())}
        assert one.post("/deployment/create", files=files).status_code == 200
        # the squatter goes first, and keeps polling under the id
        for _ in range(3):
            r = two.post("/external-task/fetchAndLock", json=_fetch("some-random-id"))
            assert r.status_code == 200 and r.json() == []
        iid = one.post("/process-definition/key/squat/start", json={}).json()["id"]
        r = one.post("/external-task/fetchAndLock", json=_fetch("some-random-id"))
        assert r.status_code == 200, r.text
        [task] = r.json()
        assert task["workerId"] == "some-random-id"
        r = two.post(f"/external-task/{task['id']}/complete", json={"workerId": "some-random-id"})
        assert r.status_code == 400  # the squatter's own some-random-id holds nothing
        r = one.post(f"/external-task/{task['id']}/complete", json={"workerId": "some-random-id"})
        assert r.status_code == 204, r.text
        assert instance_state(engine, iid) == "completed"


def test_configured_worker_ids_limit_their_key(keyed: tuple[ApiServer, Engine]) -> None:
    server, engine = keyed
    with _client(server, "k1", "s1") as one, _client(server, "ka", "sa") as ka:
        one.post("/deployment/create", files={"f": ("p.bpmn", one_task("cw", "jobs").encode())})
        iid = one.post("/process-definition/key/cw/start", json={}).json()["id"]
        # ka may use only its configured ids
        r = ka.post("/external-task/fetchAndLock", json=_fetch("free-id"))
        assert r.status_code == 403
        assert "configured workers (wa1, wa2)" in r.json()["message"]
        assert engine.external_tasks(topic="jobs", locked=True) == []
        [task] = ka.post("/external-task/fetchAndLock", json=_fetch("wa2")).json()
        assert task["workerId"] == "wa2"
        # an operator sees whose worker it is; a filter names the caller's own workers
        assert one.get(f"/external-task/{task['id']}").json()["workerId"] == "ka:wa2"
        assert ka.get("/external-task", params={"topicName": "jobs", "workerId": "wa2"}).json()
        assert one.get("/external-task", params={"workerId": "ka:wa2"}).json()
        assert one.get("/external-task", params={"workerId": "wa2"}).json() == []
        r = ka.post(f"/external-task/{task['id']}/complete", json={"workerId": "wa2"})
        assert r.status_code == 204
        assert instance_state(engine, iid) == "completed"


JS_DEFAULT_ID = """
    import { Client, BasicAuthInterceptor, logger } from "camunda-external-task-client-js";

    const client = new Client({ baseUrl: process.argv[2], asyncResponseTimeout: 2000,
      interceptors: new BasicAuthInterceptor({ username: "k1", password: "s1" }),
      use: logger });
    client.subscribe("jobs", async ({ task, taskService }) => {
      await taskService.complete(task);
    });
"""


def test_the_js_clients_default_worker_id_works_for_its_own_key(
    keyed: tuple[ApiServer, Engine], tmp_path: Path
) -> None:
    server, engine = keyed
    where = _js_client_dir()
    with _client(server, "k1", "s1") as one, _client(server, "k2", "s2") as two:
        files = {"f": ("js.bpmn", one_task("jsdefault", "jobs").encode())}
        assert one.post("/deployment/create", files=files).status_code == 200
        r = two.post("/external-task/fetchAndLock", json=_fetch("some-random-id"))
        assert r.status_code == 200  # another key used the id first
        iid = one.post("/process-definition/key/jsdefault/start", json={}).json()["id"]
    script = where / "default_id.mjs"
    script.write_text(textwrap.dedent(JS_DEFAULT_ID))
    log = open(tmp_path / "js.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(["node", str(script), server.base], cwd=where, stdout=log, stderr=log)
    try:
        eventually(
            lambda: instance_state(engine, iid) == "completed",
            timeout=30,
            what="the JS client, as some-random-id of k1, to complete the task",
        )
    finally:
        proc.kill()
        proc.wait()
        log.close()
    done = [e for e in engine.history(iid) if e.type == "external_task_completed"]
    assert [e.payload["worker"] for e in done] == ["k1:some-random-id"]


def test_unlock_and_retries_of_a_live_lock_are_its_owners_or_an_operators(
    pg_database_url: str, tmp_path: Path
) -> None:
    """Issue 18 item 8: another key allowed on the topic unlocked a live lock and set its
    retries to 0 (an incident under a working worker)."""
    keys = "ops:so,wk1:s1:jobs,wk2:s2:jobs"
    server = ApiServer(pg_database_url, keys=keys, log=tmp_path / "api.log").start()
    engine = Engine(pg_database_url)
    try:
        with (
            _client(server, "ops", "so") as ops,
            _client(server, "wk1", "s1") as one,
            _client(server, "wk2", "s2") as two,
        ):
            files = {"f": ("u.bpmn", one_task("unl", "jobs").encode())}
            assert ops.post("/deployment/create", files=files).status_code == 200
            iid = ops.post("/process-definition/key/unl/start", json={}).json()["id"]
            [task] = one.post("/external-task/fetchAndLock", json=_fetch("w")).json()
            url = f"/external-task/{task['id']}"
            before = table_dump(engine)
            r = two.post(f"{url}/unlock")
            assert r.status_code == 403, r.text
            assert r.json()["type"] == "AuthorizationException"
            r = two.put(f"{url}/retries", json={"retries": 0})
            assert r.status_code == 403, r.text
            assert table_dump(engine) == before
            # the holder's key may
            assert one.put(f"{url}/retries", json={"retries": 5}).status_code == 204
            assert engine.external_task(task["id"]).retries == 5
            assert one.post(f"{url}/unlock").status_code == 204
            # an operator may, of anyone's live lock
            [again] = one.post("/external-task/fetchAndLock", json=_fetch("w")).json()
            assert (
                ops.put(f"/external-task/{again['id']}/retries", json={"retries": 2}).status_code
                == 204
            )
            assert ops.post(f"/external-task/{again['id']}/unlock").status_code == 204
            assert engine.external_task(again["id"]).lock_owner is None
            assert instance_state(engine, iid) == "active"
    finally:
        engine.close()
        server.kill()


def test_two_keys_racing_for_a_new_worker_id_one_owns_it(pg_engine: Engine) -> None:
    with ThreadPoolExecutor(8) as pool:
        owners = list(pool.map(lambda i: pg_engine.bind_worker("racer", f"key-{i}"), range(8)))
    assert len(set(owners)) == 1
    assert pg_engine.bind_worker("racer", "late-key") == owners[0]


def test_binding_works_on_both_backends(engine: Engine) -> None:
    assert engine.bind_worker("w", "k1") == "k1"
    assert engine.bind_worker("w", "k2") == "k1"
    assert engine.bind_worker("v", "k2") == "k2"


def test_worker_options_parse_and_bad_ones_say_what_to_write() -> None:
    [a, b] = parse_api_keys("a:s:t1|t2:workers=x|y,b:s2:role=viewer")
    assert a.topics == frozenset({"t1", "t2"}) and a.workers == frozenset({"x", "y"})
    assert b.role == "viewer" and b.workers is None
    with pytest.raises(ConfigurationError, match="bound to both"):
        parse_api_keys("a:s:workers=x,b:s2:workers=x|z")
    with pytest.raises(ConfigurationError, match="unknown option 'colour'"):
        parse_api_keys("a:s:colour=red")
    with pytest.raises(ConfigurationError, match="needs one workers="):
        parse_api_keys("a:s:workers=")
