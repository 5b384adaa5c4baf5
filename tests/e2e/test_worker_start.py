"""Starting workers: handler modules that do not import stop the start; no import loops."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.e2e.procs import CeleryProcess, start_worker
from tests.support import eventually

ROOT = Path(__file__).resolve().parents[2]


def test_a_handler_module_that_does_not_import_stops_the_worker(
    worker_env: dict[str, str], queue: str, tmp_path: Path
) -> None:
    env = {**worker_env, "BPM_HANDLERS": "tests.e2e.handlers,tests.e2e.no_such_module"}
    proc = CeleryProcess(
        ["worker", "--pool", "prefork", "-c", "1", "-Q", queue, "-n", f"bad-{queue}@%h"],
        env,
        tmp_path / "bad.log",
    )
    try:
        code = eventually(lambda: proc.proc.poll(), timeout=60, what="the worker to exit")
        assert code != 0
        assert "cannot import handler module 'tests.e2e.no_such_module'" in proc.log()
    finally:
        proc.stop()


def test_a_good_worker_still_starts(worker_env: dict[str, str], queue: str, tmp_path: Path) -> None:
    worker = start_worker(worker_env, queue, tmp_path)
    try:
        assert worker.proc.poll() is None
    finally:
        worker.stop()


def test_the_engine_package_registers_nothing_by_import() -> None:
    """Importing :mod:`bpm.contrib.celery` loads neither ``workers`` nor ``beat`` and puts no
    ``bpm.*`` task on any app: only ``install(app, ...)`` does, on that app."""
    code = (
        "import sys, celery, bpm.contrib.celery\n"
        "from celery import Celery\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in ('workers', 'beat')]\n"
        "other = Celery('other', set_as_current=False)\n"
        "names = set(celery.current_app.tasks) | set(other.tasks)\n"
        "assert not [n for n in names if n.startswith('bpm.')], names\n"
        "print('ok')"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
