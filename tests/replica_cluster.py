"""A PostgreSQL primary and its streaming replica, started by a test on free ports.

The binaries are the machine's own (``/usr/lib/postgresql/*/bin``, the newest version, or
``BPM_TEST_PG_BIN``). ``initdb`` of a primary (trust authentication on 127.0.0.1, its
socket in the cluster's own directory), ``pg_basebackup -R`` of it into a replica
(``standby.signal`` and ``primary_conninfo`` written by pg_basebackup), both started with
``pg_ctl``. Run as root, every command runs as the ``postgres`` user (initdb refuses root).
Waiting for replication is waiting on LSNs the servers report, with a deadline.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg

DEADLINE = 60.0


def pg_bin() -> Path | None:
    """Where initdb, pg_ctl and pg_basebackup are; None when they are not installed."""
    given = os.environ.get("BPM_TEST_PG_BIN")
    if given:
        return Path(given)
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name))
    return Path(found[-1]) if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_postgres(argv: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


@dataclass(frozen=True)
class Server:
    data: Path
    port: int

    def dsn(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def url(self, dbname: str) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{dbname}"

    def scalar(self, sql: str) -> object:
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            row = conn.execute(sql).fetchone()
            return None if row is None else row[0]


@dataclass(frozen=True)
class Pair:
    primary: Server
    replica: Server

    def _wait(self, what: str, replica_sql: str) -> None:
        lsn = self.primary.scalar("SELECT pg_current_wal_lsn()::text")
        deadline = time.monotonic() + DEADLINE
        while True:
            behind = self.replica.scalar(f"SELECT {replica_sql} < '{lsn}'::pg_lsn")
            if behind is False:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"the replica has not {what} {lsn} in {DEADLINE:.0f} s")
            time.sleep(0.02)  # waiting on another process's replication, not on a clock

    def caught_up(self) -> None:
        """Return once the replica replayed everything the primary wrote until now."""
        self._wait("replayed", "pg_last_wal_replay_lsn()")

    def received(self) -> None:
        """Return once the replica received (not necessarily replayed) all of it."""
        self._wait("received", "pg_last_wal_receive_lsn()")

    def pause_replay(self) -> None:
        self.replica.scalar("SELECT pg_wal_replay_pause()")

    def resume_replay(self) -> None:
        self.replica.scalar("SELECT pg_wal_replay_resume()")


def _run(argv: list[str], log: Path) -> None:
    done = subprocess.run(
        _as_postgres(argv), capture_output=True, text=True, timeout=DEADLINE * 2, check=False
    )
    if done.returncode != 0:
        tail = log.read_text()[-2000:] if log.exists() else ""
        raise RuntimeError(
            f"{' '.join(argv)} failed ({done.returncode}):\n{done.stdout}{done.stderr}{tail}"
        )


def _settings(data: Path, port: int, sockets: Path) -> None:
    with (data / "postgresql.conf").open("a") as conf:
        conf.write(
            f"\nport = {port}\nlisten_addresses = '127.0.0.1'\n"
            f"unix_socket_directories = '{sockets}'\nwal_level = replica\n"
            "max_wal_senders = 4\nshared_buffers = 16MB\nfsync = off\n"
            "max_connections = 40\n"
        )


@contextmanager
def streaming_pair() -> Iterator[Pair]:
    """A primary and its streaming replica, stopped and removed afterwards."""
    bin_dir = pg_bin()
    if bin_dir is None:
        raise RuntimeError("no PostgreSQL binaries under /usr/lib/postgresql/*/bin")
    base = Path(tempfile.mkdtemp(prefix="bpm-replica-"))
    if os.geteuid() == 0:
        shutil.chown(base, "postgres", "postgres")
    os.chmod(base, 0o700)
    primary = Server(base / "primary", _free_port())
    replica = Server(base / "replica", _free_port())
    started: list[Server] = []
    try:
        _run(
            [str(bin_dir / "initdb"), "-D", str(primary.data), "-U", "postgres",
             "--auth=trust", "-E", "UTF8", "--no-sync"],
            base / "initdb.log",
        )  # fmt: skip
        _settings(primary.data, primary.port, base)
        _start(bin_dir, primary, base)
        started.append(primary)
        _run(
            [str(bin_dir / "pg_basebackup"), "-h", "127.0.0.1", "-p", str(primary.port),
             "-U", "postgres", "-D", str(replica.data), "-R", "-X", "stream", "--no-sync"],
            base / "basebackup.log",
        )  # fmt: skip
        _settings(replica.data, replica.port, base)
        _start(bin_dir, replica, base)
        started.append(replica)
        pair = Pair(primary, replica)
        pair.caught_up()
        yield pair
    finally:
        for server in reversed(started):
            subprocess.run(
                _as_postgres(
                    [str(bin_dir / "pg_ctl"), "-D", str(server.data), "-m", "immediate", "stop"]
                ),
                capture_output=True,
                timeout=DEADLINE,
                check=False,
            )
        shutil.rmtree(base, ignore_errors=True)


def _start(bin_dir: Path, server: Server, base: Path) -> None:
    log = base / f"{server.data.name}.log"
    _run(
        [str(bin_dir / "pg_ctl"), "-D", str(server.data), "-l", str(log), "-w", "-t", "60",
         "start"],
        log,
    )  # fmt: skip
