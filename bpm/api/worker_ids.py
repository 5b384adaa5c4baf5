"""Workers are who they say: a ``workerId`` belongs to one API key.

A key configured with ``workers=w1|w2`` owns those worker ids and may use no other. Any
other worker id belongs to the first key that fetches, locks or reports under it (a row in
``worker_binding``, shared by every API process). Another key acting under an owned worker
id gets 403 before anything is read or changed, so key ``w2`` cannot complete, fail or
extend a task locked by a worker of key ``w1``. Bindings never change, so the answers are
cached (a bounded LRU per process).
"""

from __future__ import annotations

from collections import OrderedDict

from starlette.concurrency import run_in_threadpool

from bpm.api.auth import ApiKey, Principal, forbidden
from bpm.api.errors import ApiError
from bpm.engine import Engine


class WorkerIds:
    """Checks that a caller's key owns the worker id it acts under."""

    def __init__(self, engine: Engine, keys: list[ApiKey], *, cache_size: int = 10_000) -> None:
        self.engine = engine
        self.configured = {w: k.id for k in keys for w in k.workers or ()}
        self.cache_size = cache_size
        self._owners: OrderedDict[str, str] = OrderedDict()

    async def check(self, who: Principal, worker_id: str) -> None:
        """403 unless ``who`` may act as ``worker_id`` (binding it if nobody owns it)."""
        key = who.key
        if key is None:  # the API runs without keys: nobody to tell apart
            return
        owner = await self._owner(worker_id, key)
        if owner != key.id:
            raise _refused(key, worker_id, owner)

    async def _owner(self, worker_id: str, key: ApiKey) -> str:
        if key.workers is not None and worker_id not in key.workers:
            raise _refused(key, worker_id, self.configured.get(worker_id))
        configured = self.configured.get(worker_id)
        if configured is not None:
            return configured
        owner = self._owners.get(worker_id)
        if owner is None:
            owner = await run_in_threadpool(self.engine.bind_worker, worker_id, key.id)
            self._owners[worker_id] = owner
            if len(self._owners) > self.cache_size:
                self._owners.popitem(last=False)
        else:
            self._owners.move_to_end(worker_id)
        return owner


def _refused(key: ApiKey, worker_id: str, owner: str | None) -> ApiError:
    if owner is None:
        return forbidden(
            f"API key '{key.id}' may only act as its configured workers "
            f"({', '.join(sorted(key.workers or ()))}), not as worker '{worker_id}'"
        )
    return forbidden(
        f"API key '{key.id}' may not act as worker '{worker_id}': that worker id belongs to "
        f"API key '{owner}'; give each worker its own worker id (or bind ids to keys with "
        "BPM_API_KEYS=id:secret:workers=w1|w2)"
    )
