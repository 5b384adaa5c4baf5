"""What a worker process remembers between steps: its handlers' pace, the steps it ended."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from bpm.engine.config import EngineConfig


class Pace:
    """How many steps fit in one batch, from the handlers' recent speed (per process)."""

    def __init__(self) -> None:
        self.seconds: float | None = None  # moving average of one handler's duration

    def observe(self, seconds: float) -> None:
        self.seconds = seconds if self.seconds is None else 0.8 * self.seconds + 0.2 * seconds

    def batch(self, config: EngineConfig) -> int:
        size = config.batch_size
        if size <= 1 or self.seconds is None:
            return 1
        fit = int(config.batch_window.total_seconds() / max(self.seconds, 1e-6))
        return max(1, min(size, fit))


class Finished:
    """Steps this process saw end for good: a later message for one needs no database."""

    def __init__(self, size: int = 20_000) -> None:
        self._ids: OrderedDict[str, None] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def add(self, token_ids: Sequence[str]) -> None:
        with self._lock:
            for token_id in token_ids:
                self._ids[token_id] = None
            while len(self._ids) > self._size:
                self._ids.popitem(last=False)

    def __contains__(self, token_id: object) -> bool:
        with self._lock:
            return token_id in self._ids
