"""Telling the application that an instance ended, once the commit that ended it is done.

The process that makes the change announces it: a Celery worker finishing the last step,
a web request completing a user task, ``bpm timers`` firing a timeout. Listeners run after
the outermost commit (inside a Django ``atomic()`` block: in ``on_commit``), never for a
transaction that rolled back, and an exception in a listener is logged, never raised into
the engine. The Django and Flask adapters turn these announcements into their signals.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import replace

from bpm.runtime.records import Instance
from bpm.runtime.work import InstanceWork

log = logging.getLogger("bpm.events")

InstanceListener = Callable[[Instance], None]


class InstanceListeners:
    """Callables told about every instance that ended (completed, failed, terminated)."""

    def __init__(self) -> None:
        self._listeners: list[InstanceListener] = []
        self._lock = threading.Lock()

    def subscribe(self, listener: InstanceListener) -> Callable[[], None]:
        """Add ``listener`` (once, however often it is subscribed); returns a function
        that removes it again."""
        with self._lock:
            if listener not in self._listeners:
                self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def __bool__(self) -> bool:
        return bool(self._listeners)

    def announce(self, instance: Instance) -> None:
        """Call every listener with the ended instance; a failing listener is logged."""
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(instance)
            except Exception:  # the application's code must not break the engine
                log.exception("an instance listener failed for instance %s", instance.id)


# The process-wide listeners every engine announces to (like the handler registry).
instance_listeners = InstanceListeners()


def ended_by(work: InstanceWork) -> Instance | None:
    """The instance if ``work`` ended it (its final state was set in this transaction)."""
    inst = work.instance
    if not (work.instance_dirty and inst.ended):
        return None
    if not any(e.type == f"instance_{inst.state.value}" for e in work.events):
        return None
    return replace(inst, tokens=())
