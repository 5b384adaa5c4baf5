"""Which Celery workers answer right now (the cockpit's Work page), asked over the broker.

A ``ping`` broadcast waits ``timeout`` seconds for the answers, so the result is kept for
``ttl`` seconds: the page polls every 2 seconds, the broker is asked at most every ``ttl``.
A broker that is down gives an empty answer, never an error page.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

log = logging.getLogger("bpm.api")


class CeleryWorkers:
    def __init__(self, broker_url: str, *, ttl: float = 10.0, timeout: float = 0.5) -> None:
        self.broker_url = broker_url
        self.ttl = ttl
        self.timeout = timeout
        self._lock = threading.Lock()
        self._at = 0.0
        self._names: tuple[str, ...] = ()
        self._app: Any = None

    def names(self) -> tuple[str, ...]:
        """Names of the workers that answered the last ping (``celery@host`` style)."""
        with self._lock:
            if time.monotonic() - self._at < self.ttl:
                return self._names
            self._names = self._ping()
            self._at = time.monotonic()
            return self._names

    def _ping(self) -> tuple[str, ...]:
        try:
            if self._app is None:
                from celery import Celery  # noqa: PLC0415  (optional: bpm-celery[celery])

                self._app = Celery("bpm-cockpit", broker=self.broker_url)
            replies = self._app.control.ping(timeout=self.timeout) or []
        except Exception:  # the broker is down or unreachable: nothing answers
            log.warning("pinging Celery workers on the broker failed", exc_info=True)
            return ()
        return tuple(sorted(name for reply in replies for name in reply))
