"""Process plumbing shared by the benchmarks: Celery processes, waiting, cleaning up."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def worker_command(app: str, queue: str, name: str, pool: str = "prefork") -> list[str]:
    """A ``celery worker`` with one process (``-c 1``) on ``queue``, quiet and lean."""
    return [
        sys.executable, "-m", "celery", "-A", app, "worker", "--pool", pool, "-c", "1",
        "-Q", queue, "-n", f"{name}@%h", "-l", "warning",
        "--without-gossip", "--without-mingle", "--without-heartbeat",
    ]  # fmt: skip


def beat_command(app: str, logs: Path) -> list[str]:
    """A ``celery beat`` whose schedule and pid files live in ``logs``."""
    return [
        sys.executable, "-m", "celery", "-A", app, "beat", "-l", "warning",
        "-s", str(logs / "beat-schedule"), "--pidfile", str(logs / "beat.pid"),
    ]  # fmt: skip


@contextmanager
def processes(
    commands: Sequence[list[str]], env: Mapping[str, str], *, prefix: str
) -> Iterator[Path]:
    """Run ``commands`` (each in its own process group, logs in a temp folder); on exit,
    stop them all, whatever happened. Yields the log folder."""
    logs = Path(tempfile.mkdtemp(prefix=prefix))
    full_env = {**os.environ, **env, "PYTHONPATH": str(ROOT)}
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for i, cmd in enumerate(commands):
            with open(logs / f"proc{i}.log", "wb") as log:
                procs.append(
                    subprocess.Popen(
                        cmd,
                        cwd=ROOT,
                        env=full_env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )
        yield logs
    finally:
        for p in procs:
            stop(p)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group, then SIGKILL it (prefork children included)."""
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        if proc.poll() is not None:
            break
        try:
            os.killpg(proc.pid, sig)
            proc.wait(timeout=wait)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            continue
    with contextlib.suppress(ProcessLookupError):  # pool children left behind
        os.killpg(proc.pid, signal.SIGKILL)


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll ``check`` until true, or raise TimeoutError naming ``what``."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.05)


def clean_queue(broker_url: str, queue: str) -> None:
    """Delete a benchmark's Redis keys (its queue and Celery's bookkeeping of it)."""
    import redis

    client = redis.Redis.from_url(broker_url)
    keys = list(client.scan_iter(f"*{queue}*"))
    if keys:
        client.delete(*keys)
