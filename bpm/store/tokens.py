"""The token queries that do not lock the instance: the claim, and the sweepers' scans."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, exists, insert, select, update

from bpm.runtime.records import Token
from bpm.runtime.states import InstanceState, TokenState
from bpm.store import tables as t
from bpm.store.rows import token_from_row

# The claim runs once per step: its statements are built once, so each execution skips
# statement construction and cache-key generation (a visible share of a step's CPU).
_CLAIM = (
    update(t.token)
    .where(
        t.token.c.id == bindparam("claim_token"),
        t.token.c.state == TokenState.READY.value,
        exists().where(
            t.process_instance.c.id == t.token.c.instance_id,
            t.process_instance.c.state == InstanceState.ACTIVE.value,
        ),
    )
    .values(
        state=TokenState.EXECUTING.value,
        attempt=t.token.c.attempt + 1,
        lease_owner=bindparam("claim_owner"),
        lease_expires_at=bindparam("claim_until", type_=t.token.c.lease_expires_at.type),
        updated_at=bindparam("claim_now", type_=t.token.c.updated_at.type),
    )
    .returning(*t.token.c)
)
_CLAIMED_INSTANCE = select(
    t.process_instance.c.variables,
    t.process_instance.c.definition_id,
    t.process_instance.c.business_key,
).where(t.process_instance.c.id == bindparam("claim_instance"))
_CLAIM_EVENT = insert(t.history_event)


def claim(
    conn: Connection, token_id: str, owner: str, lease_expires_at: datetime, now: datetime
) -> tuple[Token, dict[str, Any], str, str | None] | None:
    """``Ready -> Executing`` for ``owner`` if the token is still Ready and its instance active.

    One conditional UPDATE (DESIGN section 5): PostgreSQL re-checks ``state = 'ready'`` after
    a concurrent claimer commits, so exactly one claimer wins. Returns the token, the
    instance variables, the definition id and business key, or None when the claim lost.
    """
    if conn.dialect.name == "postgresql":
        from bpm.store.pipeline import claim_pipelined

        return claim_pipelined(conn, token_id, owner, lease_expires_at, now)
    row = conn.execute(
        _CLAIM,
        {
            "claim_token": token_id,
            "claim_owner": owner,
            "claim_until": lease_expires_at,
            "claim_now": now,
        },
    ).first()
    if row is None:
        return None
    tok = token_from_row(row)
    inst = conn.execute(_CLAIMED_INSTANCE, {"claim_instance": tok.instance_id}).one()
    conn.execute(
        _CLAIM_EVENT,
        {
            "instance_id": tok.instance_id,
            "token_id": tok.id,
            "node_id": tok.node_id,
            "type": "token_executing",
            "from_state": TokenState.READY.value,
            "to_state": TokenState.EXECUTING.value,
            "payload": {"attempt": tok.attempt, "worker": owner},
            "at": now,
        },
    )
    return tok, dict(inst.variables or {}), inst.definition_id, inst.business_key


def extend_lease(
    conn: Connection, token_id: str, owner: str, attempt: int, until: datetime, now: datetime
) -> bool:
    res = conn.execute(
        update(t.token)
        .where(
            t.token.c.id == token_id,
            t.token.c.state == TokenState.EXECUTING.value,
            t.token.c.lease_owner == owner,
            t.token.c.attempt == attempt,
            t.token.c.lease_expires_at > now,
        )
        .values(lease_expires_at=until)
    )
    return res.rowcount == 1


def stale_ready(conn: Connection, older_than: datetime, limit: int) -> list[str]:
    """Ready tokens of active instances not claimed since ``older_than`` (lost publishes)."""
    q = (
        select(t.token.c.id)
        .join(t.process_instance, t.process_instance.c.id == t.token.c.instance_id)
        .where(
            t.token.c.state == TokenState.READY.value,
            t.token.c.updated_at < older_than,
            t.process_instance.c.state == InstanceState.ACTIVE.value,
        )
        .order_by(t.token.c.updated_at)
        .limit(limit)
    )
    return [r.id for r in conn.execute(q)]


def touch(conn: Connection, token_ids: list[str], now: datetime) -> None:
    """Mark Ready tokens as just published, so the sweeper waits before it publishes again."""
    if token_ids:
        conn.execute(
            update(t.token)
            .where(t.token.c.id.in_(token_ids), t.token.c.state == TokenState.READY.value)
            .values(updated_at=now)
        )


def expired_leases(conn: Connection, now: datetime, limit: int) -> list[tuple[str, str]]:
    """(instance id, token id) of Executing tokens whose lease has run out."""
    q = (
        select(t.token.c.instance_id, t.token.c.id)
        .where(
            t.token.c.state == TokenState.EXECUTING.value,
            t.token.c.lease_expires_at < now,
        )
        .order_by(t.token.c.lease_expires_at)
        .limit(limit)
    )
    return [(r.instance_id, r.id) for r in conn.execute(q)]
