"""Flask adapter: one :class:`~bpm.Engine` per app, configured from ``app.config``.

>>> from flask import Flask
>>> from flask_sqlalchemy import SQLAlchemy
>>> from bpm.contrib.flask import BPM, start_process
>>> app = Flask(__name__)
>>> app.config["SQLALCHEMY_DATABASE_URI"] = "postgresql+psycopg://root@127.0.0.1/test"
>>> db = SQLAlchemy(app)
>>> bpm = BPM(app, db=db)     # or BPM(db=db); bpm.init_app(app) in an app factory
>>> # in a view: start_process("order", {"amount": 120}); db.session.commit()

With ``db=`` the engine works inside the session's transaction (see
:mod:`bpm.contrib.flask.transactions`): the instance exists once ``db.session.commit()``
succeeds and its first steps are published right after. Without ``db=`` every engine call
commits on its own.

Config keys: ``BPM_DATABASE_URL`` (default: the session's database), ``BPM_BROKER_URL`` and
``BPM_QUEUE`` (default: the environment; without a broker nothing publishes and beat's
sweeper finds new steps), ``BPM_HANDLERS`` (modules imported at ``init_app``).

``flask bpm ...`` runs the ``bpm`` command on the app's engine (:mod:`bpm.contrib.flask.cli`).

Signals (blinker, like Flask's): :data:`process_completed` and :data:`process_failed`,
sent with the app as sender and ``instance=`` the ended instance, by the process that
ended it after its commit (usually the Celery worker that ran the last step; create the
app there too, e.g. in a ``BPM_HANDLERS`` module). Receivers run in a fresh app context.
"""

from __future__ import annotations

import importlib
import os
import weakref
from dataclasses import replace
from datetime import datetime
from typing import Any

from blinker import Namespace
from flask import Flask, current_app

from bpm.contrib.flask.cli import EXTENSION_KEY, bpm_command
from bpm.dispatch import Dispatcher
from bpm.engine import Engine, EngineConfig
from bpm.errors import ConfigurationError
from bpm.events import instance_listeners
from bpm.runtime.records import Instance
from bpm.runtime.states import InstanceState

_signals = Namespace()
process_completed = _signals.signal("bpm-process-completed")
process_failed = _signals.signal("bpm-process-failed")

# Apps whose receivers hear about ended instances; weak, so a discarded app is forgotten.
_apps: weakref.WeakSet[Flask] = weakref.WeakSet()


def _send_signals(instance: Instance) -> None:
    signal = {
        InstanceState.COMPLETED: process_completed,
        InstanceState.FAILED: process_failed,
    }.get(instance.state)
    if signal is None:
        return
    for app in list(_apps):
        if signal.receivers:
            with app.app_context():
                signal.send(app, instance=instance)


instance_listeners.subscribe(_send_signals)


class BPM:
    """The Flask extension. ``db``: a Flask-SQLAlchemy ``SQLAlchemy`` whose session
    transactions the engine shares (PostgreSQL through psycopg 3)."""

    def __init__(
        self,
        app: Flask | None = None,
        *,
        db: Any = None,
        dispatcher: Dispatcher | None = None,
    ) -> None:
        self.db = db
        self.dispatcher = dispatcher
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        transactions = None
        url = app.config.get("BPM_DATABASE_URL")
        if self.db is not None:
            from bpm.contrib.flask.transactions import SessionTransactions, check_engine

            with app.app_context():
                db_url = self.db.engine.url
            check_engine(db_url)
            transactions = SessionTransactions(self.db)
            url = url or db_url.render_as_string(hide_password=False)
        if not url:
            raise ConfigurationError(
                "set app.config['BPM_DATABASE_URL'] (or pass db= a Flask-SQLAlchemy "
                "SQLAlchemy) before BPM(app) / init_app(app)"
            )
        for module in _modules(app.config.get("BPM_HANDLERS")):
            importlib.import_module(module)
        config = replace(
            EngineConfig.from_env(),
            broker_url=app.config.get("BPM_BROKER_URL") or os.environ.get("BPM_BROKER_URL") or None,
            queue=app.config.get("BPM_QUEUE") or os.environ.get("BPM_QUEUE") or "bpm",
        )
        app.extensions[EXTENSION_KEY] = Engine(
            str(url), config=config, dispatcher=self.dispatcher, transactions=transactions
        )
        _apps.add(app)
        app.cli.add_command(bpm_command)

    @staticmethod
    def engine(app: Flask) -> Engine:
        found: Any = app.extensions.get(EXTENSION_KEY)
        if not isinstance(found, Engine):
            raise ConfigurationError("this Flask app has no BPM extension: call BPM(app)")
        return found


def _modules(value: Any) -> list[str]:
    if not value:
        return []
    if isinstance(value, str):
        value = value.split(",")
    return [str(m).strip() for m in value if str(m).strip()]


def current_engine() -> Engine:
    """The engine of the Flask app handling the current request."""
    return BPM.engine(current_app)


def start_process(
    key: str,
    variables: dict[str, Any] | None = None,
    *,
    business_key: str | None = None,
    idempotency_key: str | None = None,
    now: datetime | None = None,
) -> Instance:
    """Start the latest version of ``key`` with the current app's engine (in the session's
    transaction with ``BPM(app, db=db)``: commit the session to keep it)."""
    return current_engine().start(
        key, variables, business_key=business_key, idempotency_key=idempotency_key, now=now
    )


def complete_user_task(
    task_id: str, variables: dict[str, Any] | None = None, *, now: datetime | None = None
) -> None:
    """Complete an open user task with the current app's engine (in the session's
    transaction with ``BPM(app, db=db)``)."""
    current_engine().complete_user_task(task_id, variables, now=now)
