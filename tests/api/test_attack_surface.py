"""The REST API as an attacker or a bad day finds it (issue 18): each test is the probe
that once succeeded, run against a real ``bpm api`` process with API keys.

One server for the module (its database copied from the template); each test makes its
own instances and topics, so the tests do not see each other's work."""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from bpm import Engine
from tests.api.conftest import ApiServer, history_types, instance_state, one_task
from tests.engine_helpers import table_dump
from tests.support import create_database, drop_database, eventually, pg_url

MIB = 1024 * 1024
KEYS = "ops:ops-s,w1:w1-s:jobs|late,w2:w2-s:jobs|late"


@pytest.fixture(scope="module")
def surface(
    pg_template: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ApiServer, Engine]]:
    name = create_database(template=pg_template)
    log = Path(tmp_path_factory.mktemp("surface")) / "api.log"
    server = ApiServer(pg_url(name), keys=KEYS, log=log).start()
    engine = Engine(pg_url(name))
    yield server, engine
    engine.close()
    server.kill()
    drop_database(name)


def client(server: ApiServer, key: str) -> httpx.Client:
    return httpx.Client(base_url=server.base, auth=(key, f"{key}-s"), timeout=30)


def deploy(server: ApiServer, key: str, topic: str) -> None:
    with client(server, "ops") as ops:
        files = {"f": (f"{key}.bpmn", one_task(key, topic).encode())}
        r = ops.post("/deployment/create", files=files)
        assert r.status_code == 200, r.text


def start(server: ApiServer, key: str, business_key: str | None = None) -> str:
    with client(server, "ops") as ops:
        r = ops.post(f"/process-definition/key/{key}/start", json={"businessKey": business_key})
        assert r.status_code == 200, r.text
        return str(r.json()["id"])


def fetch_body(worker: str, topic: str, lock: int = 60_000, **topic_extra: Any) -> dict[str, Any]:
    return {
        "workerId": worker,
        "maxTasks": 1,
        "topics": [{"topicName": topic, "lockDuration": lock, **topic_extra}],
    }


# -- item 5: the body limit is enforced before the body is read -----------------------------


def _raw_request(port: int, head: str, timeout: float = 10.0) -> bytes:
    """Send ``head`` (request line and headers) and no body; what the server answers (its
    headers and its whole body), or ``b""`` when it waited for the body instead."""
    answer = b""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(head.encode())
        try:
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    return answer  # the server closed the connection: all of it
                answer += chunk
                top, sep, body = answer.partition(b"\r\n\r\n")
                length = [
                    int(line.split(b":", 1)[1])
                    for line in top.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ]
                if sep and length and len(body) >= length[0]:
                    return answer
        except TimeoutError:
            return answer  # nothing (it waited for the body), or what came


def test_an_announced_body_over_one_mib_is_refused_before_it_is_read(
    surface: tuple[ApiServer, Engine],
) -> None:
    server, engine = surface
    deploy(server, "big", "big")
    before = table_dump(engine)
    auth = base64.b64encode(b"ops:ops-s").decode()
    answer = _raw_request(
        server.port,
        "POST /engine-rest/process-definition/key/big/start HTTP/1.1\r\n"
        "Host: 127.0.0.1\r\n"
        f"Authorization: Basic {auth}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {2 * MIB}\r\n\r\n",
    )
    # answered at once, the body never sent
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    body = json.loads(answer.split(b"\r\n\r\n", 1)[1])
    assert body["type"] == "InvalidRequestException"
    assert "limit" in body["message"] and set(body) == {"type", "message", "code"}
    assert table_dump(engine) == before


