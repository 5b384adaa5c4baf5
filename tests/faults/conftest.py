"""Fixtures of the fault tests: a PostgreSQL cluster and a Redis broker of their own (so a
test may crash them), a second Redis as the handlers' ledger (never crashed), real Celery
workers and beat with short leases and sweeps, and an engine in the test process."""

from __future__ import annotations

import contextlib
import os
import signal
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest
import redis

from bench.private_services import PrivatePostgres, PrivateRedis
from bpm import Engine
from bpm.contrib.celery import CeleryPublisher
from bpm.store import db as bpm_db
from bpm.store import migrate
from tests.api.conftest import ApiServer
from tests.e2e.procs import CeleryProcess, start_beat, start_worker
from tests.support import free_port

# Short enough that a lost lease or a lost message is noticed within seconds: the whole
# directory has a CI budget of about three minutes.
FAST = {
    "BPM_DEFAULT_LEASE_SECONDS": "3",
    "BPM_REDISPATCH_AFTER_SECONDS": "1",
    "BPM_BEAT_REDISPATCH_SECONDS": "0.5",
    "BPM_BEAT_RECLAIM_SECONDS": "0.5",
    "BPM_POOL_SIZE": "2",
    "BPM_HANDLERS": "tests.e2e.handlers,tests.faults.handlers",
}


@pytest.fixture(scope="session")
def cluster() -> Iterator[PrivatePostgres]:
    pg = PrivatePostgres(free_port())
    pg.start()
    pg.execute("CREATE DATABASE bpm_template")
    eng = bpm_db.connect(pg.url("bpm_template"))
    migrate.upgrade(eng)
    eng.dispose()
    yield pg
    pg.close()


@dataclass
class Database:
    """One test's database in the private cluster."""

    cluster: PrivatePostgres
    name: str

    @property
    def url(self) -> str:
        return self.cluster.url(self.name)

    def url_via(self, port: int) -> str:
        return self.cluster.url(self.name, port=port)


@pytest.fixture
def pg(cluster: PrivatePostgres) -> Iterator[Database]:
    if not cluster.answers():  # a failed test may have left it down
        cluster.start()
    name = f"bpm_f_{uuid.uuid4().hex[:12]}"
    cluster.execute(f'CREATE DATABASE "{name}" TEMPLATE bpm_template')
    yield Database(cluster, name)
    if not cluster.answers():
        cluster.start()
    cluster.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def broker_server() -> Iterator[PrivateRedis]:
    server = PrivateRedis(free_port())
    server.start()
    yield server
    server.close()


@pytest.fixture
def broker(broker_server: PrivateRedis) -> PrivateRedis:
    if not broker_server.answers():
        broker_server.start()
    return broker_server


@pytest.fixture(scope="session")
def ledger_server() -> Iterator[PrivateRedis]:
    """Where the handlers count their runs: it outlives every fault of a test."""
    server = PrivateRedis(free_port())
    server.start()
    yield server
    server.close()


@pytest.fixture
def ledger(ledger_server: PrivateRedis) -> redis.Redis:
    return redis.Redis.from_url(ledger_server.url(), decode_responses=True)


@pytest.fixture
def queue() -> str:
    return f"bpm-faults-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def tag() -> str:
    return uuid.uuid4().hex


@pytest.fixture
def fault_env(
    pg: Database, broker: PrivateRedis, ledger_server: PrivateRedis, queue: str
) -> dict[str, str]:
    return {
        **FAST,
        "BPM_DATABASE_URL": pg.url,
        "BPM_QUEUE": queue,
        "BPM_BROKER_URL": broker.url(),
        "BPM_TEST_REDIS_URL": ledger_server.url(),
    }


Start = Callable[..., CeleryProcess]
StartMany = Callable[..., list[CeleryProcess]]
T = TypeVar("T")


def together(*starts: Callable[[], T]) -> list[T]:
    """Run the ``starts`` side by side (starting a Celery process takes seconds each)."""
    with ThreadPoolExecutor(len(starts)) as pool:
        return list(pool.map(lambda start: start(), starts))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> object:
    """Keep each phase's report on the test item (the fixtures below read it)."""
    rep = yield
    setattr(item, f"rep_{rep.when}", rep)
    return rep


def dump_logs(request: pytest.FixtureRequest, procs: list[CeleryProcess]) -> None:
    """After a failed test, the end of every process's log (the CI keeps stdout)."""
    rep = getattr(request.node, "rep_call", None)
    if rep is None or not rep.failed:
        return
    for proc in procs:
        print(f"----- {proc.log_path.name} -----\n{proc.log()[-4000:]}")


@pytest.fixture
def workers(
    fault_env: dict[str, str], queue: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[StartMany]:
    """``workers(n, **env)`` starts n worker processes (one child each) side by side and
    returns once all are ready; all are killed at teardown."""
    started: list[CeleryProcess] = []

    def start(n: int = 1, **env: str) -> list[CeleryProcess]:
        with ThreadPoolExecutor(n) as pool:
            new = list(
                pool.map(
                    lambda _: start_worker({**fault_env, **env}, queue, tmp_path, children=1),
                    range(n),
                )
            )
        started.extend(new)
        return new

    yield start
    dump_logs(request, started)
    for proc in started:
        kill(proc)


def kill(proc: CeleryProcess) -> None:
    """``kill -9`` the whole process group (no warm shutdown: nothing here needs one)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.stop()


@pytest.fixture
def beats(
    fault_env: dict[str, str], tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Start]:
    started: list[CeleryProcess] = []

    def start(**env: str) -> CeleryProcess:
        proc = start_beat({**fault_env, **env}, tmp_path)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        kill(proc)


@pytest.fixture
def publisher(broker: PrivateRedis, queue: str) -> Iterator[CeleryPublisher]:
    pub = CeleryPublisher(broker.url(), queue=queue)
    yield pub
    pub.close()


@pytest.fixture
def api(pg: Database, tmp_path: Path) -> Iterator[ApiServer]:
    """A real ``bpm api`` process on the test's database."""
    server = ApiServer(pg.url, log=tmp_path / "api.log").start()
    yield server
    server.kill()


@pytest.fixture
def fault_engine(pg: Database, publisher: CeleryPublisher) -> Iterator[Engine]:
    """The test's own engine: starts instances and reads them, publishing to the queue."""
    eng = Engine(pg.url, dispatcher=publisher)
    yield eng
    eng.close()
