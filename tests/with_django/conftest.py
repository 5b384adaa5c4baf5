"""Django is configured once per test process, with the shop example's settings, on one
database migrated for the engine (Alembic) and for Django, and shared by these tests."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bpm import Engine
from bpm.contrib.celery import CeleryPublisher
from bpm.dispatch import NullDispatcher
from tests.e2e.conftest import BROKER_URL, publisher, queue
from tests.e2e.procs import CeleryProcess, start_worker
from tests.support import create_database, drop_database, pg_url

# Fixtures of the e2e tests, used here too.
__all__ = ["publisher", "queue"]

ROOT = Path(__file__).resolve().parents[2]
SHOP = ROOT / "examples" / "django_shop"
CHECKOUT = ROOT / "examples" / "checkout.bpmn"


def plain_url(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


@pytest.fixture(scope="session")
def shop_db(pg_template: str) -> Iterator[str]:
    """The database of every Django test (Django is set up once per process): the engine's
    schema from the template, Django's tables from its migrations, checkout deployed."""
    name = create_database(template=pg_template)
    url = pg_url(name)
    saved = {k: os.environ.get(k) for k in ("SHOP_DATABASE_URL", "DJANGO_SETTINGS_MODULE")}
    os.environ["SHOP_DATABASE_URL"] = plain_url(url)
    os.environ["DJANGO_SETTINGS_MODULE"] = "shop.settings"
    if str(SHOP) not in sys.path:
        sys.path.insert(0, str(SHOP))
    import django
    from django.core.management import call_command

    django.setup()
    # Settings are read now; worker processes started later must not inherit these
    # (Celery's Django fix-up would set Django up in every worker it finds them in).
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    call_command("migrate", verbosity=0)
    engine = Engine(url, dispatcher=NullDispatcher())
    engine.deploy(CHECKOUT)
    engine.close()
    yield url
    from django.db import connections

    from bpm.contrib.django import reset_engine

    reset_engine()
    connections.close_all()
    drop_database(name)


@pytest.fixture
def shop_engine(shop_db: str) -> Iterator[Engine]:
    """The adapter's engine (Django's transactions); the test decides where it publishes."""
    from bpm.contrib.django import get_engine

    engine = get_engine()
    before = engine.dispatcher
    yield engine
    engine.dispatcher = before


@pytest.fixture
def publishing(shop_engine: Engine, publisher: CeleryPublisher) -> CeleryPublisher:
    """The adapter's engine publishes to this test's queue."""
    shop_engine.dispatcher = publisher
    return publisher


@pytest.fixture
def shop_worker(shop_db: str, queue: str, tmp_path: Path) -> Iterator[Callable[..., CeleryProcess]]:
    """``shop_worker()`` starts a real Celery worker with Django set up (shop.worker)."""
    started: list[CeleryProcess] = []

    def start(**env: str) -> CeleryProcess:
        worker = start_worker(
            {
                "BPM_DATABASE_URL": shop_db,
                "BPM_QUEUE": queue,
                "BPM_BROKER_URL": BROKER_URL,
                "BPM_HANDLERS": "shop.worker",
                "BPM_POOL_SIZE": "2",
                "DJANGO_SETTINGS_MODULE": "shop.settings",
                "SHOP_DATABASE_URL": plain_url(shop_db),
                "PYTHONPATH": str(SHOP),
                **env,
            },
            queue,
            tmp_path,
        )
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()
