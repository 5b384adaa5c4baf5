"""Batches and their chunks (migration 0016): every statement of :mod:`bpm.engine.batches`.

A chunk is claimed by one conditional ``UPDATE`` (ready, or running under a lease that
expired, and its batch active), which makes the claimer the lease owner for one attempt;
it is finished by another conditional ``UPDATE`` that only matches while that attempt is
still the chunk's, in the transaction that applied the chunk's items. Whoever claimed
since, the database decides: a finish whose lease was taken over matches no row and its
transaction is rolled back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Connection, and_, delete, func, insert, or_, select, update

from bpm.store import tables as t

b = t.batch
c = t.batch_chunk

#: Batch states: ``active`` and ``suspended`` are running batches; ``completed`` (every
#: chunk done) and ``deleted`` (an operator removed it) are history only.
ACTIVE, SUSPENDED, COMPLETED, DELETED = "active", "suspended", "completed", "deleted"
RUNNING_STATES = (ACTIVE, SUSPENDED)
#: Chunk states.
READY, RUNNING, DONE, CANCELLED = "ready", "running", "done", "cancelled"


@dataclass(frozen=True)
class BatchRecord:
    """One batch as stored (see :class:`bpm.engine.batches.Batch` for the meanings)."""

    id: str
    type: str
    state: str
    params: Mapping[str, Any]
    total_items: int
    total_jobs: int
    chunk_size: int
    jobs_per_seed: int
    completed_jobs: int
    failed_jobs: int
    completed_items: int
    failed_items: int
    created_at: datetime
    created_by: str | None = None
    annotation: str | None = None
    tenant_id: str | None = None
    ended_at: datetime | None = None
    running_jobs: int = 0


@dataclass(frozen=True)
class ChunkRecord:
    id: str
    batch_id: str
    seq: int
    items: tuple[str, ...]
    state: str
    attempts: int
    lease_owner: str | None = None
    lease_expires_at: datetime | None = None
    published_at: datetime | None = None
    done_at: datetime | None = None
    failures: Mapping[str, str] = field(default_factory=dict)
    error: str | None = None


@dataclass(frozen=True)
class BatchQuery:
    """Filters of ``/batch`` and ``/history/batch`` (None: any)."""

    batch_id: str | None = None
    type: str | None = None
    suspended: bool | None = None
    tenant_id: str | None = None
    without_tenant: bool = False
    #: None: running and ended; True: ended only; False: running only.
    ended: bool | None = False
    ascending: bool = True
    sort_by: str = "created_at"


def _batch(row: Mapping[Any, Any], running: int = 0) -> BatchRecord:
    return BatchRecord(
        id=row["id"],
        type=row["type"],
        state=row["state"],
        params=dict(row["params"] or {}),
        total_items=row["total_items"],
        total_jobs=row["total_jobs"],
        chunk_size=row["chunk_size"],
        jobs_per_seed=row["jobs_per_seed"],
        completed_jobs=row["completed_jobs"],
        failed_jobs=row["failed_jobs"],
        completed_items=row["completed_items"],
        failed_items=row["failed_items"],
        created_at=row["created_at"],
        created_by=row["created_by"],
        annotation=row["annotation"],
        tenant_id=row["tenant_id"],
        ended_at=row["ended_at"],
        running_jobs=running,
    )


def _chunk(row: Mapping[Any, Any]) -> ChunkRecord:
    return ChunkRecord(
        id=row["id"],
        batch_id=row["batch_id"],
        seq=row["seq"],
        items=tuple(row["items"] or ()),
        state=row["state"],
        attempts=row["attempts"],
        lease_owner=row["lease_owner"],
        lease_expires_at=row["lease_expires_at"],
        published_at=row["published_at"],
        done_at=row["done_at"],
        failures=dict(row["failures"] or {}),
        error=row["error"],
    )


def insert_batch(
    conn: Connection, row: Mapping[str, Any], chunks: Sequence[Mapping[str, Any]]
) -> None:
    conn.execute(insert(b), [dict(row)])
    if chunks:
        conn.execute(insert(c), [dict(x) for x in chunks])


def get(conn: Connection, batch_id: str, *, for_update: bool = False) -> BatchRecord | None:
    stmt = select(b).where(b.c.id == batch_id)
    if for_update:
        stmt = stmt.with_for_update()
    row = conn.execute(stmt).mappings().first()
    return None if row is None else _batch(row, _running(conn, [batch_id]).get(batch_id, 0))


def _running(conn: Connection, ids: Sequence[str]) -> dict[str, int]:
    if not ids:
        return {}
    rows = conn.execute(
        select(c.c.batch_id, func.count())
        .where(c.c.batch_id.in_(list(ids)), c.c.state == RUNNING)
        .group_by(c.c.batch_id)
    )
    return {r[0]: int(r[1]) for r in rows}


def _where(q: BatchQuery) -> list[ColumnElement[bool]]:
    out: list[ColumnElement[bool]] = []
    if q.batch_id is not None:
        out.append(b.c.id == q.batch_id)
    if q.type is not None:
        out.append(b.c.type == q.type)
    if q.suspended is True:
        out.append(b.c.state == SUSPENDED)
    elif q.suspended is False:
        out.append(b.c.state != SUSPENDED)
    if q.tenant_id is not None:
        out.append(b.c.tenant_id == q.tenant_id)
    if q.without_tenant:
        out.append(b.c.tenant_id.is_(None))
    if q.ended is True:
        out.append(b.c.ended_at.is_not(None))
    elif q.ended is False:
        out.append(b.c.ended_at.is_(None))
    return out


_SORTS = {"created_at": b.c.created_at, "ended_at": b.c.ended_at, "id": b.c.id, "type": b.c.type}


def batches(
    conn: Connection, q: BatchQuery, *, offset: int = 0, limit: int | None = None
) -> list[BatchRecord]:
    """Batches matching ``q``, paged in SQL."""
    col = _SORTS.get(q.sort_by, b.c.created_at)
    order = (col, b.c.id) if q.ascending else (col.desc(), b.c.id.desc())
    stmt = select(b).where(*_where(q)).order_by(*order).offset(offset)
    if limit is not None:
        stmt = stmt.limit(limit)
    rows = list(conn.execute(stmt).mappings())
    running = _running(conn, [r["id"] for r in rows])
    return [_batch(r, running.get(r["id"], 0)) for r in rows]


def count(conn: Connection, q: BatchQuery) -> int:
    return int(conn.execute(select(func.count()).select_from(b).where(*_where(q))).scalar() or 0)


def chunks(conn: Connection, batch_id: str) -> list[ChunkRecord]:
    rows = conn.execute(select(c).where(c.c.batch_id == batch_id).order_by(c.c.seq))
    return [_chunk(r) for r in rows.mappings()]


def chunk(conn: Connection, chunk_id: str) -> ChunkRecord | None:
    row = conn.execute(select(c).where(c.c.id == chunk_id)).mappings().first()
    return None if row is None else _chunk(row)


def _claimable(now: datetime) -> ColumnElement[bool]:
    return or_(c.c.state == READY, and_(c.c.state == RUNNING, c.c.lease_expires_at < now))


def claim(
    conn: Connection, chunk_id: str, owner: str, now: datetime, lease: timedelta
) -> ChunkRecord | None:
    """Take ``chunk_id`` for one attempt (None: done, held under a live lease, or its batch
    is not active). One conditional UPDATE: two claimers never both win."""
    active = select(b.c.id).where(b.c.id == c.c.batch_id, b.c.state == ACTIVE).exists()
    row = (
        conn.execute(
            update(c)
            .where(c.c.id == chunk_id, _claimable(now), active)
            .values(
                state=RUNNING,
                lease_owner=owner,
                lease_expires_at=now + lease,
                attempts=c.c.attempts + 1,
            )
            .returning(*c.c)
        )
        .mappings()
        .first()
    )
    return None if row is None else _chunk(row)


def finish(
    conn: Connection,
    chunk_id: str,
    owner: str,
    attempt: int,
    now: datetime,
    failures: Mapping[str, str],
) -> bool:
    """Mark a chunk done, if attempt ``attempt`` of ``owner`` still holds it (False: the
    lease was taken over or the chunk cancelled; the caller rolls back)."""
    done = conn.execute(
        update(c)
        .where(
            c.c.id == chunk_id,
            c.c.state == RUNNING,
            c.c.lease_owner == owner,
            c.c.attempts == attempt,
        )
        .values(state=DONE, done_at=now, failures=dict(failures) or None, lease_expires_at=None)
    )
    return done.rowcount == 1


def count_done(
    conn: Connection, batch_id: str, items_ok: int, items_failed: int, now: datetime
) -> BatchRecord | None:
    """Add a finished chunk to its batch's counters (in the chunk's transaction, last: the
    batch row is locked only for the end of it); the batch completes with its last chunk."""
    conn.execute(
        update(b)
        .where(b.c.id == batch_id)
        .values(
            completed_jobs=b.c.completed_jobs + 1,
            failed_jobs=b.c.failed_jobs + (1 if items_failed else 0),
            completed_items=b.c.completed_items + items_ok,
            failed_items=b.c.failed_items + items_failed,
        )
    )
    conn.execute(
        update(b)
        .where(b.c.id == batch_id, b.c.completed_jobs >= b.c.total_jobs, b.c.ended_at.is_(None))
        .values(state=COMPLETED, ended_at=now)
    )
    return get(conn, batch_id)


def give_up(conn: Connection, chunk_id: str, owner: str, attempt: int, error: str) -> None:
    """A chunk whose run raised (not one item: the chunk itself): back to ready with the
    error kept, so the sweeper offers it again."""
    conn.execute(
        update(c)
        .where(c.c.id == chunk_id, c.c.lease_owner == owner, c.c.attempts == attempt)
        .where(c.c.state == RUNNING)
        .values(state=READY, lease_expires_at=None, error=error[:4000], published_at=None)
    )


def claimable(conn: Connection, now: datetime, limit: int) -> list[str]:
    """Chunks a worker could claim now (active batches), oldest batch first."""
    active = select(b.c.id).where(b.c.id == c.c.batch_id, b.c.state == ACTIVE).exists()
    rows = conn.execute(
        select(c.c.id).where(_claimable(now), active).order_by(c.c.batch_id, c.c.seq).limit(limit)
    )
    return [r[0] for r in rows]


def stalled(conn: Connection, now: datetime, older_than: timedelta, limit: int) -> list[str]:
    """Claimable chunks whose message is older than ``older_than`` (or was never sent),
    locked with SKIP LOCKED so that two sweepers split them; marked sent by the caller in
    the same transaction."""
    active = select(b.c.id).where(b.c.id == c.c.batch_id, b.c.state == ACTIVE).exists()
    rows = conn.execute(
        select(c.c.id)
        .where(
            _claimable(now),
            active,
            or_(c.c.published_at.is_(None), c.c.published_at < now - older_than),
        )
        .order_by(c.c.batch_id, c.c.seq)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return [r[0] for r in rows]


def mark_published(conn: Connection, chunk_ids: Sequence[str], now: datetime) -> None:
    if chunk_ids:
        conn.execute(update(c).where(c.c.id.in_(list(chunk_ids))).values(published_at=now))


def set_state(conn: Connection, batch_id: str, state: str) -> None:
    conn.execute(update(b).where(b.c.id == batch_id).values(state=state))


def end(conn: Connection, batch_id: str, state: str, now: datetime) -> None:
    """End a running batch (``deleted``): its chunks not done yet are cancelled, a chunk
    running now can no longer finish (its finish matches no row)."""
    conn.execute(
        update(c)
        .where(c.c.batch_id == batch_id, c.c.state.in_((READY, RUNNING)))
        .values(state=CANCELLED, lease_expires_at=None)
    )
    conn.execute(update(b).where(b.c.id == batch_id).values(state=state, ended_at=now))


def remove(conn: Connection, batch_id: str) -> None:
    """Delete a batch and its chunks (its history goes with it)."""
    conn.execute(delete(c).where(c.c.batch_id == batch_id))
    conn.execute(delete(b).where(b.c.id == batch_id))


def failures(conn: Connection, batch_id: str) -> list[tuple[int, str, str]]:
    """(chunk seq, item, reason) of every failed item of a batch, in chunk order."""
    rows = conn.execute(
        select(c.c.seq, c.c.failures)
        .where(c.c.batch_id == batch_id, c.c.failures.is_not(None))
        .order_by(c.c.seq)
    )
    out: list[tuple[int, str, str]] = []
    for seq, found in rows:
        for item, reason in (found or {}).items():
            out.append((int(seq), str(item), str(reason)))
    return out
