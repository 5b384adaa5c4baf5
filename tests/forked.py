"""``bpm`` commands as real processes without paying Python's start-up each time.

A test that starts ``bpm api`` as ``python -c "from bpm.cli import main; main()" api ...``
spends about 3.5 CPU-seconds before the server answers, nearly all of it importing (the
engine, FastAPI building its routes and models); the suite starts a hundred such servers.
A *zygote* does the imports once per test process and then forks: each command still runs in
a process of its own (its own pid, environment, working directory, sys.path, stdout and
stderr, exit code and signals, the command's own ``main()`` from its first line), only the
modules are already imported. A forked command costs a few hundredths of a second.

What a fork cannot reproduce, a real ``Popen`` still does: :func:`popen_bpm` falls back to
``subprocess.Popen`` when the zygote cannot serve (``BPM_TEST_NO_FORK=1``, a platform without
``fork``, an environment that changes what is read at import time), and the tests of the
entry point itself (``tests/api/test_api_command.py``, ``tests/test_cli.py``'s real runs)
use ``Popen`` directly.

Protocol (one JSON object a line, over the zygote's stdin and stdout): ``spawn`` (argv, env,
cwd, the stdout and stderr files) answers the child's pid; ``poll`` (pid) answers its exit
code or null. The zygote is the children's parent, so it reaps them; it kills those left
when the test process goes away (its stdin closes).
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Protocol

ROOT = Path(__file__).resolve().parents[1]

#: What the zygote imports before it forks (what ``bpm api`` and ``bpm external-worker``
#: would import first).
PRELOAD = ("bpm.cli", "bpm.api.app", "bpm.worker", "uvicorn", "httpx")

#: What the Celery zygote imports: ``celery -A APP worker|beat`` but the app module, which is
#: imported in each command's process (``workers.app`` reads ``BPM_*`` when imported). A
#: zygote of its own, so that ``bpm`` commands never find Celery imported already.
CELERY_PRELOAD = (
    "bpm.engine",
    "bpm.contrib.celery",
    "celery",
    "celery.bin.celery",
    "celery.apps.worker",
    "celery.apps.beat",
    "celery.worker.consumer",
    "kombu.transport.redis",
    "billiard.pool",
)
PRELOADS = {"bpm": PRELOAD, "celery": CELERY_PRELOAD}

#: Variables read when a module is imported, not when a command runs: a command whose
#: environment sets one of them differently from the zygote's gets a real process.
IMPORT_TIME_ENV = ("PROMETHEUS_MULTIPROC_DIR", "prometheus_multiproc_dir", "PYTHONWARNINGS")

#: Read when Celery's, kombu's and billiard's modules are imported (their module-level
#: ``os.environ`` reads): a Celery command setting one differently gets a real process.
CELERY_IMPORT_TIME_ENV = (
    *IMPORT_TIME_ENV,
    "FORKED_BY_MULTIPROCESSING",
    "MP_LOG",
    "MP_MAIN_FILE",
    "C_BENCH",
    "CELERY_BENCH",
    "C_BENCH_EVERY",
    "C_WNOCONF",
    "C_REMDEBUG",
    "C_FAKEFORK",
    "C_FORCE_ROOT",
    "C_IMPDEBUG",
    "USE_FAST_LOCALS",
    "TIMER_DEBUG",
    "AUTOSCALE_KEEPALIVE",
    "TERM",
    "ITERM_PROFILE",
    "DISABLE_TRACEBACKS",
    "KOMBU_LOG_CONNECTION",
    "KOMBU_LOG_CHANNEL",
    "KOMBU_DISABLE_LIMIT_PROTECTION",
    "PICKLE_PROTOCOL",
    "REMAP_SIGTERM",
    "CELERY_RDB_HOST",
    "CELERY_RDB_PORT",
)


class Process(Protocol):
    """What the tests use of a command's process (``subprocess.Popen`` has it all)."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | Any: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def send_signal(self, sig: int) -> None: ...

    def terminate(self) -> None: ...

    def kill(self) -> None: ...


