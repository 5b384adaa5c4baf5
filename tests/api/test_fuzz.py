"""REST fuzzing (issue 13 item 10): schemathesis generates requests for every operation in
``/openapi.json`` of a real ``bpm api`` with API keys, positive and negative, with and
without credentials. With a key: no 5xx, every answer documented (status, content type,
body schema), schema-valid requests accepted (but the refusals listed in ``EXCUSED``),
errors in Camunda's shape. Without one: 401 for every ``/engine-rest`` operation, before
the body is read.

A bounded number of examples per operation (``EXAMPLES``); failures are collected, not
raised, so hypothesis never shrinks. The cases are derandomized: every run sends the same
requests (a failure found once is found again), and a new schema or a new schemathesis
changes them, not the time of day. Drawing them is most of the file's CPU (the negative
mode's mutations above all), so each mode's cases are drawn once per module (``_drawn``):
the test with a key sends them all, the test without one the first
``UNAUTHENTICATED_EXAMPLES`` of every operation, whichever runs first."""

from __future__ import annotations

import base64
import contextlib
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from requests.structures import CaseInsensitiveDict
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.errors import UnsupportedSchema

from tests.api.conftest import Api, ApiServer, one_task
from tests.support import create_database, drop_database, pg_url

EXAMPLES = 5  # per operation and mode, with a key
UNAUTHENTICATED_EXAMPLES = 2  # each must answer 401: few are enough
KEYS = "ops:opsecret,view:viewsecret:role=viewer,w:wsecret:fuzz"
OPS = {"Authorization": "Basic " + base64.b64encode(b"ops:opsecret").decode()}
CHECKS = [
    not_a_server_error,
    positive_data_acceptance,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
#: Schema-valid requests the server refuses with a documented 400 that no schema can rule
#: out: (method, path, Camunda error type, a part of the message). Nothing else is excused.
EXCUSED = (
    # A file that is not a BPMN 2.0 document: its content is not a schema matter.
    ("POST", "/engine-rest/deployment/create", "ParseException", "cannot deploy"),
    # No receiver for the message: Camunda's "not found" answer to a correlation is a 400
    # MismatchingMessageCorrelationException, and Camunda clients rely on it.
    ("POST", "/engine-rest/message", "RestException", "MismatchingMessageCorrelationException"),
    # A user, group or tenant id is printable in Unicode's sense (str.isprintable: no unassigned,
    # control, format or separator characters but the space), which no JSON-schema pattern
    # of Python's regex dialect can state; and a body's id must be the path's own.
    *(
        (method, path, kind, part)
        for method, path in (
            ("POST", "/engine-rest/user/create"),
            ("PUT", "/engine-rest/user/{user_id}/profile"),
            ("PUT", "/engine-rest/user/{user_id}/credentials"),
            ("DELETE", "/engine-rest/user/{user_id}"),
            ("POST", "/engine-rest/group/create"),
            ("PUT", "/engine-rest/group/{group_id}"),
            ("DELETE", "/engine-rest/group/{group_id}"),
            ("PUT", "/engine-rest/group/{group_id}/members/{user_id}"),
            ("DELETE", "/engine-rest/group/{group_id}/members/{user_id}"),
            ("POST", "/engine-rest/tenant/create"),
            ("PUT", "/engine-rest/tenant/{tenant_id}"),
            ("PUT", "/engine-rest/tenant/{tenant_id}/user-members/{user_id}"),
            ("PUT", "/engine-rest/tenant/{tenant_id}/group-members/{group_id}"),
        )
        for kind in ("InvalidRequestException", "BadUserRequestException")
        for part in ("id must be printable", "id cannot change")
    ),
    # A migration names two deployed definitions: ids that do not exist answer Camunda's
    # 400 (BadUserRequestException), not a 404.
    *(
        ("POST", f"/engine-rest/migration/{action}", "BadUserRequestException", "does not exist")
        for action in ("generate", "validate", "execute", "executeAsync")
    ),
    # A batch needs items: ids that exist, or a query that matches (data, not schema).
    *(
        ("POST", f"/engine-rest{path}", "InvalidRequestException", "match: a batch needs")
        for path in (
            "/process-instance/delete",
            "/process-instance/suspended-async",
            "/process-instance/variables-async",
            "/process-instance/modification-async",
            "/process-instance/modification",
            "/job/retries",
            "/external-task/retries-async",
        )
    ),
    # Whether a modification of many instances at once applies depends on where each
    # instance's tokens stand (it is all or nothing: the first refusal answers 400).
    ("POST", "/engine-rest/process-instance/modification", "BadUserRequestException", ""),
    # Which conditional start events exist is data: none deployed, an unknown definition id,
    # or one without such an event is Camunda's 400 for evaluateStartConditions.
    *(
        ("POST", "/engine-rest/condition", "InvalidRequestException", part)
        for part in (
            "no subscriptions were found",
            "no deployed process definition found",
            "does not declare a conditional start event",
        )
    ),
    # An e-mail holds an '@' and no white space in Unicode's sense (str.isspace).
    *(
        (method, path, "BadUserRequestException", "email must look like")
        for method, path in (
            ("POST", "/engine-rest/user/create"),
            ("PUT", "/engine-rest/user/{user_id}/profile"),
        )
    ),
)
ACCEPTANCE_EXCUSED = [check for check in CHECKS if check is not positive_data_acceptance]


def _excused(case: Any, resp: Any) -> bool:
    """Whether a 400 is one of the listed refusals (EXCUSED)."""
    if resp.status_code != 400:
        return False
    try:
        body = resp.json()
    except ValueError:
        return False
    return any(
        case.method.upper() == method
        and case.operation.path == path
        and body.get("type") == kind
        and part in str(body.get("message"))
        for method, path, kind, part in EXCUSED
    )


@pytest.fixture(scope="module")
def fuzz_api(pg_template: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    from bpm import Engine

    name = create_database(template=pg_template)
    log = Path(tmp_path_factory.mktemp("fuzz")) / "api.log"
    # the keyless-run asks every operation without a key, faster than an anonymous
    # address may (429): the rate limit is tested in test_attack_surface.py
    env = {"BPM_API_KEYLESS_RATE": "0"}
    server = ApiServer(pg_url(name), keys=KEYS, log=log, env=env).start()
    engine = Engine(pg_url(name))
    with httpx.Client(base_url=server.base, timeout=30, headers=OPS) as http:
        api = Api(server, engine, http)
        api.deploy(one_task("fuzz", "fuzz"))
        for i in range(3):
            api.start("fuzz", {"n": i})
        yield api
    _DRAWN.clear()
    engine.close()
    server.kill()
    drop_database(name)


def _root(api: Api) -> str:
    return api.base.removesuffix("/engine-rest")


def _operations(api: Api) -> list[Any]:
    schema = schemathesis.openapi.from_url(_root(api) + "/openapi.json")
    ops = [result.ok() for result in schema.get_all_operations()]  # type: ignore[union-attr]
    return [op for op in ops if op.path.startswith("/engine-rest")]


def _tame(case: Any) -> None:
    """Keep generated long polls short: the fuzz is about input handling, not waiting."""
    if isinstance(case.body, dict) and "asyncResponseTimeout" in case.body:
        value = case.body["asyncResponseTimeout"]
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 100:
            case.body["asyncResponseTimeout"] = 100


#: Each mode's drawn cases, per operation in the document's order, for the module's server
#: (``fuzz_api``): drawn by the first test that needs them.
_DRAWN: dict[tuple[int, GenerationMode], list[tuple[str, list[Any]]]] = {}


def _drawn(api: Api, mode: GenerationMode) -> list[tuple[str, list[Any]]]:
    """The ``EXAMPLES`` cases of every ``/engine-rest`` operation in ``mode`` (drawn once)."""
    key = (id(api), mode)
    if key not in _DRAWN:
        operations = _operations(api)
        assert len(operations) >= 60
        _DRAWN[key] = [
            (f"{op.method.upper()} {op.path}", _draw_operation(op, mode, EXAMPLES))
            for op in operations
        ]
    return _DRAWN[key]


def _fuzz(
    api: Api, mode: GenerationMode, judge: Callable[[Any, str], None], examples: int = EXAMPLES
) -> int:
    """Run ``judge(case, where)`` on the first ``examples`` drawn cases of every operation,
    operation after operation; returns how many operations ran."""
    drawn = _drawn(api, mode)
    for _name, cases in drawn:
        for case in cases[:examples]:
            where = f"{case.method} {case.formatted_path} {case.body!r:.160}"
            judge(case, where)
    return len(drawn)


def _draw_operation(op: Any, mode: GenerationMode, examples: int) -> list[Any]:
    """The generated cases of one operation (long polls tamed).

    Schemathesis may find, in the middle of a draw, that it cannot make the violation it
    picked of one part of the schema (``UnsupportedSchema``: a complement it cannot spell
    out, e.g. of the typed-variable union). That draw is no request: it is dropped and
    another one drawn. An operation left with no request at all fails the test (its checks
    would be lost without a word)."""
    strategy = op.as_strategy(generation_mode=mode)
    name = f"{op.method.upper()} {op.path}"
    cases: list[Any] = []
    sent: list[str] = []
    declined: list[str] = []

    def judge(case: Any, where: str) -> None:
        cases.append(case)

    # ``run`` keeps the source it had when each case was sent as soon as it was drawn:
    # derandomized, hypothesis seeds it from its source, so the cases stay the ones the
    # fuzz has sent since (the e-mail refusal in EXCUSED was found with them).

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        try:
            case = data.draw(strategy)
        except UnsupportedSchema as exc:
            declined.append(str(exc)[:300])
            reject()
        _tame(case)
        where = f"{case.method} {case.formatted_path} {case.body!r:.160}"
        sent.append(where)
        judge(case, where)

    with contextlib.suppress(Unsatisfiable):  # nothing to make invalid (no parameters, body)
        run()
    if declined and not sent:
        raise AssertionError(f"no {mode.value} request for {name}: {declined[0]}")
    return cases


def _summary(exc: BaseException) -> str:
    """The failed checks and the answer, on one line."""
    lines = [x.strip() for x in str(exc).splitlines() if x.strip()]
    keep = [x for x in lines if x.startswith(("- ", "[", "`{"))]
    return " | ".join(keep or lines)[:400]


def _camunda_shape(resp: Any, where: str, failures: list[str]) -> None:
    if resp.status_code < 400:
        return
    try:
        body = resp.json()
    except ValueError:
        failures.append(f"non-JSON error for {where}: {resp.text[:200]}")
        return
    if not isinstance(body, dict) or set(body) < {"type", "message"} or "detail" in body:
        failures.append(f"not the Camunda shape for {where}: {body}")


@pytest.mark.timeout(900)  # the first test of a mode draws its cases (126 operations)
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_with_a_key_no_5xx_and_every_answer_is_documented(
    fuzz_api: Api, mode: GenerationMode
) -> None:
    failures: list[str] = []
    checks = CHECKS

    def judge(case: Any, where: str) -> None:
        try:
            resp = case.call(base_url=_root(fuzz_api), headers=OPS, timeout=20)
            _camunda_shape(resp, where, failures)
            excused = _excused(case, resp)
            case.validate_response(resp, checks=ACCEPTANCE_EXCUSED if excused else checks)
        except (Exception, BaseExceptionGroup) as exc:  # collected: no slow shrinking
            failures.append(f"{where}: {_summary(exc)}")

    _fuzz(fuzz_api, mode, judge)
    assert not failures, "\n".join(sorted(set(failures)))
    # the seeded tasks are still there and still fetchable: the fuzz broke nothing
    count = fuzz_api.http.get("/external-task/count", params={"topicName": "fuzz"}).json()
    assert count["count"] == 3


@pytest.mark.timeout(900)  # the first test of a mode draws its cases (126 operations)
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_without_a_key_every_operation_answers_401(fuzz_api: Api, mode: GenerationMode) -> None:
    failures: list[str] = []

    def judge(case: Any, where: str) -> None:
        # derived (a copy without the case's auth): the case, drawn once, is the keyed test's
        headers = {k: v for k, v in (case.headers or {}).items() if k.lower() != "authorization"}
        bare = case.derive(headers=CaseInsensitiveDict(headers))
        resp = bare.call(base_url=_root(fuzz_api), timeout=20)
        if resp.status_code != 401:
            failures.append(f"{resp.status_code} for {where}: {resp.text[:200]}")
        elif resp.json()["type"] != "AuthenticationException":
            failures.append(f"not an AuthenticationException for {where}: {resp.text[:200]}")
        elif "www-authenticate" not in {k.lower() for k in resp.headers}:
            failures.append(f"no WWW-Authenticate for {where}")

    _fuzz(fuzz_api, mode, judge, UNAUTHENTICATED_EXAMPLES)
    assert not failures, "\n".join(sorted(set(failures))[:25])
    assert fuzz_api.engine.external_tasks(topic="fuzz", locked=True) == []


def test_401_comes_before_the_body_is_read(fuzz_api: Api) -> None:
    """The server answers a request that announced a body it never sent: it did not wait
    for (nor parse) the body of a caller without credentials."""
    with socket.create_connection(("127.0.0.1", fuzz_api.server.port), timeout=10) as sock:
        sock.sendall(
            b"POST /engine-rest/external-task/fetchAndLock HTTP/1.1\r\n"
            b"Host: t\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n"
            b"{not json"
        )
        head = sock.recv(4096).decode(errors="replace")
    assert head.startswith("HTTP/1.1 401"), head
    # and a malformed body with no credentials is a 401, not a 400
    r = httpx.post(f"{fuzz_api.base}/external-task/fetchAndLock", content=b"{not json")
    assert r.status_code == 401 and r.json()["type"] == "AuthenticationException"
    for path in ("/version", "/engine"):
        assert httpx.get(fuzz_api.base + path).status_code == 401
        assert fuzz_api.http.get(path).status_code == 200
