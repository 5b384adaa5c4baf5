"""Camunda Modeler deploys and starts unchanged: its own REST client (``CamundaAPI.js``,
vendored in ``tests/data/camunda_modeler``) runs in Node against a real ``bpm api`` with
API keys, as its "Deploy" and "Start instance" buttons do: the connection check
(``GET /deployment?maxResults=0``), ``GET /version``, ``POST /deployment/create`` with the
diagram and its attached forms, ``POST /process-definition/{id}/start``."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.conftest import ApiServer

DATA = Path(__file__).resolve().parents[1] / "data"
CLIENT = DATA / "camunda_modeler"
FORMS = DATA / "forms"
pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs node")

DRIVER = r"""
import CamundaAPI from './CamundaAPI.mjs';
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

globalThis.window = {
  btoa: (s) => Buffer.from(s, 'binary').toString('base64'),
  navigator: { onLine: true },
};
const [url, authType, username, password, variables, ...files] = process.argv.slice(2);
const api = new CamundaAPI({ url, authType, username, password, token: password });
const out = {};
try { await api.checkConnection(); out.connection = 'ok'; }
catch (e) { out.connection = { code: e.code, details: e.details }; }
try { out.version = await api.getVersion(); } catch (e) { out.version = { code: e.code }; }
const read = (p) => ({ name: basename(p), contents: readFileSync(p, 'utf8'), path: p });
const [diagram, ...attachments] = files.map(read);
try {
  const deployment = await api.deployDiagram(diagram, { name: 'approval', attachments });
  out.deployment = deployment;
  out.instance = await api.startInstance(deployment.deployedProcessDefinition, {
    businessKey: null, variables: variables === 'null' ? null : JSON.parse(variables),
  });
} catch (e) {
  out.error = { message: e.message, code: e.code, details: e.details, problems: e.problems };
}
console.log(JSON.stringify(out));
"""


@pytest.fixture
def client_dir(tmp_path: Path) -> Path:
    """The Modeler's client as ES modules Node can load (relative imports get ``.mjs``;
    the ``debug`` logger is stood in for)."""
    for name in ("CamundaAPI", "RestAPI", "AuthTypes"):
        text = (CLIENT / f"{name}.js").read_text()
        text = re.sub(r"from '\./(\w+)'", r"from './\1.mjs'", text)
        text = text.replace("import debug from 'debug';", "const debug = () => () => {};")
        (tmp_path / f"{name}.mjs").write_text(text)
    (tmp_path / "driver.mjs").write_text(DRIVER)
    return tmp_path


@pytest.fixture
def server(pg_database_url: str, tmp_path: Path) -> Iterator[ApiServer]:
    srv = ApiServer(pg_database_url, keys="modeler:s3cret", log=tmp_path / "api.log").start()
    yield srv
    srv.kill()


def modeler(
    client: Path,
    server: ApiServer,
    *files: Path,
    password: str = "s3cret",
    auth: str = "basic",
    variables: object = None,
) -> dict[str, Any]:
    run = subprocess.run(
        ["node", str(client / "driver.mjs"), server.base, auth, "modeler", password,
         json.dumps(variables), *map(str, files)],
        capture_output=True, text=True, timeout=60, cwd=client,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    out: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    return out


def test_deploy_and_start_from_the_modeler(client_dir: Path, server: ApiServer) -> None:
    bpmn = FORMS / "approval.bpmn"
    forms = [FORMS / "expense-review.form", FORMS / "expense-request.form"]
    out = modeler(client_dir, server, bpmn, *forms)
    assert out["connection"] == "ok" and out["version"] == {"version": "7.20.0"}
    assert "error" not in out, out
    deployment = out["deployment"]
    definition = deployment["deployedProcessDefinition"]
    assert definition["key"] == "approval" and definition["version"] == 1
    instance = out["instance"]
    assert instance["definitionId"] == definition["id"] and instance["ended"] is False
    auth = ("modeler", "s3cret")
    with httpx.Client(base_url=server.base, auth=auth, timeout=10) as http:
        dep = http.get(f"/deployment/{deployment['id']}").json()
        assert (dep["name"], dep["source"]) == ("approval", "Camunda Modeler")
        names = sorted(r["name"] for r in http.get(f"/deployment/{dep['id']}/resources").json())
        assert names == ["approval.bpmn", "expense-request.form", "expense-review.form"]
        [task] = http.get("/task", params={"processInstanceId": instance["id"]}).json()
        assert task["camundaFormRef"] == {"key": "expense-review", "binding": "deployment"}
        start_form = http.get(f"/process-definition/{definition['id']}/startForm").json()
        assert start_form["camundaFormRef"]["key"] == "expense-request"
    # "Start instance" again: the unchanged diagram is filtered as a duplicate, the same
    # version starts, with the variables typed in the Modeler's dialog
    typed = {"amount": {"value": 120, "type": "Integer"}, "who": {"value": "ann"}}
    again = modeler(client_dir, server, bpmn, *forms, variables=typed)
    assert again["deployment"]["id"] == deployment["id"]
    assert again["deployment"]["deployedProcessDefinition"]["id"] == definition["id"]
    with httpx.Client(base_url=server.base, auth=auth, timeout=10) as http:
        got = http.get(f"/process-instance/{again['instance']['id']}/variables").json()
    assert got["amount"] == {"value": 120, "type": "Integer", "valueInfo": {}}
    assert got["who"]["value"] == "ann"


def test_the_modeler_understands_our_errors(
    client_dir: Path, server: ApiServer, tmp_path: Path
) -> None:
    wrong = modeler(client_dir, server, FORMS / "approval.bpmn", password="nope")
    assert wrong["connection"]["code"] == "UNAUTHORIZED"
    broken = tmp_path / "broken.bpmn"
    broken.write_text((FORMS / "approval.bpmn").read_text().replace('"done"', '"nowhere"', 1))
    out = modeler(client_dir, server, broken)
    # Camunda's parse error prefix: the Modeler says the server could not parse it
    assert out["error"]["code"] == "DIAGRAM_PARSE_ERROR", out
    assert "nowhere" in out["error"]["problems"]
    with httpx.Client(base_url=server.base, auth=("modeler", "s3cret"), timeout=10) as http:
        assert http.get("/deployment/count").json() == {"count": 0}
    bearer = modeler(client_dir, server, FORMS / "approval.bpmn", auth="bearer")
    assert bearer["connection"] == "ok" and "error" not in bearer
