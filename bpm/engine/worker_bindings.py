"""Worker ids belong to API keys: the first key that acts under a worker id owns it.

The REST API asks before every fetch, lock, complete, failure, BPMN error and lock
extension; a worker id owned by another key is refused there, so no key can finish or extend
a task locked under a worker id it does not own. A binding never changes, so callers may
cache what this answers.
"""

from __future__ import annotations

from datetime import datetime

from bpm.engine.core import EngineCore
from bpm.errors import InvalidOperation
from bpm.store import worker_bindings as store

MAX_WORKER_ID = 255


def bind_worker(
    core: EngineCore, worker_id: str, key_id: str, *, now: datetime | None = None
) -> str:
    """Bind ``worker_id`` to ``key_id`` if nobody owns it yet; returns the owning key's id."""
    if not worker_id or len(worker_id) > MAX_WORKER_ID:
        raise InvalidOperation(f"workerId must be 1 to {MAX_WORKER_ID} characters long")
    at = core.now(now)
    with core.tx() as conn:
        return store.bind(conn, worker_id, key_id, at)
