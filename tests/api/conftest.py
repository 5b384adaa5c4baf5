"""A REAL API server process (``bpm api``) on a free port against a fresh PostgreSQL DB."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from bpm import Engine
from tests.forked import Process, popen_bpm
from tests.support import create_database, drop_database, eventually, free_port, pg_url

ROOT = Path(__file__).resolve().parents[2]
BPM = [sys.executable, "-c", "from bpm.cli import main; main()"]


@dataclass
class ApiServer:
    """One ``bpm api`` process; restartable on the same port."""

    db_url: str
    port: int = field(default_factory=free_port)
    keys: str | None = None
    log: Path | None = None
    proc: Process | None = None
    # More environment for the server (e.g. BPM_BROKER_URL and BPM_QUEUE to publish).
    env: dict[str, str] = field(default_factory=dict)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/engine-rest"

    def start(self) -> ApiServer:
        env = {
            **os.environ,
            **self.env,
            "BPM_DATABASE_URL": self.db_url,
            "PYTHONPATH": str(ROOT),
        }
        env.pop("BPM_API_KEYS", None)
        args = [*BPM, "api", "--port", str(self.port)]
        if self.keys is None:
            args.append("--insecure-no-auth")
        else:
            env["BPM_API_KEYS"] = self.keys
        # Forked from this test process's zygote (tests/forked.py): a process of its own,
        # without importing everything again (a real Popen where the zygote cannot serve).
        self.proc = popen_bpm(args[len(BPM) :], env=env, cwd=ROOT, out=self.log or os.devnull)

        def up() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"bpm api exited with {self.proc.returncode}")
            try:
                root = self.base.removesuffix("/engine-rest")
                return httpx.get(f"{root}/health/live", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        try:
            eventually(up, timeout=60, what="the API server to answer")
        except BaseException:
            self.kill()  # a server that did not answer in time must not outlive the test
            raise
        return self

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


@dataclass
class Api:
    server: ApiServer
    engine: Engine
    http: httpx.Client

    @property
    def base(self) -> str:
        return self.server.base

    def deploy(self, bpmn: str, name: str = "process.bpmn") -> dict[str, Any]:
        r = self.http.post(
            "/deployment/create",
            data={"deployment-name": name},
            files={"file": (name, bpmn.encode(), "application/xml")},
        )
        assert r.status_code == 200, r.text
        return dict(r.json())

    def start(
        self, key: str, variables: dict[str, Any] | None = None, business_key: str | None = None
    ) -> str:
        body: dict[str, Any] = {
            "variables": {k: {"value": v} for k, v in (variables or {}).items()}
        }
        if business_key:
            body["businessKey"] = business_key
        r = self.http.post(f"/process-definition/key/{key}/start", json=body)
        assert r.status_code == 200, r.text
        return str(r.json()["id"])

    def fetch(
        self,
        worker: str,
        topic: str,
        *,
        max_tasks: int = 10,
        lock: int = 30_000,
        timeout: int | None = None,
        **extra: Any,
    ) -> list[dict[str, Any]]:
        body: dict[str, Any] = {
            "workerId": worker,
            "maxTasks": max_tasks,
            "topics": [{"topicName": topic, "lockDuration": lock}],
            **extra,
        }
        if timeout is not None:
            body["asyncResponseTimeout"] = timeout
        r = self.http.post(
            "/external-task/fetchAndLock", json=body, timeout=(timeout or 0) / 1000 + 10
        )
        assert r.status_code == 200, r.text
        return list(r.json())

    def post(self, task_id: str, action: str, body: dict[str, Any] | None = None) -> httpx.Response:
        return self.http.post(f"/external-task/{task_id}/{action}", json=body)


@pytest.fixture
def api_server(pg_database_url: str, tmp_path: Path) -> Iterator[ApiServer]:
    server = ApiServer(pg_database_url, log=tmp_path / "api.log").start()
    yield server
    server.kill()


@pytest.fixture
def api(api_server: ApiServer, pg_database_url: str) -> Iterator[Api]:
    engine = Engine(pg_database_url)
    with httpx.Client(base_url=api_server.base, timeout=30) as http:
        yield Api(api_server, engine, http)
    engine.close()


@pytest.fixture(scope="module")
def module_api(pg_template: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    """One server and database for a whole module (``api`` starts one per test): for a
    module of many cheap cases, each with its own process key and topic."""
    name = create_database(template=pg_template)
    server = ApiServer(pg_url(name), log=tmp_path_factory.mktemp("api") / "api.log").start()
    engine = Engine(pg_url(name))
    with httpx.Client(base_url=server.base, timeout=30) as http:
        yield Api(server, engine, http)
    engine.close()
    server.kill()
    drop_database(name)


def bpmn(key: str, body: str, defs: str = "") -> str:
    """A BPMN document with one process ``key`` whose elements are ``body``."""
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"\n'
        '    xmlns:camunda="http://camunda.org/schema/1.0/bpmn"\n'
        f'    id="defs_{key}" targetNamespace="http://example.com/bpmn">\n'
        f"{defs}\n"
        f'<bpmn:process id="{key}" isExecutable="true">\n{body}\n</bpmn:process>\n'
        "</bpmn:definitions>\n"
    )


def one_task(
    key: str, topic: str, extra: str = "", task_attrs: str = "", defs: str = "", task_body: str = ""
) -> str:
    """start -> external task(topic) -> end, plus ``extra`` elements."""
    close = f">{task_body}</bpmn:serviceTask>" if task_body else "/>"
    return bpmn(
        key,
        f"""
        <bpmn:startEvent id="start"/>
        <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="work"/>
        <bpmn:serviceTask id="work" camunda:type="external"
            camunda:topic="{topic}" {task_attrs}{close}
        <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="end"/>
        <bpmn:endEvent id="end"/>
        {extra}""",
        defs,
    )


def history_types(engine: Engine, instance_id: str) -> list[str]:
    return [e.type for e in engine.history(instance_id)]


def instance_state(engine: Engine, instance_id: str) -> str:
    return engine.get_instance(instance_id).state.value


def write_worker(path: Path, name: str, body: str) -> Path:
    """A worker module ``name`` in ``path`` for ``bpm external-worker``."""
    file = path / f"{name}.py"
    file.write_text(textwrap.dedent(body))
    return file


def start_worker(module_dir: Path, module: str, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{module_dir}"}
    with open(log, "ab") as out:  # the worker has its own copy of the descriptor
        return subprocess.Popen(
            [*BPM, "external-worker", module], env=env, cwd=module_dir, stdout=out, stderr=out
        )