def test_a_chunked_body_over_one_mib_is_cut_at_the_limit(
    surface: tuple[ApiServer, Engine],
) -> None:
    server, engine = surface
    deploy(server, "chunky", "chunky")
    before = table_dump(engine)

    def chunks() -> Iterator[bytes]:
        yield b'{"variables": {"a": {"value": "'
        for _ in range(3):
            yield b"x" * (MIB // 2)
        yield b'"}}}'

    with client(server, "ops") as ops:
        r = ops.post("/process-definition/key/chunky/start", content=chunks())
    assert r.status_code == 413, r.text
    assert r.json()["type"] == "InvalidRequestException"
    assert table_dump(engine) == before


def test_what_a_request_may_store_still_fits_and_deployments_have_their_own_limit(
    surface: tuple[ApiServer, Engine],
) -> None:
    server, _ = surface
    deploy(server, "fits", "fits")
    with client(server, "ops") as ops:
        # just under the engine's 1 MiB for the variables of one request, in 5 variables
        variables = {f"v{i}": {"value": "y" * 200_000, "type": "String"} for i in range(5)}
        r = ops.post("/process-definition/key/fits/start", json={"variables": variables})
        assert r.status_code == 200, r.text
        # a 2 MiB BPMN file (a model with a big diagram) still deploys
        padding = "<!--" + "p" * (2 * MIB) + "-->"
        end = "</bpmn:definitions>"
        xml = one_task("padded", "padded").replace(end, padding + end)
        r = ops.post("/deployment/create", files={"f": ("padded.bpmn", xml.encode())})
        assert r.status_code == 200, r.text


# -- item 6: a report on an expired lock is refused every time ------------------------------


def _database_now(engine: Engine) -> datetime:
    with engine.db.connect() as conn:
        now: datetime = conn.execute(text("SELECT clock_timestamp()")).scalar_one()
    return now


def _expiry(task: dict[str, Any]) -> datetime:
    return datetime.strptime(task["lockExpirationTime"], "%Y-%m-%dT%H:%M:%S.%f%z")


LATE_REPORTS: dict[str, dict[str, Any]] = {
    "complete": {"workerId": "late-w", "variables": {"x": {"value": 1}}},
    "failure": {"workerId": "late-w", "errorMessage": "late", "retries": 0},
    "bpmnError": {"workerId": "late-w", "errorCode": "E"},
    "extendLock": {"workerId": "late-w", "newDuration": 60_000},
}


def test_a_late_report_on_an_expired_lock_is_refused_every_time(
    surface: tuple[ApiServer, Engine],
) -> None:
    """20 trials per report, the reclaimer never running (no beat here): the lock's expiry
    on the database clock decides, and a fetch that matched nothing in between (which
    counts the lost lock first) does not change the answer."""
    server, engine = surface
    deploy(server, "late", "late")
    answers: dict[str, list[int]] = {name: [] for name in LATE_REPORTS}
    with client(server, "w1") as w1:
        for trial in range(20):
            for action, body in LATE_REPORTS.items():
                bk = f"{action}-{trial}"
                iid = start(server, "late", bk)
                r = w1.post(
                    "/external-task/fetchAndLock",
                    json=fetch_body("late-w", "late", lock=200, businessKey=bk),
                )
                [task] = r.json()
                # wait (for a condition, not a time) until the database's clock is past
                # the expiry, with a margin over the API's reading of that clock
                until = _expiry(task) + timedelta(milliseconds=20)

                def expired(u: datetime = until) -> bool:
                    return _database_now(engine) > u

                eventually(expired, what="the lock to expire")
                if trial % 2:  # a fetch that matched nothing, in between
                    nothing = fetch_body("late-w", "late", businessKey="no-such-key")
                    assert w1.post("/external-task/fetchAndLock", json=nothing).json() == []
                before = history_types(engine, iid)
                r = w1.post(f"/external-task/{task['id']}/{action}", json=body)
                answers[action].append(r.status_code)
                assert r.status_code == 400, (action, trial, r.text)
                assert r.json()["type"] == "BadUserRequestException"
                assert instance_state(engine, iid) == "active"
                assert engine.get_instance(iid).variables.get("x") is None
                assert history_types(engine, iid) == before
    assert all(codes == [400] * 20 for codes in answers.values()), answers


# -- item 4: every list and map of a body is bounded -----------------------------------------


def _names(n: int) -> list[str]:
    return [f"n{i}" for i in range(n)]


def _vars(n: int) -> dict[str, Any]:
    return {f"v{i}": {"value": i} for i in range(n)}


def _topic(**extra: Any) -> dict[str, Any]:
    return {"topicName": "jobs", "lockDuration": 1000, **extra}


def _fetch(**extra: Any) -> dict[str, Any]:
    return {"workerId": "lister", "maxTasks": 1, "topics": [_topic()], **extra}


# (key, method, path, body, the limit the message names)
OVER_LIMIT: list[tuple[str, str, str, Any, int]] = [
    ("w1", "POST", "/external-task/fetchAndLock", _fetch(topics=[_topic()] * 101), 100),
    (
        "w1",
        "POST",
        "/external-task/fetchAndLock",
        _fetch(topics=[_topic(variables=_names(1001))]),
        1000,
    ),
    (
        "w1",
        "POST",
        "/external-task/fetchAndLock",
        _fetch(topics=[_topic(processVariables={f"p{i}": i for i in range(101)})]),
        100,
    ),
    (
        "w1",
        "POST",
        "/external-task/fetchAndLock",
        _fetch(sorting=[{"sortBy": "createTime"}] * 11),
        10,
    ),
    ("w1", "POST", "/external-task/t/complete", {"workerId": "x", "variables": _vars(1001)}, 1000),
    (
        "w1",
        "POST",
        "/external-task/t/complete",
        {"workerId": "x", "localVariables": _vars(1001)},
        1000,
    ),
    (
        "w1",
        "POST",
        "/external-task/t/bpmnError",
        {"workerId": "x", "errorCode": "E", "variables": _vars(1001)},
        1000,
    ),
    ("ops", "POST", "/process-definition/key/lists/start", {"variables": _vars(1001)}, 1000),
    (
        "ops",
        "POST",
        "/message",
        {"messageName": "m", "correlationKeys": _vars(101)},
        100,
    ),
    ("ops", "POST", "/message", {"messageName": "m", "processVariables": _vars(1001)}, 1000),
    ("ops", "POST", "/signal", {"name": "s", "variables": _vars(1001)}, 1000),
    ("ops", "POST", "/task", {"processInstanceIdIn": _names(1001)}, 1000),
    ("ops", "POST", "/task", {"sorting": [{"sortBy": "created"}] * 11}, 10),
    ("ops", "POST", "/task/t/complete", {"variables": _vars(1001)}, 1000),
    ("ops", "POST", "/task/t/variables", {"modifications": _vars(1001)}, 1000),
    (
        "ops",
        "POST",
        "/variable-instance",
        {"variableValues": [{"name": "a", "operator": "eq", "value": 1}] * 101},
        100,
    ),
    ("ops", "POST", "/variable-instance", {"variableNameIn": _names(1001)}, 1000),
    ("ops", "POST", "/history/process-instance", {"processInstanceIds": _names(1001)}, 1000),
    ("ops", "POST", "/process-instance/i/variables", {"deletions": _names(1001)}, 1000),
    ("ops", "POST", "/process-instance/i/variables", {"modifications": _vars(1001)}, 1000),
    ("ops", "GET", "/variable-instance?variableValues=" + ",".join(["a_eq_1"] * 101), None, 100),
]


@pytest.mark.parametrize(
    ("key", "method", "path", "body", "limit"),
    OVER_LIMIT,
    ids=[f"{m} {p.split('?')[0]} {i}" for i, (_, m, p, _, _) in enumerate(OVER_LIMIT)],
)
def test_a_list_over_its_limit_answers_400_naming_the_limit_and_changes_nothing(
    surface: tuple[ApiServer, Engine],
    key: str,
    method: str,
    path: str,
    body: Any,
    limit: int,
) -> None:
    server, engine = surface
    if path.startswith("/process-definition/key/lists"):
        deploy(server, "lists", "jobs")
    before = table_dump(engine)
    with client(server, key) as http:
        r = http.request(method, path, json=body)
    assert r.status_code == 400, r.text
    error = r.json()
    assert error["type"] == "InvalidRequestException"
    assert str(limit) in error["message"], error["message"]
    assert table_dump(engine) == before


def test_the_cockpit_variables_edit_is_bounded_too(surface: tuple[ApiServer, Engine]) -> None:
    server, engine = surface
    deploy(server, "cockpitlists", "cockpitlists")
    iid = start(server, "cockpitlists")
    before = table_dump(engine)
    root = server.base.removesuffix("/engine-rest")
    r = httpx.post(
        f"{root}/api/instances/{iid}/variables",
        json={"variables": {f"v{i}": i for i in range(1001)}},
        headers={"Authorization": "Bearer ops-s"},
    )
    assert r.status_code == 400, r.text
    assert "1000" in r.json()["message"]
    assert table_dump(engine) == before


def test_lists_at_their_limits_are_served(surface: tuple[ApiServer, Engine]) -> None:
    server, _ = surface
    deploy(server, "atlimit", "jobs")
    start(server, "atlimit")
    with client(server, "w1") as w1:
        body = _fetch(
            topics=[_topic(variables=_names(1000), processVariables={"p": 1})] * 100,
            sorting=[{"sortBy": "createTime"}] * 10,
        )
        r = w1.post("/external-task/fetchAndLock", json=body)
        assert r.status_code == 200, r.text
    with client(server, "ops") as ops:
        r = ops.post("/task", json={"processInstanceIdIn": _names(1000)})
        assert r.status_code == 200, r.text


# -- item 9: keyless requests cost what /health/live costs ----------------------------------


def test_keyless_requests_are_rate_limited_per_address(
    pg_database_url: str, tmp_path: Path
) -> None:
    # One token back every 20 s: the 18 requests below cannot earn the budget back however
    # slowly a loaded machine answers them (at 2 a second a refill came before the 19th).
    env = {"BPM_API_KEYLESS_RATE": "0.05", "BPM_API_KEYLESS_BURST": "5"}
    server = ApiServer(pg_database_url, keys=KEYS, log=tmp_path / "api.log", env=env).start()
    root = server.base.removesuffix("/engine-rest")
    try:
        with httpx.Client(timeout=30) as http:
            codes = [http.get(f"{root}/health/ready").status_code for _ in range(12)]
            codes += [http.get(f"{root}/metrics").status_code for _ in range(3)]
            codes += [http.get(f"{server.base}/engine").status_code for _ in range(3)]  # 401s
            assert 429 in codes and codes[0] == 200, codes
            refused = http.get(f"{root}/health/live")
            assert refused.status_code == 429
            assert int(refused.headers["retry-after"]) >= 1
            error = refused.json()
            assert error["type"] == "RestException" and set(error) == {"type", "message", "code"}
            # a caller with a key is never held back by the anonymous ones of its address
            for _ in range(10):
                r = http.get(f"{server.base}/engine", auth=("ops", "ops-s"))
                assert r.status_code == 200
            # another client address (through the trusted local proxy) has its own budget
            r = http.get(f"{root}/health/live", headers={"X-Forwarded-For": "203.0.113.7"})
            assert r.status_code == 200
    finally:
        server.kill()


def test_readiness_and_metrics_are_computed_once_however_many_ask(pg_database_url: str) -> None:
    """Counted, not timed: 40 concurrent anonymous /health/ready and /metrics requests run
    the readiness checks and the metrics' database reads once each."""
    import asyncio

    from sqlalchemy import event

    from bpm.api.app import create_app
    from bpm.api.auth import parse_api_keys

    served = Engine(pg_database_url)
    statements: list[str] = []

    @event.listens_for(served.db, "before_cursor_execute")
    def seen(conn: Any, cursor: Any, sql: str, *args: Any) -> None:
        statements.append(sql)

    app = create_app(served, api_keys=parse_api_keys("ops:ops-s"))

    async def flood(path: str) -> list[int]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            answers = await asyncio.gather(*(c.get(path) for _ in range(40)))
        return [a.status_code for a in answers]

    try:
        statements.clear()
        assert asyncio.run(flood("/health/ready")) == [200] * 40
        ready_statements = len(statements)
        statements.clear()
        one = asyncio.run(flood("/metrics"))
        metrics_statements = len(statements)
    finally:
        served.close()
    assert one == [200] * 40
    assert 1 <= ready_statements <= 4, ready_statements  # one run of the checks
    assert 1 <= metrics_statements <= 6, metrics_statements  # one read of the gauges
