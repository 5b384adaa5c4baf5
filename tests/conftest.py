"""Fixtures: a migrated template PostgreSQL database copied per test, and SQLite files."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from bpm import Engine, EngineConfig
from bpm.store import db as bpm_db
from bpm.store import migrate
from tests.engine_helpers import close_made_engines
from tests.forked import close_zygote
from tests.support import create_database, drop_database, drop_database_later, finish_drops, pg_url

# The test kit's plugin (the bpm fixture). The package's pytest11 entry point loads it
# under this same name, so this is a no-op where it is installed; it loads it in a
# checkout installed before the entry point existed.
pytest_plugins = ["bpm.testing.plugin"]


@pytest.fixture(scope="session")
def pg_template() -> Iterator[str]:
    """A database migrated once per test session; tests get copies of it."""
    name = create_database()
    eng = bpm_db.connect(pg_url(name))
    migrate.upgrade(eng)
    eng.dispose()
    yield name
    drop_database(name)


@pytest.fixture
def pg_database_url(pg_template: str) -> Iterator[str]:
    name = create_database(template=pg_template)
    yield pg_url(name)
    drop_database_later(name)  # off the next test's path (DROP DATABASE waits a checkpoint)


@pytest.fixture
def sqlite_database_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'bpm.db'}"


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file migrated once per test session (per xdist worker); tests get copies of
    it: migrating a file costs a quarter CPU-second and a few dozen fsyncs, copying it none."""
    path = tmp_path_factory.mktemp("sqlite-template") / "bpm.db"
    eng = bpm_db.connect(f"sqlite:///{path}")
    migrate.upgrade(eng)
    eng.dispose()  # the last connection closed: the WAL is checkpointed into the file
    return path


@pytest.fixture(params=["postgresql", "sqlite"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Both backends: the engine tests that apply to the embedded mode run on each."""
    if request.param == "postgresql":
        return str(request.getfixturevalue("pg_database_url"))
    template: Path = request.getfixturevalue("sqlite_template")
    for suffix in ("", "-wal"):  # a WAL left behind holds part of the schema: copy it too
        if Path(f"{template}{suffix}").exists():
            shutil.copyfile(f"{template}{suffix}", tmp_path / f"bpm.db{suffix}")
    return f"sqlite:///{tmp_path / 'bpm.db'}"


@pytest.fixture(autouse=True)
def _close_made_engines() -> Iterator[None]:
    """Every engine ``tests/engine_helpers.make_engine`` made in a test is closed after it."""
    yield
    close_made_engines()


@pytest.fixture
def config() -> EngineConfig:
    return EngineConfig()


@pytest.fixture
def engine(database_url: str, config: EngineConfig) -> Iterator[Engine]:
    eng = Engine(database_url, config=config)
    yield eng
    eng.close()


@pytest.fixture
def pg_engine(pg_database_url: str, config: EngineConfig) -> Iterator[Engine]:
    eng = Engine(pg_database_url, config=config)
    yield eng
    eng.close()


def pytest_sessionfinish(session: pytest.Session) -> None:
    finish_drops()
    close_zygote()


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault("BPM_TEST", "1")
    # An engine built from the environment publishes to BPM_BROKER_URL: a developer's
    # shell must not make the tests publish to their broker. Tests that publish say where.
    os.environ.pop("BPM_BROKER_URL", None)
    os.environ.pop("BPM_QUEUE", None)
    # Under pytest-xdist the controller starts the containers; its workers inherit the
    # environment that points at them.
    if os.environ.get("BPM_TEST_CONTAINERS") == "1" and "PYTEST_XDIST_WORKER" not in os.environ:
        from tests.containers import start_services

        start_services()