class ForkedProcess:
    """A command forked by the zygote; its exit code is read through the zygote."""

    def __init__(self, zygote: Zygote, pid: int, args: Sequence[str]) -> None:
        self._zygote = zygote
        self.pid = pid
        self.args = list(args)
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._zygote.poll(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            time.sleep(0.02)
        return code

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:  # as Popen: a process already reaped is not signalled
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class Zygote:
    """The test process's side of one zygote process."""

    def __init__(self, kind: str = "bpm") -> None:
        self.kind = kind
        self.import_time_env = CELERY_IMPORT_TIME_ENV if kind == "celery" else IMPORT_TIME_ENV
        # the zygote imports as a command with none of these set would (Celery's own, e.g.
        # TERM, it imports with as the test process has them)
        env = {k: v for k, v in os.environ.items() if k not in IMPORT_TIME_ENV}
        env["PYTHONPATH"] = str(ROOT)
        self.env = env
        self._lock = threading.Lock()
        # what the zygote itself says (a command's own output goes to the command's files)
        self.log = Path(tempfile.gettempdir(), f"bpm-test-zygote-{kind}-{os.getpid()}.log")
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", f"from tests.forked import serve; serve({kind!r})"],
                env=env,
                cwd=ROOT,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
            )
        ready = self._read()
        if ready.get("ready") is not True:
            self.close()
            raise RuntimeError(f"the zygote did not start: {ready}")

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the zygote exited ({self.proc.poll()})")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            answer = self._read()
        if "error" in answer:
            raise RuntimeError(f"the zygote refused {request['op']}: {answer['error']}")
        return answer

    def spawn(
        self,
        args: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path | str,
        out: str,
        err: str,
        argv0: str = "-c",
        new_session: bool = False,
    ) -> ForkedProcess:
        """Fork ``args`` (``new_session``: in a session and process group of its own, as
        ``Popen(start_new_session=True)``)."""
        request = {"op": "spawn", "args": list(args), "env": dict(env), "cwd": str(cwd)}
        request["new_session"] = new_session
        answer = self._ask({**request, "stdout": out, "stderr": err, "argv0": argv0})
        return ForkedProcess(self, int(answer["pid"]), args)

    def poll(self, pid: int) -> int | None:
        code = self._ask({"op": "poll", "pid": pid})["code"]
        return None if code is None else int(code)

    def cpu(self) -> float:
        """CPU seconds of the zygote and the commands it has reaped so far."""
        return float(self._ask({"op": "cpu"})["cpu"])

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self.proc.stdin.close()  # the zygote kills what it still has, then exits
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc.stdout.close()


_zygotes: dict[str, Zygote] = {}
# Tests start Celery processes side by side from threads (tests/faults' ``together``): two
# first uses must not start two zygotes (the one dropped would take its commands with it).
_zygotes_lock = threading.Lock()


def zygote(kind: str = "bpm") -> Zygote | None:
    """This test process's zygote of ``kind`` ("bpm" commands or "celery" ones; started on
    first use), or None where forking is off."""
    if os.environ.get("BPM_TEST_NO_FORK") == "1" or not hasattr(os, "fork"):
        return None
    with _zygotes_lock:
        zyg = _zygotes.get(kind)
        if zyg is None or zyg.proc.poll() is not None:
            zyg = _zygotes[kind] = Zygote(kind)
        return zyg


def zygote_cpu() -> float:
    """CPU seconds of this process's zygotes and their reaped commands (0 without one): a
    zygote is reaped only at the end, so ``RUSAGE_CHILDREN`` does not count it before."""
    return sum(z.cpu() for z in _zygotes.values() if z.proc.poll() is None)


def close_zygote() -> None:
    """End this process's zygotes (``pytest_sessionfinish``)."""
    while _zygotes:
        _zygotes.popitem()[1].close()


