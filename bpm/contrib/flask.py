"""Flask adapter: one :class:`~bpm.Engine` per app, configured from ``app.config``.

>>> from flask import Flask
>>> from bpm.contrib.flask import BPM, current_engine
>>> app = Flask(__name__)
>>> app.config["BPM_DATABASE_URL"] = "postgresql+psycopg://root@127.0.0.1/test"
>>> bpm = BPM(app)            # or BPM(); bpm.init_app(app) in an app factory
>>> # in a view: current_engine().start("order", {"amount": 120})

Publishing to Celery: pass ``dispatcher=workers.dispatch.CeleryDispatcher(...)`` (or any
:class:`bpm.dispatch.Dispatcher`); without one, the beat sweeper publishes new steps.
"""

from __future__ import annotations

from typing import Any

from flask import Flask, current_app

from bpm.dispatch import Dispatcher
from bpm.engine import Engine
from bpm.errors import ConfigurationError

EXTENSION_KEY = "bpm"


class BPM:
    """The Flask extension. Config keys: ``BPM_DATABASE_URL`` (required)."""

    def __init__(self, app: Flask | None = None, *, dispatcher: Dispatcher | None = None):
        self.dispatcher = dispatcher
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        url = app.config.get("BPM_DATABASE_URL")
        if not url:
            raise ConfigurationError(
                "set app.config['BPM_DATABASE_URL'] before BPM(app) / init_app(app)"
            )
        app.extensions[EXTENSION_KEY] = Engine(str(url), dispatcher=self.dispatcher)

    @staticmethod
    def engine(app: Flask) -> Engine:
        found: Any = app.extensions.get(EXTENSION_KEY)
        if not isinstance(found, Engine):
            raise ConfigurationError("this Flask app has no BPM extension: call BPM(app)")
        return found


def current_engine() -> Engine:
    """The engine of the Flask app handling the current request."""
    return BPM.engine(current_app)
