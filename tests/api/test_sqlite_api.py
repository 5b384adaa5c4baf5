"""``bpm api`` on SQLite (the embedded mode): fetch-and-lock, long polling and complete over
real HTTP (issue 13 item 7; once ``no such column: variables``)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bpm import Engine
from bpm.store import db as bpm_db
from bpm.store import migrate
from tests.api.conftest import Api, ApiServer, instance_state, one_task


@pytest.fixture
def sqlite_api(tmp_path: Path) -> Iterator[Api]:
    url = f"sqlite:///{tmp_path / 'bpm.db'}"
    eng = bpm_db.connect(url)
    migrate.upgrade(eng)
    eng.dispose()
    server = ApiServer(url, log=tmp_path / "api.log").start()
    engine = Engine(url)
    with httpx.Client(base_url=server.base, timeout=30) as http:
        yield Api(server, engine, http)
    engine.close()
    server.kill()


def test_fetch_and_lock_long_poll_and_complete_on_sqlite(sqlite_api: Api) -> None:
    api = sqlite_api
    api.deploy(one_task("lite", "lite"))
    first = api.start("lite", {"n": 1, "other": "x"})
    [task] = api.fetch("w", "lite", variables=None)
    assert task["processInstanceId"] == first
    assert task["variables"]["n"] == {"type": "Integer", "value": 1, "valueInfo": {}}
    body = {
        "workerId": "w",
        "maxTasks": 1,
        "asyncResponseTimeout": 10_000,
        "topics": [{"topicName": "lite", "lockDuration": 30_000, "variables": ["n"]}],
    }
    got: list[httpx.Response] = []
    poll = threading.Thread(
        target=lambda: got.append(api.http.post("/external-task/fetchAndLock", json=body))
    )
    poll.start()
    second = api.start("lite", {"n": 2, "other": "y"})  # a long poll on SQLite finds it
    poll.join(timeout=15)
    [polled] = got[0].json()
    assert polled["processInstanceId"] == second
    assert set(polled["variables"]) == {"n"}
    for t in (task, polled):
        r = api.post(t["id"], "complete", {"workerId": "w", "variables": {"done": {"value": 1}}})
        assert r.status_code == 204, r.text
    assert instance_state(api.engine, first) == "completed"
    assert api.engine.get_instance(second).variables["done"] == 1
