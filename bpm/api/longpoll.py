"""Long polling for fetch-and-lock, inside the API process.

One PostgreSQL connection LISTENs on the external-task channel; the engine NOTIFYs a topic
in the same transaction that creates, unlocks or retries a task of it. A pending poll holds
a :class:`Waiter` for its topics and fetches again when woken, when the next lock or retry
expiry of its topics is due, or every ``fallback`` seconds (the safety net while the LISTEN
connection is down, and the only mechanism on SQLite). The number of pending polls is bounded,
and so is each API key's share of them: one key cannot hold every slot.

A notification wakes ONE poll of its topic (and so does a lock or retry expiry, through
one timer per topic and time), the one idle longest (a NOTIFY says "a task of
this topic may be free", not how many). A woken poll that locks a full batch (``maxTasks``)
passes the wake-up on to the next poll, and one that leaves with a wake-up it did not use
(it answered, or its client went away) passes that on too: a burst of new tasks wakes about
``tasks / maxTasks`` polls, never every waiting one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections import Counter
from dataclasses import dataclass, field

import psycopg

from bpm.store.dialect import listen_sql

log = logging.getLogger("bpm.api.longpoll")


@dataclass(eq=False)
class Waiter:
    """One pending long poll: woken when a task of one of its topics may be free.

    ``idle`` is True while it sleeps (False while it fetches): wake-ups go to idle polls
    first."""

    topics: frozenset[str]
    owner: str = ""
    event: asyncio.Event = field(default_factory=asyncio.Event)
    idle: bool = False


class TooManyPolls(Exception):
    """The bound on pending long polls is reached."""


class LongPollHub:
    """Wakes pending polls on NOTIFY; ``dsn`` None (SQLite) means polling only."""

    def __init__(
        self,
        dsn: str | None,
        *,
        channel: str,
        max_pending: int = 1000,
        max_per_owner: int | None = None,
        fallback: float = 15.0,
    ) -> None:
        self.dsn = dsn
        self.channel = channel
        self.max_pending = max_pending
        self.max_per_owner = max_per_owner if max_per_owner is not None else max_pending
        self._per_owner: Counter[str] = Counter()
        self.fallback = fallback if dsn else min(fallback, 0.25)
        self.listening = False
        # insertion-ordered: the poll waiting longest is woken first
        self._waiters: dict[Waiter, None] = {}
        self._task: asyncio.Task[None] | None = None
        # (topic, loop time) -> the timer that wakes one poll of the topic then
        self._timers: dict[tuple[str, float], asyncio.TimerHandle] = {}
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
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self.wake_all()

    def pending_of(self, owner: str) -> int:
        return self._per_owner[owner]

    def register(self, topics: frozenset[str], owner: str = "") -> Waiter:
        """A new pending poll of ``owner`` (an API key id); TooManyPolls over a bound."""
        if len(self._waiters) >= self.max_pending:
            raise TooManyPolls(
                f"{len(self._waiters)} long polls are pending (limit {self.max_pending})"
            )
        if self._per_owner[owner] >= self.max_per_owner:
            raise TooManyPolls(
                f"API key '{owner or 'anonymous'}' holds {self._per_owner[owner]} long polls, "
                f"its share of the pending polls (limit {self.max_per_owner} per key)"
            )
        waiter = Waiter(topics, owner)
        self._waiters[waiter] = None
        self._per_owner[owner] += 1
        return waiter

    def unregister(self, waiter: Waiter) -> None:
        """Forget a poll; a wake-up it did not use goes to the next poll of its topics."""
        if self._waiters.pop(waiter, False) is None:
            self._per_owner[waiter.owner] -= 1
            if self._per_owner[waiter.owner] <= 0:
                del self._per_owner[waiter.owner]
            if waiter.event.is_set():
                self.pass_on(waiter.topics)

    def pass_on(self, topics: frozenset[str]) -> None:
        """Wake one more poll per topic: the caller took a full batch, more may be free."""
        for topic in topics:
            self.wake(topic)

    def wake(self, topic: str, count: int = 1) -> int:
        """Wake up to ``count`` polls of ``topic``, idle ones first, oldest first; returns
        how many were woken. A poll that is fetching right now fetches again afterwards."""
        woken = 0
        for idle_only in (True, False):
            for w in self._waiters:
                if woken >= count:
                    return woken
                if topic in w.topics and not w.event.is_set() and (w.idle or not idle_only):
                    w.event.set()
                    woken += 1
        return woken

    def wake_at(self, topics: frozenset[str], when: float, free_at: float | None = None) -> None:
        """At loop time ``when`` (a lock or retry of these topics expires), wake one poll
        of each topic: the task that comes free then goes to one poll, not to every poll
        that computed the same time. One timer per topic and time: ``free_at`` (the
        database's time the task comes free, as a timestamp) names that time when given,
        since polls that read the clock at different moments compute different ``when``."""
        loop = asyncio.get_running_loop()
        for topic in topics:
            key = (topic, round(when if free_at is None else free_at, 3))
            if key not in self._timers:
                self._timers[key] = loop.call_at(when, self._due, key)

    def _due(self, key: tuple[str, float]) -> None:
        self._timers.pop(key, None)
        self.wake(key[0])

    def wake_all(self) -> None:
        for w in self._waiters:
            w.event.set()

    def max_wait(self) -> float:
        """Longest a waiter may sleep without a wake-up: short while LISTEN is down.

        Jittered (half to all of it): polls that arrived together must not all fetch again
        at the same instant, every ``fallback`` seconds, and stall the requests between."""
        longest = self.fallback if self.listening else min(self.fallback, 0.5)
        return longest * random.uniform(0.5, 1.0)

    async def _listen(self) -> None:
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
