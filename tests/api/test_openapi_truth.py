"""``/openapi.json`` tells the truth: every answer of every ``/engine-rest`` operation to
schema-conforming requests (schemathesis, against a real server with data in it) has a
documented status code, content type and body schema; no ``422`` anywhere (validation
answers 400); the security schemes are declared."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from tests.api.camunda_helpers import review
from tests.api.conftest import Api, ApiServer
from tests.support import create_database, drop_database, pg_url

EXAMPLES = 12
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@pytest.fixture(scope="module")
def seeded(pg_template: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    from bpm import Engine

    name = create_database(template=pg_template)
    log = Path(tmp_path_factory.mktemp("truth")) / "api.log"
    server = ApiServer(pg_url(name), log=log).start()
    engine = Engine(pg_url(name))
    with httpx.Client(base_url=server.base, timeout=30) as http:
        api = Api(server, engine, http)
        done, *_ = review(api, 3)
        task = http.get("/task", params={"processInstanceId": done}).json()[0]
        http.post(f"/task/{task['id']}/complete", json={"variables": {"approved": {"value": 1}}})
        http.post("/process-definition/key/charge/start", json={})
        yield api
    engine.close()
    server.kill()
    drop_database(name)


def _document(api: Api) -> dict[str, Any]:
    root = api.base.replace("/engine-rest", "")
    doc: dict[str, Any] = httpx.get(root + "/openapi.json").json()
    return doc


def test_document_declares_security_and_no_422(seeded: Api) -> None:
    doc = _document(seeded)
    schemes = doc["components"]["securitySchemes"]
    assert schemes["basic"]["scheme"] == "basic" and schemes["bearer"]["scheme"] == "bearer"
    for path, item in doc["paths"].items():
        for method, op in item.items():
            assert "422" not in op["responses"], (method, path)
            if path.startswith("/engine-rest/"):  # every one, /version and /engine too
                assert op.get("security"), (method, path)
    task_list = doc["paths"]["/engine-rest/task"]["get"]
    params = {p["name"]: p for p in task_list["parameters"]}
    assert set(params) >= {"candidateGroup", "dueBefore", "sorting"}
    # sortBy and sortOrder are one exploded object: a sortOrder needs a sortBy, and a
    # sortBy is one of the keys /task sorts by
    sorting = params["sorting"]
    assert sorting["style"] == "form" and sorting["explode"] is True
    by = sorting["schema"]["anyOf"][0]
    assert by["required"] == ["sortBy"] and "created" in by["properties"]["sortBy"]["enum"]
    assert seeded.http.get("/task", params={"sortOrder": "desc"}).status_code == 400
    assert seeded.http.get("/task", params={"sortBy": "created"}).status_code == 200
    schema = task_list["responses"]["200"]["content"]["application/json"]["schema"]
    assert schema["items"]["$ref"].endswith("/TaskDto")


@pytest.mark.timeout(900)  # some 100 operations, a dozen requests each (argon2 in identity's)
def test_every_answer_matches_the_document(seeded: Api) -> None:
    root = seeded.base.replace("/engine-rest", "")
    schema = schemathesis.openapi.from_url(root + "/openapi.json")
    failures: list[str] = []
    operations = [
        r.ok()  # type: ignore[union-attr]
        for r in schema.get_all_operations()
        if r.ok().path.startswith("/engine-rest")  # type: ignore[union-attr]
    ]
    assert len(operations) >= 60
    for op in operations:

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=op.as_strategy(generation_mode=GenerationMode.POSITIVE))
        def run(case: Any) -> None:
            where = f"{case.method} {case.formatted_path} {case.query!r:.120} {case.body!r:.120}"
            wait = case.body.get("asyncResponseTimeout") if isinstance(case.body, dict) else None
            if isinstance(wait, (int, float)) and not isinstance(wait, bool) and wait > 100:
                case.body["asyncResponseTimeout"] = 100  # a short long poll: about shapes
            try:
                resp = case.call(base_url=root, timeout=20)
                case.validate_response(resp, checks=CHECKS)
            except (Exception, BaseExceptionGroup) as exc:  # collected: no slow shrinking
                failures.append(f"{where}: {str(exc)[:300]}")

        try:
            run()
        except Unsatisfiable:
            continue
    assert not failures, "\n".join(failures[:15])
