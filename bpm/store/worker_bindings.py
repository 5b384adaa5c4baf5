"""Worker bindings: which API key a worker id belongs to (one statement each)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, select

from bpm.store import dialect
from bpm.store.tables import worker_binding as wb


def bind(conn: Connection, worker_id: str, key_id: str, now: datetime) -> str:
    """Bind ``worker_id`` to ``key_id`` unless it is bound already; returns its key.

    Two keys racing for the same new worker id: the primary key decides, one wins."""
    values = {"worker_id": worker_id, "key_id": key_id, "bound_at": now}
    if dialect.insert_unless_present(conn, wb, values, key=["worker_id"]):
        return key_id
    owner = conn.execute(select(wb.c.key_id).where(wb.c.worker_id == worker_id)).scalar_one()
    return str(owner)