def popen_celery(
    args: Sequence[str], *, env: Mapping[str, str], cwd: Path | str, out: Path | str
) -> Process:
    """``python -m celery ARGS`` in a session of its own, stdout and stderr appended to
    ``out``: forked from the Celery zygote where it can (1.9 of a worker's 2.1 CPU-s from
    start to stop are imports), else a real process."""
    zyg = zygote("celery")
    if zyg is not None and all(env.get(k) == zyg.env.get(k) for k in zyg.import_time_env):
        return zyg.spawn(args, env=env, cwd=cwd, out=str(out), err=str(out), new_session=True)
    with open(out, "ab") as file:  # the process has its own copy of the descriptor
        return subprocess.Popen(
            [sys.executable, "-m", "celery", *args],
            cwd=cwd,
            env=dict(env),
            stdout=file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def popen_bpm(
    args: Sequence[str], *, env: Mapping[str, str], cwd: Path | str, out: IO[bytes] | Path | str
) -> Process:
    """``bpm ARGS`` as its own process, stdout and stderr appended to ``out`` (a path, or
    an open file whose name is a path, e.g. ``os.devnull``): forked from the zygote where it
    can, else a real ``python -c "from bpm.cli import main; main()"``."""
    path = out if isinstance(out, (str, Path)) else out.name
    zyg = zygote()
    if zyg is not None and all(env.get(k) == zyg.env.get(k) for k in IMPORT_TIME_ENV):
        return zyg.spawn(args, env=env, cwd=cwd, out=str(path), err=str(path))
    with open(path, "ab") as file:  # the process has its own copy of the descriptor
        return subprocess.Popen(
            [sys.executable, "-c", "from bpm.cli import main; main()", *args],
            env=dict(env),
            cwd=cwd,
            stdout=file,
            stderr=file,
        )


def run_bpm(
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | str,
    timeout: float,
    argv0: str = "-c",
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run`` of ``bpm ARGS`` (``capture_output=True, text=True``), forked from
    the zygote where it can (``sys.argv[0]`` is ``argv0``), else a real process."""
    zyg = zygote()
    if zyg is None or any(env.get(k) != zyg.env.get(k) for k in IMPORT_TIME_ENV):
        script = f"import sys; sys.argv[0] = {argv0!r}; from bpm.cli import main; main()"
        return subprocess.run(
            [sys.executable, "-c", script, *args],
            env=dict(env),
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    with tempfile.TemporaryDirectory(prefix="bpm-run-") as tmp:
        out, err = Path(tmp, "stdout"), Path(tmp, "stderr")
        proc = zyg.spawn(args, env=env, cwd=cwd, out=str(out), err=str(err), argv0=argv0)
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
        return subprocess.CompletedProcess(
            [argv0, *args], code, out.read_text(errors="replace"), err.read_text(errors="replace")
        )


# --- the zygote's side ---------------------------------------------------------------------


def serve(kind: str = "bpm") -> None:
    """The zygote: import, then fork a command per ``spawn`` until stdin closes."""
    import importlib

    for name in PRELOADS[kind]:
        importlib.import_module(name)
    if threading.active_count() != 1:  # a fork would copy locks another thread holds
        _answer({"ready": False, "threads": [t.name for t in threading.enumerate()]})
        return
    base_path = [p for p in sys.path if p not in ("", str(ROOT))]
    gc.collect()
    gc.freeze()  # the children's collections leave the imported objects' pages shared
    children: dict[int, int | None] = {}
    _answer({"ready": True})
    for line in sys.stdin:
        request = json.loads(line)
        try:
            if request["op"] == "spawn":
                pid = os.fork()
                if pid == 0:
                    _child(request, base_path, kind)  # never returns
                children[pid] = None
                _answer({"pid": pid})
            elif request["op"] == "cpu":
                _answer({"cpu": _cpu_seconds()})
            elif request["op"] == "poll":
                _answer({"code": _reap(children, int(request["pid"]))})
            else:
                _answer({"error": f"unknown op {request['op']!r}"})
        except OSError as exc:
            _answer({"error": repr(exc)})
    for pid, code in children.items():  # the test process went away: so do its commands
        if code is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)


def _answer(answer: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()


def _cpu_seconds() -> float:
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _reap(children: dict[int, int | None], pid: int) -> int | None:
    if children.get(pid) is None:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            children[pid] = os.waitstatus_to_exitcode(status)
    return children[pid]


def _child(request: dict[str, Any], base_path: list[str], kind: str) -> None:
    """In the forked child: become ``python -c ... ARGS`` (or ``python -m celery ARGS``) in
    the request's environment and directory, run the command, exit as the interpreter
    would (atexit, flushed streams)."""
    code: str | int | None = 0
    try:
        if request.get("new_session"):
            os.setsid()
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        for fd, name in ((1, request["stdout"]), (2, request["stderr"])):
            target = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.dup2(target, fd)
            os.close(target)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 (the process's own stdin, kept)
        sys.stdout = open(1, "w", closefd=False, buffering=1)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False, buffering=1)  # noqa: SIM115
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        sys.path[:] = ["", *extra, *base_path]
        if kind == "celery":
            sys.argv = [os.path.join(os.path.dirname(sys.executable), "celery"), *request["args"]]
            from celery.__main__ import main as celery_main

            celery_main()
        sys.argv = [request["argv0"], *request["args"]]
        from rich.console import Console

        from bpm.cli import main

        cli_app = sys.modules["bpm.cli.app"]  # the module (``bpm.cli.app`` is the Typer app)

        # made at import from the environment (COLUMNS, NO_COLOR, TERM): made again from the
        # command's
        Console.__init__(cli_app.console)
        Console.__init__(cli_app.err_console, stderr=True)

        main()
    except SystemExit as exc:
        code = exc.code
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    # Python's own exit: non-daemon threads joined, atexit run, streams flushed.
    sys.exit(code)
