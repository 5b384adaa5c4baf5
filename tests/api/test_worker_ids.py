"""Workers are who they say: a workerId belongs to one API key (issue 13 item 3)."""

from __future__ import annotations

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
            assert r.status_code == 403, (action, r.text)
            assert r.json()["type"] == "AuthorizationException"
            assert "belongs to API key 'k1'" in r.json()["message"]
        # nor may it fetch under that worker id
        r = two.post("/external-task/fetchAndLock", json=_fetch("worker-1"))
        assert r.status_code == 403
        # nothing changed: same lock, same expiry, same trail, instance still waiting
        now = engine.external_task(task["id"])
        assert now.lock_owner == "worker-1"
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


def test_configured_worker_ids_belong_to_their_key_only(keyed: tuple[ApiServer, Engine]) -> None:
    server, engine = keyed
    with _client(server, "k1", "s1") as one, _client(server, "ka", "sa") as ka:
        one.post("/deployment/create", files={"f": ("p.bpmn", one_task("cw", "jobs").encode())})
        iid = one.post("/process-definition/key/cw/start", json={}).json()["id"]
        # k1 never used wa1, yet it is ka's by configuration
        r = one.post("/external-task/fetchAndLock", json=_fetch("wa1"))
        assert r.status_code == 403
        assert "belongs to API key 'ka'" in r.json()["message"]
        # ka may use only its configured ids
        r = ka.post("/external-task/fetchAndLock", json=_fetch("free-id"))
        assert r.status_code == 403
        assert "configured workers (wa1, wa2)" in r.json()["message"]
        assert engine.external_tasks(topic="jobs", locked=True) == []
        [task] = ka.post("/external-task/fetchAndLock", json=_fetch("wa2")).json()
        assert task["workerId"] == "wa2"
        r = ka.post(f"/external-task/{task['id']}/complete", json={"workerId": "wa2"})
        assert r.status_code == 204
        assert instance_state(engine, iid) == "completed"


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
