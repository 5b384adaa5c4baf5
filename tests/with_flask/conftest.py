"""The Flask shop example on a fresh database per test, and its real Celery workers."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from flask import Flask

from bpm import Engine
from bpm.contrib.celery import CeleryPublisher
from bpm.contrib.flask import BPM
from tests.e2e.conftest import BROKER_URL, publisher, queue
from tests.e2e.procs import CeleryProcess, start_worker

# Fixtures of the e2e tests, used here too.
__all__ = ["publisher", "queue"]

ROOT = Path(__file__).resolve().parents[2]
SHOP = ROOT / "examples" / "flask_shop"
CHECKOUT = ROOT / "examples" / "checkout.bpmn"
if str(SHOP) not in sys.path:
    sys.path.insert(0, str(SHOP))


@pytest.fixture
def shop_app(pg_database_url: str) -> Iterator[Flask]:
    """The shop app on its own database: engine schema (template), shop tables, checkout."""
    from flaskshop import create_app
    from flaskshop.models import db

    app = create_app({"SQLALCHEMY_DATABASE_URI": pg_database_url, "BPM_BROKER_URL": ""})
    with app.app_context():
        db.create_all()
        BPM.engine(app).deploy(CHECKOUT)
        db.session.commit()  # every engine write joins the session, deploying too
    yield app
    with app.app_context():
        BPM.engine(app).close()
        db.engine.dispose()


@pytest.fixture
def shop_engine(shop_app: Flask) -> Engine:
    return BPM.engine(shop_app)


@pytest.fixture
def publishing(shop_engine: Engine, publisher: CeleryPublisher) -> CeleryPublisher:
    """The app's engine publishes to this test's queue."""
    shop_engine.dispatcher = publisher
    return publisher


@pytest.fixture
def shop_worker(
    pg_database_url: str, queue: str, tmp_path: Path
) -> Iterator[Callable[..., CeleryProcess]]:
    """``shop_worker()`` starts a real Celery worker that created the shop app."""
    started: list[CeleryProcess] = []

    def start(**env: str) -> CeleryProcess:
        worker = start_worker(
            {
                "BPM_DATABASE_URL": pg_database_url,
                "BPM_QUEUE": queue,
                "BPM_BROKER_URL": BROKER_URL,
                "BPM_HANDLERS": "flaskshop.worker",
                "BPM_POOL_SIZE": "2",
                "SHOP_DATABASE_URL": pg_database_url,
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
