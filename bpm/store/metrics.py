"""Reads behind the database gauges of the metrics endpoint (bounded, small working sets).

The other gauges reuse the cockpit's queries (:mod:`bpm.store.cockpit`): external tasks by
topic and open incidents by definition and node.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, func, select

from bpm.store import tables as t


@dataclass(frozen=True)
class Backlog:
    """Ready tokens of one node of one process (every version): the inline queue."""

    definition_key: str
    node_id: str
    count: int
    oldest: datetime | None


def ready_backlog(conn: Connection, limit: int = 1000) -> list[Backlog]:
    """Ready tokens per (process key, node), from the partial index ``ix_token_ready``.

    The process key of each token's instance is a scalar subquery (one primary-key lookup
    per ready token), not a join the planner could run as a scan of every instance."""
    tok, pi = t.token, t.process_instance
    key_of = select(pi.c.definition_key).where(pi.c.id == tok.c.instance_id).scalar_subquery()
    q = (
        select(
            key_of.label("definition_key"),
            tok.c.node_id,
            func.count().label("n"),
            func.min(tok.c.updated_at).label("oldest"),
        )
        .where(tok.c.state == "ready")
        .group_by(key_of, tok.c.node_id)
        .order_by(func.count().desc(), key_of, tok.c.node_id)
        .limit(limit)
    )
    return [Backlog(r.definition_key, r.node_id, int(r.n), r.oldest) for r in conn.execute(q)]
