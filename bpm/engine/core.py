"""What every family of engine operations shares: the database, settings, models, clock."""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sqlalchemy import Connection, Engine

from bpm.dispatch import Dispatcher
from bpm.engine.config import EngineConfig
from bpm.errors import NotFound
from bpm.handlers import HandlerRegistry
from bpm.model.process import ProcessModel
from bpm.runtime.work import InstanceWork
from bpm.store import definitions as defs_store
from bpm.store import work as work_store

log = logging.getLogger("bpm.engine")


def utcnow() -> datetime:
    return datetime.now(UTC)


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass
class Stats:
    """Counters a worker exposes (dropped finishes are the interesting one)."""

    steps_run: int = 0
    finishes_dropped: int = 0
    claims_lost: int = 0
    commits: int = 0


@dataclass
class EngineCore:
    db: Engine
    config: EngineConfig
    dispatcher: Dispatcher
    registry: HandlerRegistry
    clock: Callable[[], datetime] = utcnow
    stats: Stats = field(default_factory=Stats)
    _models: dict[str, ProcessModel] = field(default_factory=dict)
    # The connection this thread holds across transactions (see hold_connection).
    _held: threading.local = field(default_factory=threading.local, repr=False)

    def now(self, now: datetime | None = None) -> datetime:
        if now is None:
            return self.clock()
        if now.tzinfo is None:
            raise ValueError("now= must be timezone-aware (UTC)")
        return now

    @contextmanager
    def tx(self) -> Iterator[Connection]:
        """One engine operation = one transaction."""
        held: Connection | None = getattr(self._held, "conn", None)
        if held is None:
            with self.db.begin() as conn:
                yield conn
        else:
            with held.begin():
                yield held
        self.stats.commits += 1

    @contextmanager
    def hold_connection(self) -> Iterator[None]:
        """Run this thread's transactions on one pooled connection until the block ends.

        A step is claim -> handler -> finish (-> next inline step...): without this, each of
        those transactions checks a connection out of the pool again, paying the pool's
        pre-ping round trip every time. The connection is idle (no transaction open) while
        a handler runs. Re-entrant: an inner block keeps the outer connection.
        """
        if getattr(self._held, "conn", None) is not None:
            yield
            return
        with self.db.connect() as conn:
            self._held.conn = conn
            try:
                yield
            finally:
                self._held.conn = None

    def model(self, conn: Connection, definition_id: str) -> ProcessModel:
        """The compiled model of a definition (cached: definitions never change)."""
        model = self._models.get(definition_id)
        if model is None:
            data = defs_store.model_json(conn, definition_id)
            if data is None:
                raise NotFound(f"process definition {definition_id} does not exist")
            model = ProcessModel.from_dict(data)
            self._models[definition_id] = model
        return model

    def load(self, conn: Connection, instance_id: str, now: datetime) -> InstanceWork:
        return work_store.load_work(
            conn, instance_id, now, max_variable_bytes=self.config.max_variable_bytes
        )

    def flush(self, conn: Connection, work: InstanceWork) -> None:
        work_store.flush_work(conn, work)

    def dispatch(self, token_ids: Sequence[str]) -> None:
        """Publish after commit; a failing broker only delays (the sweeper republishes)."""
        if not token_ids:
            return
        try:
            self.dispatcher.dispatch(list(token_ids))
        except Exception:  # the broker is outside our transaction: never lose the commit
            log.warning(
                "publishing %d ready steps failed; the sweeper will retry",
                len(token_ids),
                exc_info=True,
            )
