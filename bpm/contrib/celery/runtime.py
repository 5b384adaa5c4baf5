"""The engine of a Celery app's processes: one :class:`Installation` per installed app.

:func:`bpm.contrib.celery.install` puts an :class:`Installation` on the app; tasks, beat's
threads and the metrics reach their process's engine through it (``engine_for(app)``), so
nothing imports the app module. The engine is made on first use, after any fork, from the
installation's settings (or is the engine given to ``install``); a forked pool child gets a
fresh database pool (``worker_process_init``). Steps are published through the app's own
broker (its URL, SSL and transport options).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from celery import Celery
from celery.signals import worker_process_init

from bpm.contrib.celery.publisher import CeleryPublisher
from bpm.contrib.celery.settings import WorkerSettings
from bpm.dispatch import NoBrokerDispatcher
from bpm.engine import Engine
from bpm.errors import ConfigurationError

ATTRIBUTE = "bpm_installation"


@dataclass
class Installation:
    """What :func:`~bpm.contrib.celery.install` attached to one Celery app.

    ``queue``: where run_token messages go and which queue workers consume for the engine.
    ``settings``: where the database is, the handler modules, metrics and logs (from the
    environment unless given). ``given``: an engine the caller made (used as is, except
    that a default engine without a broker publishes through the app's broker).
    """

    app: Celery
    queue: str
    settings: WorkerSettings
    given: Engine | None = None
    _engine: Engine | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def publisher(self) -> CeleryPublisher:
        """The shared publisher of this process for the app's broker and the queue."""
        return CeleryPublisher.for_app(self.app, queue=self.queue)

    def engine(self) -> Engine:
        """This process's engine (made on first use)."""
        engine = self._engine
        if engine is not None:
            return engine
        with self._lock:
            if self._engine is None:
                self._engine = self._make()
            return self._engine

    def _make(self) -> Engine:
        if self.given is None:
            return Engine(self.settings.database_url, dispatcher=self.publisher())
        engine = self.given
        dispatcher = engine.dispatcher
        if isinstance(dispatcher, NoBrokerDispatcher):
            engine.dispatcher = self.publisher()
        elif isinstance(dispatcher, CeleryPublisher) and dispatcher.queue != self.queue:
            raise ConfigurationError(
                f"the engine publishes to queue {dispatcher.queue!r} but install() was given "
                f"queue={self.queue!r}: pass the same queue to both (or leave BPM_QUEUE unset)"
            )
        return engine

    def dispose(self) -> None:
        """Drop pooled connections inherited over a fork."""
        if self._engine is not None:
            self._engine.dispose()
        elif self.given is not None:
            self.given.dispose()


_installations: list[Installation] = []


def installation_of(app: Celery) -> Installation:
    """The app's installation; a clear error for an app :func:`install` never saw."""
    found = getattr(app, ATTRIBUTE, None)
    if not isinstance(found, Installation):
        raise ConfigurationError(
            f"the Celery app {app.main!r} has no engine: call "
            "bpm.contrib.celery.install(app, settings_or_engine) where the app is made"
        )
    return found


def attach(installation: Installation) -> None:
    setattr(installation.app, ATTRIBUTE, installation)
    _installations.append(installation)


def engine_for(app: Celery) -> Engine:
    """This process's engine for ``app`` (created on first use, after any fork)."""
    return installation_of(app).engine()


def settings_of(app: Celery) -> WorkerSettings:
    """The settings ``app`` was installed with."""
    return installation_of(app).settings


@worker_process_init.connect
def _fresh_pool_in_child(**_: Any) -> None:
    """A forked child must not share the parent's database connections."""
    for installation in _installations:
        installation.dispose()
