"""History retention: forget instances that ended long enough ago."""

from __future__ import annotations

from datetime import datetime, timedelta

from bpm.engine.core import EngineCore
from bpm.store import retention as store

DEFAULT_BATCH = 500


def purge_history(
    core: EngineCore,
    older_than: timedelta,
    *,
    now: datetime | None = None,
    batch: int = DEFAULT_BATCH,
) -> int:
    """Delete instances that ended before ``now - older_than``, with their tokens and history.

    Live instances are never touched, whatever their age. Works in batches of one short
    transaction each, so a large backlog never holds locks for long; returns the number of
    instances deleted. Safe to run twice at once (batches skip each other's locked rows).
    """
    if older_than <= timedelta(0):
        raise ValueError("older_than must be a positive duration")
    if batch < 1:
        raise ValueError("batch must be at least 1")
    cutoff = core.now(now) - older_than
    total = 0
    while True:
        with core.tx() as conn:
            ids = store.lock_ended_before(conn, cutoff, batch)
            total += store.delete_instances(conn, ids)
        if len(ids) < batch:
            return total
