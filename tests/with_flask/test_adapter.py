"""bpm.contrib.flask: configuration, own transactions, the session's transactions, signals."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from flask_sqlalchemy import SQLAlchemy

from bpm import ConfigurationError, Engine, InstanceState
from bpm.contrib.flask import (
    BPM,
    complete_user_task,
    current_engine,
    process_completed,
    start_process,
)
from bpm.errors import VariableError
from bpm.runtime.records import Instance
from tests.engine_helpers import QueueDispatcher, order_process


def test_own_transactions_commit_each_call(pg_database_url: str) -> None:
    app = Flask(__name__)
    app.config["BPM_DATABASE_URL"] = pg_database_url
    q = QueueDispatcher()
    BPM(app, dispatcher=q)
    with app.app_context():
        current_engine().deploy(order_process())
        inst = start_process("order", {"amount": 150}, business_key="web-1")
        assert len(q.published) == 1  # committed and published at once
    check = Engine(pg_database_url)
    assert check.get_instance(inst.id).business_key == "web-1"
    check.close()
    BPM.engine(app).close()


def test_configuration_mistakes_say_what_to_set(tmp_path: Any) -> None:
    with pytest.raises(ConfigurationError, match="BPM_DATABASE_URL"):
        BPM(Flask(__name__))
    app = Flask(__name__)
    with app.app_context(), pytest.raises(ConfigurationError, match="no BPM extension"):
        current_engine()
    lite = Flask(__name__)
    lite.config["SQLALCHEMY_DATABASE_URI"] = f"sqlite:///{tmp_path / 'app.db'}"
    db = SQLAlchemy(lite)
    with pytest.raises(ConfigurationError, match="postgresql\\+psycopg"):
        BPM(lite, db=db)
    assert "bpm" not in lite.extensions  # nothing half set up
    bad = Flask(__name__)
    bad.config.update(BPM_DATABASE_URL="sqlite:///x.db", BPM_HANDLERS="no_such_handlers_module")
    with pytest.raises(ModuleNotFoundError):
        BPM(bad)
    assert "bpm" not in bad.extensions


@pytest.fixture
def session_app(pg_database_url: str) -> Iterator[tuple[Flask, SQLAlchemy, QueueDispatcher]]:
    app = Flask(__name__)
    app.config["SQLALCHEMY_DATABASE_URI"] = pg_database_url
    db = SQLAlchemy(app)
    q = QueueDispatcher()
    BPM(app, db=db, dispatcher=q)
    with app.app_context():
        current_engine().deploy(order_process())
        db.session.commit()
    yield app, db, q
    with app.app_context():
        BPM.engine(app).close()
        db.engine.dispose()


def test_the_session_transaction_decides_and_publishing_waits_for_its_commit(
    session_app: tuple[Flask, SQLAlchemy, QueueDispatcher],
) -> None:
    app, db, q = session_app
    engine = BPM.engine(app)
    with app.app_context():
        kept = start_process("order", {"amount": 150}, business_key="kept")
        # A failing engine call inside the same session undoes only its savepoint.
        with pytest.raises(VariableError, match="not JSON"):
            start_process("order", {"bad": object()})
        assert q.published == []
        db.session.commit()
        assert len(q.published) == 1
        start_process("order", {"amount": 150}, business_key="dropped")
        db.session.rollback()
        assert len(q.published) == 1
    assert engine.get_instance(kept.id).state is InstanceState.ACTIVE
    assert engine.instances(business_key="dropped") == []


def test_signals_fire_after_the_session_commits_in_a_fresh_app_context(
    session_app: tuple[Flask, SQLAlchemy, QueueDispatcher],
) -> None:
    from bpm.builder import Process

    app, db, _ = session_app
    engine = BPM.engine(app)
    approval = (
        Process("approval").start("s").user_task("approve").end("e").sequence("s", "approve", "e")
    ).build()
    heard: list[tuple[Instance, int]] = []

    def completed(sender: Flask, instance: Instance, **_: Any) -> None:
        from flask import g

        heard.append((instance, id(g._get_current_object())))

    process_completed.connect(completed, sender=app)
    try:
        with app.app_context():
            engine.deploy(approval)
            inst = start_process("approval")
            db.session.commit()
            (task,) = engine.user_tasks(inst.id)
            complete_user_task(task.id)
            db.session.rollback()
            assert heard == []  # rolled back: never announced
            complete_user_task(task.id, {"ok": True})
            assert heard == []  # not before the commit
            db.session.commit()
            from flask import g

            outer = id(g._get_current_object())
        assert [(i.id, i.state) for i, _ in heard] == [(inst.id, InstanceState.COMPLETED)]
        assert heard[0][1] != outer  # receivers got their own app context
    finally:
        process_completed.disconnect(completed, sender=app)
