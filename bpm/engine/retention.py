"""History retention: forget instances that ended long enough ago.

On PostgreSQL the history is partitioned by month (:mod:`bpm.store.partitions`): a purge
first drops the partitions that hold nothing retention keeps (a file unlink instead of
millions of row deletes), then deletes the ended instances one batch at a time, with what
is left of their rows. It also creates the partitions of the months ahead.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from sqlalchemy.exc import OperationalError

from bpm.engine.core import EngineCore
from bpm.store import partitions
from bpm.store import retention as store

log = logging.getLogger("bpm.engine")

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
    at = core.now(now)
    cutoff = at - older_than
    _partitions(core, at, cutoff)
    total = 0
    while True:
        with core.tx() as conn:
            ids = store.lock_ended_before(conn, cutoff, batch)
            total += store.delete_instances(conn, ids)
        if len(ids) < batch:
            return total


def _partitions(core: EngineCore, now: datetime, cutoff: datetime) -> list[str]:
    """Create the partitions of the months ahead, drop those past ``cutoff`` that hold
    nothing retention keeps; each in a transaction of its own, and a lock that cannot be
    had at once (a long report holding the table) only postpones it to the next purge.
    Returns the partitions dropped."""
    with core.db.connect() as conn:
        if not partitions.partitioned(conn):
            return []
    last = now
    for _ in range(partitions.AHEAD):
        last = partitions.next_month(last)
    dropped: list[str] = []
    try:
        with core.tx() as conn:
            partitions.ensure(conn, now, last)
        with core.tx() as conn:
            names = partitions.droppable(conn, cutoff)
        for name in names:
            with core.tx() as conn:
                partitions.drop(conn, name)
            dropped.append(name)
            log.info("history partition %s dropped (every row older than %s)", name, cutoff)
    except OperationalError:  # lock_timeout: someone holds the table; next purge
        log.warning("history partitions not maintained this time: the table is busy")
    return dropped
