"""Long polling for fetch-and-lock, inside the API process.

One PostgreSQL connection LISTENs on the external-task channel; the engine NOTIFYs a topic
in the same transaction that creates, unlocks or retries a task of it. A pending poll holds
a :class:`Waiter` for its topics and fetches again when woken, when the next lock or retry
expiry of its topics is due, or every ``fallback`` seconds (the safety net while the LISTEN
connection is down, and the only mechanism on SQLite). The number of pending polls is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field

log = logging.getLogger("bpm.api.longpoll")


@dataclass(eq=False)
class Waiter:
    """One pending long poll: woken when a task of one of its topics may be free."""

    topics: frozenset[str]
    event: asyncio.Event = field(default_factory=asyncio.Event)


class TooManyPolls(Exception):
    """The bound on pending long polls is reached."""


class LongPollHub:
    """Wakes pending polls on NOTIFY; ``dsn`` None (SQLite) means polling only."""

    def __init__(
        self, dsn: str | None, *, channel: str, max_pending: int = 1000, fallback: float = 5.0
    ) -> None:
        self.dsn = dsn
        self.channel = channel
        self.max_pending = max_pending
        self.fallback = fallback if dsn else min(fallback, 0.25)
        self.listening = False
        self._waiters: set[Waiter] = set()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    @property
    def pending(self) -> int:
        return len(self._waiters)

    async def start(self) -> None:
        if self.dsn is not None and self._task is None:
            self._task = asyncio.create_task(self._listen(), name="bpm-longpoll-listen")
            for _ in range(100):  # serve right away, but prefer to have LISTEN in place
                if self.listening:
                    break
                await asyncio.sleep(0.02)

    async def stop(self) -> None:
        self._stopping = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        self.wake_all()

    def register(self, topics: frozenset[str]) -> Waiter:
        if len(self._waiters) >= self.max_pending:
            raise TooManyPolls(
                f"{len(self._waiters)} long polls are pending (limit {self.max_pending})"
            )
        waiter = Waiter(topics)
        self._waiters.add(waiter)
        return waiter

    def unregister(self, waiter: Waiter) -> None:
        self._waiters.discard(waiter)

    def wake(self, topic: str) -> None:
        for w in self._waiters:
            if topic in w.topics:
                w.event.set()

    def wake_all(self) -> None:
        for w in self._waiters:
            w.event.set()

    def max_wait(self) -> float:
        """Longest a waiter may sleep without a wake-up: short while LISTEN is down."""
        return self.fallback if self.listening else min(self.fallback, 0.5)

    async def _listen(self) -> None:
        import psycopg

        from bpm.store.dialect import listen_sql

        delay = 0.2
        while not self._stopping:
            try:
                conn = await psycopg.AsyncConnection.connect(self.dsn or "", autocommit=True)
                async with conn:
                    await conn.execute(listen_sql(self.channel))
                    self.listening = True
                    delay = 0.2
                    self.wake_all()  # anything created while we were not listening
                    async for note in conn.notifies():
                        self.wake(note.payload)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # database restart, network: reconnect with backoff
                if self.listening:
                    log.warning("long-poll LISTEN connection lost (%s); reconnecting", exc)
            finally:
                self.listening = False
            self.wake_all()
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)
