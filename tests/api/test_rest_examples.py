"""docs/rest-api.md "By example (curl)": its bash blocks, run as one script as written
against a real ``bpm api``, take the tour process from deployment to its end."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bpm import Engine
from tests.api.conftest import ROOT, ApiServer

pytestmark = pytest.mark.slow

DOC = ROOT / "docs" / "rest-api.md"


def doc_script() -> str:
    text = DOC.read_text()
    section = text.split("<!-- rest-examples -->")[1].split("<!-- /rest-examples -->")[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, re.S)
    return "set -euo pipefail\n" + "\n".join(blocks)


@pytest.fixture
def server(pg_database_url: str, tmp_path: Path) -> Iterator[ApiServer]:
    keys = "admin:an0ther,shipper:sh1p:shipping"
    started = ApiServer(pg_database_url, keys=keys, log=tmp_path / "api.log").start()
    yield started
    started.kill()


def test_the_curl_examples_cover_the_common_calls() -> None:
    script = doc_script()
    for call in (
        "/deployment/create",
        "/process-definition/key/tour/start",
        "/task/$TASK/complete",
        "/external-task/fetchAndLock",
        "/external-task/$JOB/complete",
        "/message",
        "/signal",
    ):
        assert f'"$BPM{call}' in script, call
    assert '"type": "Boolean"' in script and '"type": "Date"' in script


def test_the_curl_examples_run_as_written(server: ApiServer, pg_database_url: str) -> None:
    for tool in ("bash", "curl", "jq"):
        if shutil.which(tool) is None:
            pytest.fail(
                f"{tool} is missing: docs/rest-api.md's examples need it (apt-get install {tool})"
            )
    env = {**os.environ, "BPM": server.base, "AUTH": "admin:an0ther"}
    ran = subprocess.run(
        ["bash", "-c", doc_script()],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    out = ran.stdout.split()
    assert out[-1] == "COMPLETED", ran.stdout
    instance_id = out[out.index("started") + 1]
    engine = Engine(pg_database_url)
    try:
        inst = engine.get_instance(instance_id)
        assert inst.ended and inst.business_key == "order-42"
        assert {k: inst.variables[k] for k in ("amount", "approved", "paid", "tracking")} == {
            "amount": 120,
            "approved": True,
            "paid": 120.5,
            "tracking": "1Z999",
        }
        assert inst.variables["limits"] == {"max": 500}  # a Json variable is stored as JSON
    finally:
        engine.close()
