"""``/health/live``, ``/health/ready`` on a real API process, and ``bpm doctor``."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

from bpm import Engine
from bpm.handlers import HandlerRegistry
from bpm.health import check_broker, check_database, check_handlers, check_migrations
from tests.api.conftest import ROOT, ApiServer
from tests.engine_helpers import order_process
from tests.forked import run_bpm
from tests.support import create_database, drop_database, pg_url, redis_url


def test_live_and_ready(
    pg_database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BPM_BROKER_URL", raising=False)
    server = ApiServer(pg_database_url, keys="ops:s", log=tmp_path / "api.log").start()
    try:
        base = f"http://127.0.0.1:{server.port}"
        assert httpx.get(f"{base}/health/live", timeout=30).json() == {"status": "ok"}
        ready = httpx.get(f"{base}/health/ready", timeout=30)
        assert ready.status_code == 200
        checks = {c["name"]: c for c in ready.json()["checks"]}
        assert checks["database"]["ok"] and checks["migrations"]["ok"]
        assert checks["broker"]["skipped"]  # BPM_BROKER_URL is not set for this server
        assert "postgresql+psycopg" not in ready.text  # no URL, no secret
    finally:
        server.kill()


def test_ready_checks_the_broker(
    pg_database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for url, status in ((redis_url(), 200), ("redis://127.0.0.1:1/0", 503)):
        monkeypatch.setenv("BPM_BROKER_URL", url)
        server = ApiServer(pg_database_url, keys="ops:s", log=tmp_path / "api.log").start()
        try:
            ready = httpx.get(f"http://127.0.0.1:{server.port}/health/ready", timeout=30)
            assert ready.status_code == status, ready.text
            (broker,) = [c for c in ready.json()["checks"] if c["name"] == "broker"]
            assert broker["ok"] is (status == 200) and not broker["skipped"]
        finally:
            server.kill()


def test_ready_says_503_when_the_schema_is_behind(tmp_path: Path) -> None:
    name = create_database()  # empty: no migrations ran
    try:
        # the server starts fine: /version needs no schema
        server = ApiServer(pg_url(name), keys="ops:s", log=tmp_path / "api.log").start()
        try:
            r = httpx.get(f"http://127.0.0.1:{server.port}/health/ready", timeout=30)
            assert r.status_code == 503 and r.json()["status"] == "unavailable"
            (migrations,) = [c for c in r.json()["checks"] if c["name"] == "migrations"]
            assert not migrations["ok"] and "bpm db upgrade" in migrations["detail"]
        finally:
            server.kill()
    finally:
        drop_database(name)


def test_checks_report_instead_of_raising(pg_database_url: str) -> None:
    engine = Engine(pg_database_url)
    try:
        assert check_database(engine).ok and check_migrations(engine).ok
        down = check_broker("redis://127.0.0.1:1/0", timeout=1)
        assert not down.ok and down.detail
        assert check_broker(redis_url()).ok
        engine.deploy(order_process())
        missing = check_handlers(engine, HandlerRegistry())
        assert not missing.ok and "validate-order" in missing.detail
    finally:
        engine.close()
    gone = Engine("postgresql+psycopg://root@127.0.0.1:1/none")
    result = check_database(gone)
    assert not result.ok and "OperationalError" in result.detail
    gone.close()


def test_bpm_doctor(pg_database_url: str) -> None:
    engine = Engine(pg_database_url)
    engine.deploy(order_process())
    engine.close()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BPM_DATABASE_URL": pg_database_url}
    env.pop("BPM_HANDLERS", None)
    env["BPM_BROKER_URL"] = redis_url()
    # forked from the zygote (tests/forked.py): a process of its own without the imports
    bad = run_bpm(["doctor"], env=env, cwd=ROOT, timeout=60)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "FAILED" in bad.stdout and "validate-order" in bad.stdout
    good = run_bpm(
        ["doctor", "--handlers", "examples.order_handlers"], env=env, cwd=ROOT, timeout=60
    )
    assert good.returncode == 0, good.stdout + good.stderr
    for name in ("database", "migrations", "broker", "handlers"):
        assert name in good.stdout
    assert "FAILED" not in good.stdout


def test_bpm_doctor_on_a_database_that_is_down() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("BPM_BROKER_URL", None)
    url = "postgresql+psycopg://root@127.0.0.1:1/none"
    r = run_bpm(["doctor", "--db", url], env=env, cwd=ROOT, timeout=60)
    assert r.returncode == 1 and "database" in r.stdout and "FAILED" in r.stdout
