"""Running a compiled script in a forked child, bounded in CPU time and memory.

No guard inside the interpreter can stop ``10**10**9`` or a catastrophic regular expression
(both run in C without returning to Python), so each run is its own process: the worker
forks, the child lowers its limits (``RLIMIT_AS``: its address space at the fork plus
:attr:`Limits.memory_bytes`; ``RLIMIT_CPU`` and a CPU-time interval timer), runs the script on
its own copy of the variables, writes the outcome as JSON to a pipe and leaves with
``os._exit`` (nothing of its parent is flushed or closed twice). The parent waits at most
:attr:`Limits.wall_seconds` and kills what is still running. Whatever the script does, the
worker carries on: a refused import, an exhausted limit, a crash of the child are a
:class:`~bpm.scripts.policy.ScriptError` in the worker, and nothing of the script's work is
kept.

The child runs only what is already loaded (the compiled code, the guards, ``json``): it is
forked from a process that may have other threads, so it must not need a lock one of them
held (imports, logging). The garbage collector is off in the child for the same reason (a
finaliser of the parent's objects must not run there).
"""

from __future__ import annotations

import contextlib
import datetime
import decimal
import gc
import json
import math
import os
import resource
import select
import signal
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bpm.scripts.policy import (
    GUARD_NAMES,
    RESULT_NAME,
    CompiledScript,
    ScriptError,
    is_value,
    script_globals,
)

__all__ = ["Limits", "ScriptOutcome", "run"]


@dataclass(frozen=True)
class Limits:
    """The bounds of one run. ``BPM_SCRIPT_CPU_SECONDS`` (default 2) and
    ``BPM_SCRIPT_MEMORY_MB`` (default 256) set them for a worker; the wall-clock bound is
    four times the CPU rlimit (the CPU bound rounded up, plus a second) plus two seconds:
    a child that blocks is killed too, one that gets little of a busy machine is not."""

    cpu_seconds: float = 2.0
    memory_bytes: int = 256 * 2**20
    output_bytes: int = 32 * 2**20

    @property
    def wall_seconds(self) -> float:
        return 4 * (math.ceil(self.cpu_seconds) + 1) + 2  # RLIMIT_CPU's soft limit, x4

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Limits:
        env = os.environ if env is None else env
        cpu = float(env.get("BPM_SCRIPT_CPU_SECONDS") or cls.cpu_seconds)
        mb = float(env.get("BPM_SCRIPT_MEMORY_MB") or cls.memory_bytes / 2**20)
        if cpu <= 0 or mb <= 0:
            raise ScriptError("BPM_SCRIPT_CPU_SECONDS and BPM_SCRIPT_MEMORY_MB must be > 0")
        return cls(cpu_seconds=cpu, memory_bytes=int(mb * 2**20))


@dataclass(frozen=True)
class ScriptOutcome:
    """What a script changed: ``updates`` (names it bound or changed, as JSON values) and
    ``result`` (its last expression's value, for ``camunda:resultVariable``)."""

    updates: dict[str, Any]
    result: Any = None


class _OutOfTime(BaseException):
    """Raised in the child by its CPU-time timer (a BaseException: ``except Exception`` in a
    script does not swallow it; ``except:`` may, and then ``RLIMIT_CPU`` ends the child)."""


