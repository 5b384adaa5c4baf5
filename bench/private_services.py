"""PostgreSQL and Redis that a fault test (or the soak run) starts for itself, to kill them.

:class:`PrivatePostgres` is a cluster of its own (``initdb`` into a temporary directory,
``pg_ctl`` on a free port); ``crash()`` stops it with ``-m immediate`` (no checkpoint, no
goodbye to clients: what a power cut does to the server process) and ``start()`` brings it
back on the same port, replaying its WAL. :class:`PrivateRedis` is a ``redis-server``
without persistence: ``crash()`` is ``kill -9`` and ``start()`` brings it back empty.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import redis

from bench.support import wait_for


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pg_bin(name: str) -> str:
    """A PostgreSQL server binary (``initdb``, ``pg_ctl``), newest installed version first."""
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)
    path = found[0] if found else shutil.which(name)
    if path is None:
        raise RuntimeError(f"{name} not found: install the PostgreSQL server package")
    return path


def _as_postgres() -> Callable[[], None] | None:
    """PostgreSQL refuses to run as root: drop to the ``postgres`` user then."""
    if os.geteuid() != 0:
        return None
    user = pwd.getpwnam("postgres")

    def demote() -> None:
        os.setgid(user.pw_gid)
        os.setuid(user.pw_uid)

    return demote


class PrivatePostgres:
    """A PostgreSQL cluster in a temporary directory, on a free port (see module doc)."""

    def __init__(self, port: int | None = None) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="bpm-faults-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "postgres.log"
        self.port = port or free_port()
        self._demote = _as_postgres()
        if self._demote is not None:
            user = pwd.getpwnam("postgres")
            os.chown(self.root, user.pw_uid, user.pw_gid)
        self._run(
            pg_bin("initdb"),
            "-D",
            str(self.data),
            "-U",
            "root",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
        )

    def _run(self, *args: str) -> None:
        done = subprocess.run(
            args,
            preexec_fn=self._demote,  # only drops privileges before exec
            capture_output=True,
            text=True,
            check=False,
            cwd=self.root,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{args[0]} failed: {done.stdout}\n{done.stderr}")

    def url(self, dbname: str = "bpm", port: int | None = None) -> str:
        """SQLAlchemy URL of a database here (``port``: reach it through a proxy)."""
        return f"postgresql+psycopg://root@127.0.0.1:{port or self.port}/{dbname}"

    def dsn(self, dbname: str = "postgres") -> str:
        return f"postgresql://root@127.0.0.1:{self.port}/{dbname}"

    def start(self) -> None:
        """Start (or restart after :meth:`crash`) on the same port; waits until it answers."""
        # fsync off: the tests kill the server process, never the machine, so what was
        # written to the kernel survives; a durable commit would cost the CI 2 cores' time.
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c full_page_writes=off -c max_connections=200"
        )
        self._run(
            pg_bin("pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.log), "-w",
            "start",
        )  # fmt: skip
        wait_for(self.answers, 30, "PostgreSQL to accept connections")

    def answers(self) -> bool:
        try:
            with psycopg.connect(self.dsn(), connect_timeout=2) as conn:
                conn.execute("SELECT 1")
            return True
        except psycopg.OperationalError:
            return False

    def crash(self) -> None:
        """``pg_ctl stop -m immediate``: every backend dies at once, nothing is flushed."""
        self._run(pg_bin("pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def server_process(self, role: str) -> int:
        """The pid of one of the cluster's own processes, by its title (``walwriter``,
        ``checkpointer``...): a child of the postmaster named ``postgres: <role>``."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                title = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except (OSError, ValueError, IndexError):
                continue  # ended meanwhile
            if ppid == postmaster and title.startswith(f"postgres: {role}"):
                return int(entry.name)
        raise RuntimeError(f"no '{role}' process under postmaster {postmaster}")

    def hold_wal_in_memory(self) -> None:
        """Stop the WAL writer (``SIGSTOP``): an asynchronous commit then stays in the WAL
        buffers in shared memory until a durable commit, a checkpoint or a dirty page's
        write flushes them. :meth:`crash_losing_wal` loses it."""
        os.kill(self.server_process("walwriter"), signal.SIGSTOP)

    def crash_losing_wal(self) -> None:
        """``kill -9`` the held WAL writer: the postmaster takes it for a crash, ends every
        backend at once and recovers from the WAL on disk (``restart_after_crash``), so
        what was only in the WAL buffers is lost, as in a power cut. Waits until the
        cluster answers again."""
        held = self.server_process("walwriter")
        os.kill(held, signal.SIGKILL)

        def recovered() -> bool:
            try:  # a new WAL writer runs once recovery is done
                return self.server_process("walwriter") != held and self.answers()
            except RuntimeError:
                return False

        wait_for(recovered, 60, "PostgreSQL to recover from the crash")

    def execute(self, sql: str, dbname: str = "postgres") -> list[Any]:
        with psycopg.connect(self.dsn(dbname), autocommit=True) as conn:
            cur = conn.execute(sql)
            return cur.fetchall() if cur.description else []

    def close(self) -> None:
        with contextlib.suppress(RuntimeError):
            self._run(pg_bin("pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop")
        shutil.rmtree(self.root, ignore_errors=True)


class PrivateRedis:
    """``redis-server`` on a free port without persistence (see the module docstring)."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.root = Path(tempfile.mkdtemp(prefix="bpm-faults-redis-"))
        self.proc: subprocess.Popen[bytes] | None = None

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self) -> None:
        exe = shutil.which("redis-server")
        if exe is None:
            raise RuntimeError("redis-server not found: install Redis")
        log = open(self.root / "redis.log", "ab")  # noqa: SIM115 - owned by the process
        self.proc = subprocess.Popen(
            [
                exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", str(self.root),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        log.close()
        wait_for(self.answers, 10, "Redis to answer")

    def answers(self) -> bool:
        try:
            return bool(redis.Redis.from_url(self.url(), socket_timeout=1).ping())
        except redis.RedisError:
            return False

    def crash(self) -> None:
        """``kill -9``: every message in the broker is gone with it."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=5)

    def close(self) -> None:
        self.crash()
        shutil.rmtree(self.root, ignore_errors=True)
