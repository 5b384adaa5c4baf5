"""The `bpm` command as a user runs it: a real subprocess, real databases. Its refusals and
its help pages run in this process (:func:`bpm_here`): a refusal is the same code path and
the same one line on stderr either way, for a tenth of the CPU of a new Python process."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent


def bpm(
    *args: str, env: dict[str, str] | None = None, cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k != "BPM_DATABASE_URL"}
    full_env.update(env or {})
    full_env["COLUMNS"] = "200"
    return subprocess.run(
        [sys.executable, "-m", "bpm", *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd,
        timeout=120,
    )


def engines() -> list[Any]:
    """The engines alive in this process. By their real type: ``isinstance`` asks an
    object its ``__class__``, and a Celery task proxy answers by evaluating itself (it binds
    the task to its app, which is not this test's business and warns on Celery 5.7)."""
    from bpm import Engine

    return [o for o in gc.get_objects() if issubclass(type(o), Engine)]


def bpm_here(
    *args: str, env: dict[str, str] | None = None, cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    """:func:`bpm` in this process (click's runner), as the same CompletedProcess: the exit
    code, stdout and stderr (an unexpected exception is exit 1 with its traceback on stderr,
    as Python prints it)."""
    from bpm.cli import app

    full_env: dict[str, str | None] = {"BPM_DATABASE_URL": None, "COLUMNS": "200", **(env or {})}
    before = {id(o) for o in engines()}
    with contextlib.chdir(cwd):
        res = CliRunner(env=full_env).invoke(app, list(args), prog_name="bpm")
    # A refused command leaves its engine to the end of the process: end it here.
    for leftover in engines():
        if id(leftover) not in before and hasattr(leftover, "core"):  # built, not half-built
            leftover.close()
    stderr = res.stderr
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        stderr += "".join(traceback.format_exception(res.exception))
    return subprocess.CompletedProcess(["bpm", *args], res.exit_code, res.stdout, stderr)


def assert_user_error(res: subprocess.CompletedProcess[str], fragment: str) -> None:
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "Traceback" not in res.stderr + res.stdout
    assert res.stderr.startswith("error:"), res.stderr
    assert fragment in " ".join(res.stderr.split()), res.stderr


def test_run_sample_on_the_embedded_default(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'demo.db'}"
    res = bpm(
        "run",
        "examples/order.bpmn",
        "--var",
        "amount=120",
        "--handlers",
        "examples.order_handlers",
        "--db",
        db,
    )
    assert res.returncode == 0, res.stderr + res.stdout
    out = res.stdout
    assert "state: completed" in out
    for node in ("validate", "reserve", "charge", "ship"):
        assert node in out
    assert "join" in out.lower()
    # The same database serves `bpm instances` and `bpm show --json`.
    listing = bpm("instances", "--db", db)
    assert listing.returncode == 0 and "completed" in listing.stdout
    inst_id = listing.stdout.split("│")[1].strip() if "│" in listing.stdout else None
    shown = json.loads(bpm("show", _first_id(db), "--json", "--db", db).stdout)
    assert shown["state"] == "completed"
    assert shown["history"][0]["type"] == "instance_started"
    assert shown["history"][-1]["type"] == "instance_completed"
    assert inst_id is None or isinstance(inst_id, str)


def _first_id(db: str) -> str:
    from bpm import Engine

    engine = Engine(db)
    try:
        return engine.instances()[0].id
    finally:
        engine.close()


def test_run_on_the_default_file_in_the_current_directory(tmp_path: Path) -> None:
    (tmp_path / "handlers_here.py").write_text(
        "from bpm import service_task\n"
        "for n in ('validate-order', 'reserve-stock', 'charge-payment', 'ship-order'):\n"
        "    service_task(n)(lambda ctx: None)\n"
    )
    res = bpm(
        "run",
        str(ROOT / "examples/order.bpmn"),
        "--var",
        "amount=5",
        "--handlers",
        "handlers_here",
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr + res.stdout
    assert (tmp_path / "bpm.db").exists()


def test_deploy_start_show_on_postgresql(pg_database_url: str) -> None:
    env = {"BPM_DATABASE_URL": pg_database_url}
    res = bpm("deploy", "examples/order.bpmn", env=env)
    assert res.returncode == 0 and "version 1" in res.stdout, res.stderr
    res = bpm("start", "order", "--var", "amount=120", "--business-key", "o-9", env=env)
    assert res.returncode == 0, res.stderr
    inst_id = res.stdout.split()[1]
    shown = json.loads(bpm("show", inst_id, "--json", env=env).stdout)
    assert shown["business_key"] == "o-9"
    assert shown["variables"] == {"amount": 120}
    assert [t["node_id"] for t in shown["tokens"] if t["state"] == "ready"] == ["validate"]


def test_deploy_a_dmn_file_and_refuse_a_broken_one(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'x.db'}"
    assert bpm("db", "upgrade", "--db", db).returncode == 0
    pricing = ROOT / "tests" / "data" / "dmn" / "pricing.dmn"
    res = bpm("deploy", str(pricing), "--db", db)
    assert res.returncode == 0, res.stderr
    assert "deployed decision d_Discount version 1" in res.stdout
    broken = tmp_path / "broken.dmn"
    broken.write_bytes(pricing.read_bytes().replace(b"(1 - Discount)", b"(1 -"))
    assert_user_error(bpm("deploy", str(broken), "--db", db), "FEEL syntax error")


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, pg_database_url: str) -> None:
    db = f"sqlite:///{tmp_path / 'x.db'}"
    assert_user_error(bpm_here("run", "nope.bpmn", "--db", db), "nope.bpmn is not a file")
    assert_user_error(bpm_here("start", "order", "--var", "amount", "--db", db), "NAME=VALUE")
    assert_user_error(
        bpm_here("start", "order", cwd=tmp_path), "no database: ./bpm.db (the default)"
    )
    assert_user_error(bpm_here("start", "order", "--db", "mysql://x@y/z"), "unsupported database")
    assert_user_error(
        bpm_here("start", "missing", "--db", pg_database_url), "no process definition"
    )
    assert_user_error(bpm_here("show", "no-such-id", "--db", pg_database_url), "does not exist")
    assert_user_error(
        bpm_here("instances", "--state", "bogus", "--db", pg_database_url), "unknown instance state"
    )
    bad = tmp_path / "bad.bpmn"
    bad.write_text("<definitions")
    assert_user_error(bpm_here("deploy", str(bad), "--db", pg_database_url), "cannot deploy")
    assert_user_error(
        bpm_here("run", "examples/order.bpmn", "--handlers", "no_such_module", "--db", db),
        "cannot import handler module",
    )


@pytest.mark.parametrize("command", ["db", "run", "show", "start", "deploy", "instances"])
def test_every_command_has_help(command: str) -> None:
    res = bpm_here(command, "--help")
    assert res.returncode == 0
    assert "Usage" in res.stdout


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_dev_serves_the_loop_and_an_open_local_api(tmp_path: Path) -> None:
    import signal

    import httpx

    from bpm import Engine
    from tests.support import eventually

    db = f"sqlite:///{tmp_path / 'dev.db'}"
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "BPM_DATABASE_URL"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bpm",
            "dev",
            "--handlers",
            "examples.order_handlers",
            "--db",
            db,
            "--port",
            str(port),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}/engine-rest"

        def up() -> bool:
            try:
                return httpx.get(f"{base}/process-definition", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        eventually(up, timeout=90, what="the dev API")  # a start at load 20 took over 30 s
        with open(ROOT / "examples/order.bpmn", "rb") as f:
            res = httpx.post(
                f"{base}/deployment/create",
                files={"order.bpmn": f},
                data={"deployment-name": "dev"},
                timeout=10,
            )
        assert res.status_code == 200, res.text
        started = httpx.post(
            f"{base}/process-definition/key/order/start",
            json={"variables": {"amount": {"value": 150}}},
            timeout=10,
        )
        assert started.status_code == 200, started.text
        inst_id = started.json()["id"]
        engine = Engine(db)
        try:
            done = eventually(
                lambda: engine.get_instance(inst_id).state.value == "completed",
                timeout=30,
                what="the instance to complete in bpm dev",
            )
            assert done
            assert engine.get_instance(inst_id).variables["shipped"] is True
        finally:
            engine.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "WITHOUT authentication" in err and "127.0.0.1" in err
    assert "Traceback" not in err


def test_a_fresh_sqlite_file_gets_its_schema_from_any_command(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'fresh.db'}"
    res = bpm("deploy", "examples/order.bpmn", "--db", db)
    assert res.returncode == 0, res.stderr
    res = bpm("instances", "--db", db)
    assert res.returncode == 0, res.stderr


def test_a_postgres_database_without_the_schema_gets_one_line(
    pg_template: str, tmp_path: Path
) -> None:
    from sqlalchemy import create_engine, inspect

    from tests.support import create_database, drop_database, pg_url

    name = create_database()  # empty: no migration ran
    try:
        for args in (["deploy", "examples/order.bpmn"], ["instances"], ["timers", "--once"]):
            res = bpm_here(*args, "--db", pg_url(name))
            assert_user_error(res, "has no bpm schema yet: run `bpm db upgrade`")
            assert len(res.stderr.strip().splitlines()) == 1, res.stderr
        eng = create_engine(pg_url(name))
        try:
            assert inspect(eng).get_table_names() == []  # nothing was created or half-applied
        finally:
            eng.dispose()
    finally:
        drop_database(name)
