"""Bounded memory at the REST API (issue 13 item 5): a chunked body over the limit gets
413, one request's variables are bounded in total, ``maxTasks`` is capped, a fetch-and-lock
answer is bounded in bytes (the tasks that do not fit go back), and the list endpoints page
in SQL without reading variables. Every refusal changes nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import event

from bpm import Engine
from bpm.api.app import create_app
from tests.api.conftest import Api, ApiServer, one_task
from tests.support import create_database, drop_database, pg_url

MIB = 1024 * 1024


@pytest.fixture(scope="module")
def limited(pg_template: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    name = create_database(template=pg_template)
    log = Path(tmp_path_factory.mktemp("limits")) / "api.log"
    env = {
        "BPM_API_MAX_FETCH_BYTES": "6000",
        "BPM_MAX_UPDATE_BYTES": "20000",
        "BPM_API_MAX_BODY_BYTES": str(MIB),
    }
    server = ApiServer(pg_url(name), log=log, env=env).start()
    engine = Engine(pg_url(name))
    with httpx.Client(base_url=server.base, timeout=60) as http:
        api = Api(server, engine, http)
        api.deploy(one_task("lim", "lim"))
        yield api
    engine.close()
    server.kill()
    drop_database(name)


def _count(api: Api) -> int:
    return int(api.http.get("/process-instance/count").json()["count"])


def test_a_chunked_body_over_the_limit_gets_413(limited: Api) -> None:
    before = _count(limited)

    def chunks() -> Iterator[bytes]:
        yield b'{"variables": {"a": {"value": "'
        for _ in range(20):  # 20 MiB, never announced in a Content-Length
            yield b"x" * MIB
        yield b'"}}}'

    r = limited.http.post("/process-definition/key/lim/start", content=chunks())
    assert r.status_code == 413, r.text
    assert r.json()["type"] == "InvalidRequestException"
    assert _count(limited) == before


def test_one_requests_variables_are_bounded_in_total(limited: Api) -> None:
    before = _count(limited)
    variables = {f"v{i}": {"value": "x" * 6000} for i in range(4)}  # 24 KB > 20 KB
    r = limited.http.post("/process-definition/key/lim/start", json={"variables": variables})
    assert r.status_code == 400, r.text
    assert "together" in r.json()["message"]
    assert _count(limited) == before


def test_max_tasks_is_capped(limited: Api) -> None:
    limited.start("lim", {"n": 1})
    r = limited.http.post(
        "/external-task/fetchAndLock",
        json={
            "workerId": "w",
            "maxTasks": 1001,
            "topics": [{"topicName": "lim", "lockDuration": 1000}],
        },
    )
    assert r.status_code == 400, r.text
    assert limited.engine.external_tasks(topic="lim", locked=True) == []


def test_a_fetch_answer_is_bounded_in_bytes_and_the_rest_goes_back(limited: Api) -> None:
    for i in range(4):
        limited.start("lim", {"blob": "y" * 2000, "i": i})
    free = limited.engine.count_external_tasks(topic="lim", locked=False)
    got = limited.fetch("big", "lim", max_tasks=50)
    body = len(httpx.Response(200, json=got).content)
    assert 1 <= len(got) < free
    assert body <= 6000 + 100  # JSON spacing differs a little from the server's
    # exactly the tasks answered stay locked; the others are free for the next fetch
    locked = limited.engine.external_tasks(topic="lim", locked=True)
    assert {t.id for t in locked} == {t["id"] for t in got}
    again = limited.fetch("next", "lim", max_tasks=50)
    assert again and not {t["id"] for t in again} & {t["id"] for t in got}


def test_lists_page_in_sql_and_never_read_variables(pg_database_url: str) -> None:
    """Counted, not timed: the statements a list request runs select no ``variables`` of
    instances and carry a LIMIT, however many instances there are."""
    starter = Engine(pg_database_url)
    starter.deploy(one_task("many", "many"))
    for i in range(40):
        starter.start("many", {"payload": "z" * 5000, "i": i})
    served = Engine(pg_database_url)
    statements: list[str] = []

    @event.listens_for(served.db, "before_cursor_execute")
    def seen(conn: Any, cursor: Any, sql: str, *args: Any) -> None:
        statements.append(sql)

    app = create_app(served, open_access=True, api_keys=[])

    async def run() -> dict[str, Any]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            out: dict[str, Any] = {}
            for path in (
                "/engine-rest/process-instance?maxResults=1",
                "/engine-rest/history/process-instance?maxResults=1",
                "/engine-rest/external-task?topicName=many",
                "/engine-rest/task",
                "/engine-rest/incident",
            ):
                statements.clear()
                r = await c.get(path)
                assert r.status_code == 200, (path, r.text)
                out[path] = (r.json(), list(statements))
            return out

    try:
        answers = asyncio.run(run())
    finally:
        served.close()
        starter.close()
    for path, (_, sql) in answers.items():
        lists = [s for s in sql if s.lstrip().upper().startswith("SELECT")]
        assert lists, path
        for s in lists:
            assert "process_instance.variables" not in s, (path, s)
        assert any("LIMIT" in s.upper() for s in lists), (path, sql)
    assert len(answers["/engine-rest/process-instance?maxResults=1"][0]) == 1
    assert len(answers["/engine-rest/external-task?topicName=many"][0]) == 40
