"""Real Celery worker and beat processes for the e2e tests, always killed at teardown."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import uuid
from collections.abc import Mapping
from pathlib import Path

from tests.forked import Process, popen_celery
from tests.support import eventually

ROOT = Path(__file__).resolve().parents[2]
CELERY = [sys.executable, "-m", "celery", "-A", "workers.app"]
APP = "workers.app"


class CeleryProcess:
    """One ``celery`` command in its own process group, logging to a file."""

    def __init__(
        self, args: list[str], env: Mapping[str, str], log_path: Path, *, app: str = APP
    ) -> None:
        self.log_path = log_path
        self._terminated = False
        # The repository first; an example project may add its own folder after it.
        path = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
        full_env = {**os.environ, **env, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1"}
        log_path.write_bytes(b"")
        # Forked from the test process's Celery zygote (tests/forked.py): its own process,
        # session and process group, without importing Celery and bpm again.
        self.proc: Process = popen_celery(["-A", app, *args], env=full_env, cwd=ROOT, out=log_path)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for_log(self, pattern: str, *, timeout: float = 20.0) -> re.Match[str]:
        """Poll the log until ``pattern`` matches (fails early if the process died)."""

        def check() -> re.Match[str] | None:
            found = re.search(pattern, self.log())
            if found is None and self.proc.poll() is not None:
                raise AssertionError(
                    f"celery exited with {self.proc.returncode}:\n{self.log()[-3000:]}"
                )
            return found

        return eventually(check, timeout=timeout, what=f"{pattern!r} in {self.log_path}")

    def started(self, pattern: str) -> CeleryProcess:
        """Wait until ``pattern`` is logged; a process that never gets there is stopped (it
        must not outlive the test that gave up on it, consuming its queue for ever)."""
        try:
            self.wait_for_log(pattern)
        except BaseException:
            self.stop()
            raise
        return self

    def terminate(self) -> None:
        """SIGTERM the process group (a warm shutdown starts; :meth:`stop` waits for it)."""
        if self.proc.poll() is None and not self._terminated:
            self._terminated = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)

    def stop(self) -> None:
        """SIGTERM the process group, then SIGKILL whatever is left of it after 5 s."""
        self.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        # Children may outlive the main process (e.g. a blocked pool child).
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=5)


def stop_all(procs: list[CeleryProcess]) -> None:
    """Stop every process, their warm shutdowns side by side (one after the other, each
    can take seconds)."""
    for proc in procs:
        proc.terminate()
    for proc in procs:
        proc.stop()


def start_worker(
    env: Mapping[str, str],
    queue: str | None,
    log_dir: Path,
    *,
    children: int = 1,
    app: str = APP,
) -> CeleryProcess:
    """A prefork worker of ``app`` with ``children`` children (one by default), consuming
    only ``queue`` (None: the app's queues, no ``-Q``); returns once it is ready."""
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    worker = CeleryProcess(
        [
            "worker",
            "--pool",
            "prefork",
            "-c",
            str(children),
            *(["-Q", queue] if queue else []),
            "-n",
            f"{name}@%h",
            "-l",
            "info",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ],
        env,
        log_dir / f"{name}.log",
        app=app,
    )
    return worker.started(r"ready\.")


def start_beat(
    env: Mapping[str, str], log_dir: Path, *, app: str = APP, level: str = "info"
) -> CeleryProcess:
    name = f"beat-{uuid.uuid4().hex[:8]}"
    beat = CeleryProcess(
        [
            "beat",
            "-l",
            level,
            "-s",
            str(log_dir / f"{name}-schedule"),
            "--pidfile",
            str(log_dir / f"{name}.pid"),
        ],
        env,
        log_dir / f"{name}.log",
        app=app,
    )
    return beat.started(r"beat: Starting")
