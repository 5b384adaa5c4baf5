"""Running scripts from a worker: through a pool of sandbox processes
(:mod:`bpm.scripts.server`), started on first use, one per thread running a script at once.

A helper is started without importing the engine (the ``bpm`` package is given an empty
``__init__``), so it is small and starts in a fraction of a second. It ends when its
worker does (its stdin closes). A forked worker (Celery's prefork pool) forgets the
helpers of its parent and starts its own.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bpm.scripts.policy import ScriptError
from bpm.scripts.sandbox import Limits, ScriptOutcome

__all__ = ["run_in_sandbox", "shutdown"]

_ROOT = str(Path(__file__).resolve().parents[2])  # the directory holding the bpm package
_BOOT = (
    "import sys, types; "
    "p = types.ModuleType('bpm'); p.__path__ = [sys.argv[1] + '/bpm']; sys.modules['bpm'] = p; "
    "sys.path.insert(0, sys.argv[1]); "
    "from bpm.scripts.server import main; main()"
)
_HEADER = struct.Struct(">I")
# How long past the script's own wall-clock bound the helper may take to answer.
_GRACE = 10.0


class _Helper:
    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _BOOT, _ROOT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,
        )
        self.owner = os.getpid()

    def ask(self, request: bytes, timeout: float) -> bytes:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(_HEADER.pack(len(request)) + request)
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        header = self._read(fd, _HEADER.size, deadline)
        (size,) = _HEADER.unpack(header)
        return self._read(fd, size, deadline)

    @staticmethod
    def _read(fd: int, size: int, deadline: float) -> bytes:
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLHUP)
        chunks: list[bytes] = []
        got = 0
        while got < size:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            if not poller.poll(max(1, int(left * 1000))):
                continue
            chunk = os.read(fd, size - got)
            if not chunk:
                raise EOFError
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def close(self, *, kill: bool = False) -> None:
        if kill:
            self.proc.kill()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()
        if self.owner == os.getpid():
            self.proc.wait()


_idle: list[_Helper] = []
_lock = threading.Lock()


def _take() -> _Helper:
    with _lock:
        while _idle:
            helper = _idle.pop()
            if helper.proc.poll() is None:
                return helper
            helper.close()
    return _Helper()


def _give_back(helper: _Helper) -> None:
    with _lock:
        _idle.append(helper)


def shutdown() -> None:
    """End the idle helpers of this process (at exit; tests may call it)."""
    with _lock:
        helpers, _idle[:] = list(_idle), []
    for helper in helpers:
        helper.close()


def _forget_in_child() -> None:
    # The helpers belong to the parent: close this process's copies of their pipes only.
    global _lock
    _lock = threading.Lock()
    helpers, _idle[:] = list(_idle), []
    for helper in helpers:
        for stream in (helper.proc.stdin, helper.proc.stdout):
            if stream is not None:
                stream.close()


os.register_at_fork(after_in_child=_forget_in_child)
atexit.register(shutdown)


def run_in_sandbox(
    source: str, variables: Mapping[str, Any], limits: Limits, *, mode: str = "exec"
) -> ScriptOutcome:
    """Run a script in a sandbox process; raise :class:`ScriptError` when it fails, is
    refused or exceeds its limits. ``variables`` must be JSON values."""
    try:
        request = json.dumps(
            {
                "source": source,
                "mode": mode,
                "variables": dict(variables),
                "cpu": limits.cpu_seconds,
                "memory": limits.memory_bytes,
                "output": limits.output_bytes,
            },
            allow_nan=False,
        ).encode()
    except (TypeError, ValueError) as exc:
        raise ScriptError(f"the variables cannot be handed to the script: {exc}") from None
    helper = _take()
    try:
        answer = json.loads(helper.ask(request, limits.wall_seconds + _GRACE))
    except (OSError, EOFError, TimeoutError, ValueError) as exc:
        helper.close(kill=True)
        raise ScriptError(f"the script sandbox did not answer ({type(exc).__name__})") from None
    _give_back(helper)
    if "error" in answer:
        raise ScriptError(str(answer["error"]))
    return ScriptOutcome(dict(answer["updates"]), answer.get("result"))
