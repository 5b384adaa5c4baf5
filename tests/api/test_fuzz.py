"""Property-based fuzzing of every operation in ``/openapi.json`` (schemathesis, positive and
negative generation): no 500, and every error is in the Camunda shape."""

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

from tests.api.conftest import Api, ApiServer, one_task
from tests.support import create_database, drop_database, pg_url

EXAMPLES = 25


@pytest.fixture(scope="module")
def fuzz_api(pg_template: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    from bpm import Engine

    name = create_database(template=pg_template)
    log = Path(tmp_path_factory.mktemp("fuzz")) / "api.log"
    server = ApiServer(pg_url(name), log=log).start()
    engine = Engine(pg_url(name))
    with httpx.Client(base_url=server.base, timeout=30) as http:
        api = Api(server, engine, http)
        api.deploy(one_task("fuzz", "fuzz"))
        for i in range(3):
            api.start("fuzz", {"n": i})
        yield api
    engine.close()
    server.kill()
    drop_database(name)


def _tame(case: Any) -> None:
    """Keep generated long polls short: the fuzz is about input handling, not waiting."""
    if isinstance(case.body, dict) and "asyncResponseTimeout" in case.body:
        value = case.body["asyncResponseTimeout"]
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 100:
            case.body["asyncResponseTimeout"] = 100


def _operations(base: str) -> list[Any]:
    schema = schemathesis.openapi.from_url(base.replace("/engine-rest", "") + "/openapi.json")
    return [result.ok() for result in schema.get_all_operations()]  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_fuzz_every_operation_never_500_and_errors_in_camunda_shape(
    fuzz_api: Api, mode: GenerationMode
) -> None:
    root = fuzz_api.base.replace("/engine-rest", "")
    failures: list[str] = []
    operations = _operations(fuzz_api.base)
    assert len(operations) >= 15

    for op in operations:

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=op.as_strategy(generation_mode=mode))
        def run(case: Any) -> None:
            _tame(case)
            where = f"{case.method} {case.formatted_path} body={case.body!r:.200}"
            try:
                resp = case.call(base_url=root, timeout=20)
            except Exception as exc:  # recorded, not raised: no slow shrinking
                failures.append(f"{type(exc).__name__} for {where}")
                return
            if resp.status_code >= 500:
                failures.append(f"{resp.status_code} for {where}: {resp.text[:200]}")
            elif resp.status_code >= 400:
                try:
                    body = resp.json()
                except ValueError:
                    failures.append(f"non-JSON error for {where}: {resp.text[:200]}")
                    return
                if set(body) < {"type", "message"} or "detail" in body:
                    failures.append(f"not the Camunda shape for {where}: {body}")
                ctype = resp.headers.get("content-type")
                if isinstance(ctype, list):
                    ctype = ctype[0]
                if ctype != "application/json":
                    failures.append(f"content-type {ctype!r} for {where}")

        try:
            run()
        except Unsatisfiable:  # nothing to make invalid (no parameters, no body)
            continue
    assert not failures, "\n".join(failures[:20])
    # the seeded tasks are still there and still fetchable: the fuzz broke nothing
    assert (
        fuzz_api.http.get("/external-task/count", params={"topicName": "fuzz"}).json()["count"] == 3
    )
