"""Where an engine operation gets its transaction, and when "after commit" happens.

By default the engine owns its transactions: each operation begins one on a pooled
connection and commits it, and work that must wait for the commit (publishing Ready steps
to the broker) runs right after. A web framework can instead lend the engine its own
connection and transaction (Django's ``transaction.atomic()``, a Flask-SQLAlchemy
session): the operation then runs in a savepoint of the caller's transaction, and the
after-commit work waits for the *caller's* commit, and is dropped if it rolls back.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol

from sqlalchemy import Connection, Engine


class TransactionSource(Protocol):
    """Hands out the transactions of engine operations."""

    def begin(self) -> AbstractContextManager[Connection]:
        """A transaction (or a savepoint of an outer one) that commits when the block ends
        without an exception, and rolls back otherwise."""
        ...

    def after_commit(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` once the outermost transaction has committed; never if it rolls back.

        Called after :meth:`begin`'s block has ended."""
        ...


class OwnTransactions:
    """The default: one transaction per operation on a pooled connection of ``db``.

    A thread may hold one connection across several operations (:meth:`hold`), which spares
    the pool's checkout and pre-ping between the claim, the finish and the next step.
    """

    def __init__(self, db: Engine) -> None:
        self.db = db
        self._held = threading.local()

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        held: Connection | None = getattr(self._held, "conn", None)
        if held is None:
            with self.db.begin() as conn:
                yield conn
        else:
            with held.begin():
                yield held

    def after_commit(self, fn: Callable[[], None]) -> None:
        fn()  # our transactions are outermost: the block that just ended committed

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Run this thread's transactions on one pooled connection until the block ends.

        The connection is idle (no transaction open) between operations, e.g. while a
        handler runs. Re-entrant: an inner block keeps the outer connection.
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
