"""What every family of engine operations shares: the database, settings, models, clock."""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial

from sqlalchemy import Connection, Engine

from bpm import tracing
from bpm.dispatch import Dispatcher
from bpm.engine.clock import utcnow
from bpm.engine.config import EngineConfig
from bpm.engine.heartbeat import LeaseKeeper
from bpm.engine.pace import Finished, Pace
from bpm.engine.replica import ReadReplica
from bpm.engine.transactions import OwnTransactions, TransactionSource
from bpm.errors import NotFound
from bpm.events import InstanceListeners, instance_listeners
from bpm.handlers import HandlerRegistry
from bpm.model.process import ProcessModel
from bpm.observe import Observers, observers
from bpm.runtime.records import Instance
from bpm.runtime.work import InstanceWork
from bpm.store import definitions as defs_store

log = logging.getLogger("bpm.engine")


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass
class Stats:
    """Counters a worker exposes (dropped finishes are the interesting one)."""

    steps_run: int = 0
    finishes_dropped: int = 0
    claims_lost: int = 0
    commits: int = 0
    # A finish that met a broken database connection and was tried again; one given up
    # because the lease ran out first (the step runs again); steps taken back at once
    # because the process holding them had died.
    finish_retries: int = 0
    finishes_abandoned: int = 0
    dead_holders_reclaimed: int = 0


AfterUnit = Callable[["EngineCore", Sequence[InstanceWork]], None]
"""A hook the unit of work runs after it committed and published, with every instance's
work of the transaction; it runs its own transactions if it needs any."""


@dataclass
class EngineCore:
    db: Engine
    config: EngineConfig
    dispatcher: Dispatcher
    registry: HandlerRegistry
    clock: Callable[[], datetime] = utcnow
    stats: Stats = field(default_factory=Stats)
    # How fast this process's handlers run, and which steps it saw end (execution.py).
    pace: Pace = field(default_factory=Pace)
    finished: Finished = field(default_factory=Finished)
    # Where transactions come from; None: the engine's own, on ``db`` (see transactions.py).
    transactions: TransactionSource | None = None
    # Told after commit about instances an operation ended (see bpm/events.py).
    listeners: InstanceListeners = field(default_factory=lambda: instance_listeners)
    # Told what each step, timer and request did (metrics, logs; see bpm/observe.py).
    observers: Observers = field(default_factory=lambda: observers)
    # Run after each unit of work commits, with what it changed (signal broadcasts, for
    # one): the unit knows no feature that acts after it (bpm/engine/unit.py).
    after_unit: list[AfterUnit] = field(default_factory=list)
    # Where the reads that only show data go (bpm/engine/replica.py); None: the primary.
    replica: ReadReplica | None = None
    _models: dict[str, ProcessModel] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Extends the leases of the steps this process runs (bpm/engine/heartbeat.py).
        self.leases = LeaseKeeper(self)
        self._own = OwnTransactions(self.db)
        if self.transactions is None:
            self.transactions = self._own

    def now(self, now: datetime | None = None) -> datetime:
        if now is None:
            return self.clock()
        if now.tzinfo is None:
            raise ValueError("now= must be timezone-aware (UTC)")
        return now

    @contextmanager
    def tx(self) -> Iterator[Connection]:
        """One engine operation = one transaction (or a savepoint of a lent one)."""
        assert self.transactions is not None
        with self.transactions.begin() as conn:
            yield conn
        self.stats.commits += 1

    def owns_transaction(self, conn: Connection) -> bool:
        """The transaction ``conn`` is in is the engine's own and outermost (not a
        savepoint of a lent one): an operation may end it itself, e.g. its COMMIT in the
        round trip of its last writes."""
        return self.transactions is self._own and not conn.in_nested_transaction()

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A connection for a read that only shows data (history, cockpit lists and
        counts): the read replica when one is configured and recent enough, else the
        primary. Never for a read that decides a transition."""
        if self.replica is None:
            with self.db.connect() as conn:
                yield conn
            return
        with self.replica.connect() as conn:
            if conn is not None:
                yield conn
                return
        with self.db.connect() as conn:
            yield conn

    @contextmanager
    def hold_connection(self) -> Iterator[None]:
        """Keep this thread on one pooled connection (only with the engine's own
        transactions): a step is claim -> handler -> finish -> next step, and each would
        otherwise check a connection out of the pool again, with its pre-ping."""
        if self.transactions is self._own:
            with self._own.hold():
                yield
        else:
            yield

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

    def announce_ended(self, instances: Sequence[Instance]) -> None:
        """Tell the listeners about instances this transaction ended, after its commit."""
        assert self.transactions is not None
        for inst in instances:
            self.transactions.after_commit(partial(self.listeners.announce, inst))

    def dispatch(self, token_ids: Sequence[str], trace: tracing.TraceContext | None = None) -> None:
        """Publish after commit; a failing broker only delays (the sweeper republishes).

        With a tracer the messages carry ``trace`` (default: the context current now, the
        span that made the steps Ready), whichever thread publishes them and when."""
        if not token_ids:
            return
        ids = list(token_ids)
        tracer = tracing.tracer()
        if tracer is not None and trace is None:
            trace = tracer.current()
        assert self.transactions is not None
        self.transactions.after_commit(lambda: self._publish(ids, trace))

    def _publish(self, token_ids: list[str], trace: tracing.TraceContext | None) -> None:
        try:
            tracer = tracing.tracer()
            if tracer is None or trace is None:
                self.dispatcher.dispatch(token_ids)
            else:
                with tracer.resume(trace):
                    self.dispatcher.dispatch(token_ids)
        except Exception:  # the broker is outside our transaction: never lose the commit
            log.warning(
                "publishing %d ready steps failed; the sweeper will retry",
                len(token_ids),
                exc_info=True,
            )
