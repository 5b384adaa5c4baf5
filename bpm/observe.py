"""Watching the engine work: typed events, and the observers that receive them.

Metrics, tracing and structured logs hang here, never inside the engine. The engine tells
its observers what happened at a few points of a step's life and of a timer's, and the API
tells them about each request it served::

    claim ─ HandlerStarted ─ handler ─ HandlerFinished ─ finish, commit ─ StepFinished
                                                         (or a late finish: DROPPED)
    reclaimer: LeaseExpired, then StepFinished (retried or failed)
    a message for a step that is no longer Ready: MessageIgnored
    timer waiter / poller, after the commit: TimerFired (with its lateness)

An observer is any object with ``observe(event)``; subscribe it process-wide::

    from bpm.observe import observers
    unsubscribe = observers.subscribe(MyObserver())

Observers are called synchronously in the thread that did the work, so they must be quick
(count, log, hand off); an exception in one is logged and never reaches the engine. With no
observer subscribed the engine builds no event at all. :mod:`bpm.contrib.prometheus` and
:mod:`bpm.structured_logs` are the two observers shipped with the package.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

log = logging.getLogger("bpm.observe")

__all__ = [
    "Event",
    "HandlerFinished",
    "HandlerStarted",
    "LeaseExpired",
    "MessageIgnored",
    "Observer",
    "Observers",
    "RequestServed",
    "StepFinished",
    "StepOutcome",
    "TimerFired",
    "observers",
]


class StepOutcome(StrEnum):
    """How an attempt of an inline step ended, once its transaction committed."""

    COMPLETED = "completed"
    RETRIED = "retried"  # the attempt failed and another attempt will run
    FAILED = "failed"  # the last attempt failed: incident, error boundary, failed instance
    DROPPED = "dropped"  # the lease was no longer ours: the result was not applied


# Events are slotted and frozen: one small object per call, nothing else allocated.


@dataclass(frozen=True, slots=True)
class HandlerStarted:
    """A worker is about to call the handler of a step it holds the lease on."""

    definition: str  # the process key
    node_id: str
    instance_id: str
    token_id: str
    attempt: int
    worker: str
    waited: float  # seconds from the claim (the lease taken) to this start


@dataclass(frozen=True, slots=True)
class HandlerFinished:
    """The handler returned (``error`` None) or raised; nothing is committed yet."""

    definition: str
    node_id: str
    instance_id: str
    token_id: str
    attempt: int
    worker: str
    seconds: float
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True, slots=True)
class StepFinished:
    """An attempt's outcome is committed (or, ``DROPPED``, refused: the lease was lost).

    ``seconds`` runs from the claim to the commit; ``handler_seconds`` is None when no
    handler ran in this process (the reclaimer ends attempts of workers that were lost).
    ``incident``: the id of the incident this failure opened (``FAILED`` without an error
    boundary or another failure action taking over), else None.
    """

    definition: str
    node_id: str
    instance_id: str
    token_id: str
    attempt: int
    worker: str
    outcome: StepOutcome
    seconds: float
    handler_seconds: float | None = None
    error: str | None = None
    incident: str | None = None


@dataclass(frozen=True, slots=True)
class LeaseExpired:
    """The reclaimer found the lease of ``owner`` expired: the attempt counts as failed
    ("worker lost"); a :class:`StepFinished` with the outcome follows."""

    definition: str
    node_id: str
    instance_id: str
    token_id: str
    attempt: int
    owner: str | None


@dataclass(frozen=True, slots=True)
class MessageIgnored:
    """A message asked to run a step that needs nothing more: ``finished_here`` (this
    process saw it end) or ``not_ready`` (another worker holds it, or it moved on)."""

    token_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class TimerFired:
    """A timer fired and its transaction committed; ``lateness`` is seconds after due.

    ``kind``: ``delay``, ``date``, ``timeout``, ``retry_backoff`` or ``start`` (a timer
    start event)."""

    definition: str
    node_id: str
    instance_id: str
    kind: str
    lateness: float


@dataclass(frozen=True, slots=True)
class RequestServed:
    """The API answered a request; ``route`` is the matched path template."""

    method: str
    route: str
    status: int
    seconds: float


Event = (
    HandlerStarted
    | HandlerFinished
    | StepFinished
    | LeaseExpired
    | MessageIgnored
    | TimerFired
    | RequestServed
)


class Observer(Protocol):
    """Receives every event; dispatch on its type (``match event: case StepFinished()``)."""

    def observe(self, event: Event) -> None: ...


class Observers:
    """The observers of a process. Falsy when empty, so the engine skips building events."""

    def __init__(self) -> None:
        # Replaced, never mutated: ``emit`` reads it without taking the lock.
        self._all: tuple[Observer, ...] = ()
        self._lock = threading.Lock()

    def subscribe(self, observer: Observer) -> Callable[[], None]:
        """Add ``observer`` (once, however often it is subscribed); returns a function
        that removes it again."""
        with self._lock:
            if observer not in self._all:
                self._all = (*self._all, observer)

        def unsubscribe() -> None:
            with self._lock:
                self._all = tuple(o for o in self._all if o is not observer)

        return unsubscribe

    def __bool__(self) -> bool:
        return bool(self._all)

    def __len__(self) -> int:
        return len(self._all)

    def emit(self, event: Event) -> None:
        """Give ``event`` to every observer; one that raises is logged and skipped."""
        for observer in self._all:
            try:
                observer.observe(event)
            except Exception:  # an observer's bug must never fail a step
                log.exception("observer %r failed on %s", observer, type(event).__name__)


# The process-wide observers every engine tells (like the handler registry).
observers = Observers()
