"""The token statements that do not lock the instance: the claim, leases, the sweepers' scans."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, case, exists, literal, select, union_all, update

from bpm.runtime.records import Token
from bpm.runtime.states import RUNNING_INSTANCE_STATES, TokenState
from bpm.store import dialect
from bpm.store import tables as t
from bpm.store.rows import record_of

tk = t.token
pi = t.process_instance
_READY = TokenState.READY.value

# literals: the claim runs pipelined, where a list parameter cannot be expanded
_RUNNING = [literal(s.value) for s in RUNNING_INSTANCE_STATES]
_ACTIVE = exists().where(pi.c.id == tk.c.instance_id, pi.c.state.in_(_RUNNING))
_TAKE = {
    "state": TokenState.EXECUTING.value,
    "attempt": tk.c.attempt + 1,
    "lease_owner": bindparam("owner"),
    "lease_expires_at": bindparam("until", type_=tk.c.lease_expires_at.type),
    "updated_at": bindparam("now", type_=tk.c.updated_at.type),
}
# Ready steps nobody holds right now, oldest first (the partial index ix_token_ready).
_MORE = (
    select(tk.c.id)
    .where(tk.c.state == _READY)
    .order_by(tk.c.updated_at)
    .limit(bindparam("more"))
    .with_for_update(skip_locked=True)
    .subquery("more")
)
# The claim runs once per batch of steps: its statements are built once.
_CLAIM_ONE = (
    update(tk)
    .where(tk.c.id == bindparam("first"), tk.c.state == _READY, _ACTIVE)
    .values(_TAKE)
    .returning(*tk.c)
)
_CLAIM_MORE = (
    update(tk)
    .where(tk.c.id.in_(select(_MORE.c.id)), tk.c.state == _READY, _ACTIVE)
    .values(_TAKE)
    .returning(*tk.c)
)
# The asked step is taken with SKIP LOCKED too: a claim never waits for a row while it
# holds others (two claimers each holding the other's asked step would deadlock). A step
# another claimer holds right now is that claimer's.
_FIRST = (
    select(tk.c.id)
    .where(tk.c.id == bindparam("first"), tk.c.state == _READY)
    .with_for_update(skip_locked=True)
    .subquery("asked")
)
_BOTH = union_all(select(_FIRST.c.id), select(_MORE.c.id)).subquery("both")
_CLAIM_BOTH = (
    update(tk)
    .where(tk.c.id.in_(select(_BOTH.c.id)), tk.c.state == _READY, _ACTIVE)
    .values(_TAKE)
    .returning(*tk.c)
)
# The instances of the steps just claimed (the claim's own rows are visible to the next
# statement of its transaction): sent with the claim, in the same round trip.
_CLAIMED_BY = select(tk.c.instance_id).where(
    tk.c.state == TokenState.EXECUTING.value,
    tk.c.lease_owner == bindparam("owner"),
    tk.c.updated_at == bindparam("now", type_=tk.c.updated_at.type),
)
_INSTANCES = select(pi.c.id, pi.c.variables, pi.c.definition_id, pi.c.business_key).where(
    pi.c.id.in_(_CLAIMED_BY)
)


def claim(
    conn: Connection,
    owner: str,
    until: datetime,
    now: datetime,
    *,
    first: str | None = None,
    more: int = 0,
) -> list[tuple[Token, dict[str, Any], str, str | None]]:
    """``Ready -> Executing`` for ``owner``: the step ``first`` (if still Ready) and up to
    ``more`` other Ready steps nobody holds, all of active instances, in ONE statement.

    A conditional UPDATE (DESIGN section 5): PostgreSQL re-checks ``state = 'ready'`` after
    a concurrent claimer commits, so exactly one claimer wins each step, and ``SKIP
    LOCKED`` lets claimers of "more" pass each other by. Returns each step with its
    instance's variables, definition id and business key. The commit of a claim may be
    asynchronous: losing one in a crash only means the step was never claimed.
    """
    params = {"owner": owner, "until": until, "now": now, "first": first, "more": more}
    if first is not None and more > 0:
        stmt = _CLAIM_BOTH
    elif first is not None:
        stmt = _CLAIM_ONE
    elif more > 0:
        stmt = _CLAIM_MORE
    else:
        return []
    claimed, instances = dialect.run_many(
        conn,
        [*dialect.asynchronous_commit_statement(conn), (stmt, params), (_INSTANCES, params)],
    )[-2:]
    by_id = {r["id"]: r for r in instances}
    out = []
    for row in claimed:
        tok = record_of(Token, row)
        inst = by_id[tok.instance_id]
        out.append(
            (tok, dict(inst["variables"] or {}), inst["definition_id"], inst["business_key"])
        )
    return out


def extend_leases(
    conn: Connection,
    leases: Sequence[tuple[str, str, int, datetime]],
    now: datetime,
    *,
    only_longer: bool = False,
) -> int:
    """Move the expiry of live leases: ``(token id, owner, attempt, until)`` each; returns
    how many were still held. ``only_longer``: never move an expiry earlier (the
    heartbeat: a handler's own longer ``ctx.extend_lease`` may have been written between
    the heartbeat's reading of the lease and this statement)."""
    if not leases:
        return 0
    until = bindparam("until", type_=tk.c.lease_expires_at.type)
    expiry: Any = (
        case((tk.c.lease_expires_at > until, tk.c.lease_expires_at), else_=until)
        if only_longer
        else until
    )
    stmt = (
        update(tk)
        .where(
            tk.c.id == bindparam("tid"),
            tk.c.state == TokenState.EXECUTING.value,
            tk.c.lease_owner == bindparam("owner"),
            tk.c.attempt == bindparam("att"),
            tk.c.lease_expires_at > bindparam("now", type_=tk.c.lease_expires_at.type),
        )
        .values(lease_expires_at=expiry)
    )
    rows = [{"tid": i, "owner": o, "att": a, "until": u, "now": now} for i, o, a, u in leases]
    return int(conn.execute(stmt, rows).rowcount)


def stale_ready(
    conn: Connection, older_than: datetime, limit: int
) -> list[tuple[str, datetime, datetime]]:
    """(id, updated_at, created_at) of Ready tokens of active instances not claimed (nor
    published again) since ``older_than``, the oldest first (lost publishes).

    Locked (``SKIP LOCKED``) until the transaction ends: mark the ones published
    (:func:`touch`) in it, and a second sweeper at the same time skips them instead of
    publishing them twice."""
    q = (
        select(tk.c.id, tk.c.updated_at, tk.c.created_at)
        .join(pi, pi.c.id == tk.c.instance_id)
        .where(
            tk.c.state == _READY,
            tk.c.updated_at <= older_than,
            pi.c.state.in_(_RUNNING),
        )
        .order_by(tk.c.updated_at)
        .limit(limit)
        .with_for_update(of=tk, skip_locked=True)  # rendered on PostgreSQL only
    )
    return [(r.id, r.updated_at, r.created_at) for r in conn.execute(q)]


def touch(conn: Connection, token_ids: list[str], now: datetime) -> None:
    """Mark Ready tokens as just published, so the sweeper waits before it publishes again."""
    if token_ids:
        conn.execute(
            update(tk).where(tk.c.id.in_(token_ids), tk.c.state == _READY).values(updated_at=now)
        )


def expired_leases(conn: Connection, now: datetime, limit: int) -> list[tuple[str, str]]:
    """(instance id, token id) of Executing tokens whose lease has run out."""
    q = (
        select(tk.c.instance_id, tk.c.id)
        .where(tk.c.state == TokenState.EXECUTING.value, tk.c.lease_expires_at < now)
        .order_by(tk.c.lease_expires_at)
        .limit(limit)
    )
    return [(r.instance_id, r.id) for r in conn.execute(q)]


def scope_ids(conn: Connection, token_ids: Sequence[str]) -> dict[str, str | None]:
    """The scope of each token (for the variables a fetched external task sees)."""
    if not token_ids:
        return {}
    q = select(tk.c.id, tk.c.scope_id).where(tk.c.id.in_(list(token_ids)))
    return {r.id: r.scope_id for r in conn.execute(q)}


def leases_held(conn: Connection, leases: Sequence[tuple[str, str, int]]) -> set[str]:
    """Which of ``(token id, owner, attempt)`` are still Executing under that lease."""
    if not leases:
        return set()
    q = select(tk.c.id, tk.c.lease_owner, tk.c.attempt).where(
        tk.c.id.in_([i for i, _, _ in leases]), tk.c.state == TokenState.EXECUTING.value
    )
    wanted = set(leases)
    return {r.id for r in conn.execute(q) if (r.id, r.lease_owner, r.attempt) in wanted}


def holder(conn: Connection, token_id: str) -> tuple[str, str] | None:
    """(instance id, lease owner) of an Executing token, else None."""
    q = select(tk.c.instance_id, tk.c.lease_owner).where(
        tk.c.id == token_id, tk.c.state == TokenState.EXECUTING.value
    )
    row = conn.execute(q).first()
    return (row.instance_id, row.lease_owner) if row is not None and row.lease_owner else None


def held_by(conn: Connection, owner: str) -> list[tuple[str, str]]:
    """(instance id, token id) of every Executing token leased to ``owner``."""
    q = (
        select(tk.c.instance_id, tk.c.id)
        .where(tk.c.state == TokenState.EXECUTING.value, tk.c.lease_owner == owner)
        .order_by(tk.c.instance_id, tk.c.id)
    )
    return [(r.instance_id, r.id) for r in conn.execute(q)]