def _jsonable(name: str, value: Any) -> Any:
    """A value as JSON, as FEEL results are stored: dates and times as ISO 8601 text,
    decimals as integers when whole, else floats."""
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, float) and not math.isfinite(value):
        raise ScriptError(f"variable '{name}' is {value}, which JSON cannot hold")
    if isinstance(value, dict):
        return {str(k): _jsonable(name, v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(name, v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise ScriptError(
        f"variable '{name}' holds a {type(value).__name__}, which is not a JSON value: "
        f"convert it (str(), list()...) or del it before the script ends"
    )


def _line(tb: Any) -> int | None:
    line = None
    for frame, lineno in traceback.walk_tb(tb):
        if frame.f_code.co_filename == "<script>":
            line = lineno
    return line


def _execute(compiled: CompiledScript, variables: Mapping[str, Any]) -> dict[str, Any]:
    original = json.loads(json.dumps(variables))  # the child's own copy, to compare with
    glb = script_globals(json.loads(json.dumps(variables)))
    try:
        if compiled.mode == "eval":
            value = eval(compiled.code, glb)
            return {"result": _jsonable("result", value), "updates": {}}
        exec(compiled.code, glb)
    except _OutOfTime:
        return {"error": "cpu"}
    except ScriptError as exc:
        return {"error": str(exc)}
    except MemoryError:
        return {"error": "memory"}
    except BaseException as exc:  # anything the script raised is its failure
        line = _line(exc.__traceback__)
        where = f" (line {line})" if line else ""
        return {"error": f"{type(exc).__name__}: {exc}{where}"}
    updates: dict[str, Any] = {}
    for name, value in glb.items():
        if name in GUARD_NAMES or name == RESULT_NAME or name.startswith("_"):
            continue
        if not is_value(value):
            continue
        converted = _jsonable(name, value)
        if name in original and original[name] == converted:
            continue
        updates[name] = converted
    return {"updates": updates, "result": _jsonable("result", glb.get(RESULT_NAME))}


def _child(compiled: CompiledScript, variables: Mapping[str, Any], limits: Limits, fd: int) -> None:
    gc.disable()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, signal.SIG_DFL)
    try:
        with open("/proc/self/statm") as statm:
            size = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        limit = size + limits.memory_bytes
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (OSError, ValueError):  # no /proc (macOS): the data segment is the next best bound
        used = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        limit = used + limits.memory_bytes
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    # RLIMIT_CPU counts whole seconds: the timer stops Python code on time, the rlimit
    # (a second later) what runs in C and never returns to the interpreter.
    soft = math.ceil(limits.cpu_seconds) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    def out_of_time(signum: int, frame: Any) -> None:
        raise _OutOfTime

    signal.signal(signal.SIGPROF, out_of_time)
    signal.setitimer(signal.ITIMER_PROF, limits.cpu_seconds)
    try:
        outcome = _execute(compiled, variables)
        signal.setitimer(signal.ITIMER_PROF, 0)
        data = json.dumps(outcome).encode()
    except _OutOfTime:
        data = b'{"error": "cpu"}'
    except MemoryError:
        data = b'{"error": "memory"}'
    except ScriptError as exc:
        data = json.dumps({"error": str(exc)}).encode()
    except BaseException as exc:
        data = json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode()
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def run(
    compiled: CompiledScript, variables: Mapping[str, Any], limits: Limits | None = None
) -> ScriptOutcome:
    """Run ``compiled`` over ``variables`` in a forked child; raise :class:`ScriptError` when
    it fails or runs out of CPU time or memory (nothing it did is kept)."""
    limits = limits or Limits()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 0
        try:
            os.close(read_fd)
            _child(compiled, variables, limits, write_fd)
        except BaseException:
            code = 3
        finally:
            os._exit(code)
    os.close(write_fd)
    chunks: list[bytes] = []
    size = 0
    killed = False
    deadline = time.monotonic() + limits.wall_seconds
    poller = select.poll()  # not select(): a worker may hold descriptors above 1024
    poller.register(read_fd, select.POLLIN | select.POLLHUP)
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                killed = True
                break
            if not poller.poll(max(1, int(left * 1000))):
                continue
            chunk = os.read(read_fd, 1 << 16)
            if not chunk:
                break
            size += len(chunk)
            if size > limits.output_bytes:
                killed = True
                break
            chunks.append(chunk)
    finally:
        os.close(read_fd)
        if killed:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    if killed and size > limits.output_bytes:
        raise ScriptError(f"the script's variables are over {limits.output_bytes} bytes")
    if killed:
        raise ScriptError(f"the script ran longer than {limits.wall_seconds:g} s and was stopped")
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig in (signal.SIGXCPU, signal.SIGKILL):
            raise ScriptError(_CPU.format(limits.cpu_seconds))
        raise ScriptError(f"the script's process ended with signal {signal.Signals(sig).name}")
    try:
        outcome = json.loads(b"".join(chunks))
    except ValueError:
        raise ScriptError(
            f"the script's process ended (exit status {os.waitstatus_to_exitcode(status)}) "
            "without an outcome: it probably ran out of memory"
        ) from None
    error = outcome.get("error")
    if error == "cpu":
        raise ScriptError(_CPU.format(limits.cpu_seconds))
    if error == "memory":
        raise ScriptError(
            f"the script ran out of memory (it may use {limits.memory_bytes // 2**20} MB)"
        )
    if error is not None:
        raise ScriptError(str(error))
    return ScriptOutcome(dict(outcome["updates"]), outcome.get("result"))


_CPU = "the script used more than {:g} s of CPU time and was stopped"
