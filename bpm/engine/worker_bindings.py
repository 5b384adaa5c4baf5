"""Worker bindings: the first key that acted under a worker id, as versions before issue
18 recorded it.

The REST API no longer asks (it namespaces worker ids by key instead, see
:mod:`bpm.api.worker_ids`: a first-use binding let one key squat another's worker id for
good). The table and this call stay for the rows already written; a binding never changes.
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
