"""What the activity instance tree of one instance is built from, read in one snapshot:
the instance, its live tokens, its active scopes (forks too: a token's scope chain runs
through them) and its open incidents (:mod:`bpm.engine.activity_tree`)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, select

from bpm.runtime.records import Incident, Instance, Scope, Token
from bpm.runtime.states import LIVE_TOKEN_STATES, IncidentState, ScopeState
from bpm.store import tables as t
from bpm.store.rows import record_of

_LIVE = sorted(s.value for s in LIVE_TOKEN_STATES)


@dataclass(frozen=True)
class LiveState:
    """The live part of one instance, as one read saw it."""

    instance: Instance
    tokens: tuple[Token, ...]
    scopes: tuple[Scope, ...]
    incidents: tuple[Incident, ...]


def live_state(conn: Connection, instance_id: str) -> LiveState | None:
    """The instance and its live tokens, active scopes and open incidents (None: no such
    instance). Ordered by creation, then id, so the tree built from it is the same on
    every call."""
    row = conn.execute(select(t.process_instance).where(t.process_instance.c.id == instance_id))
    found = row.first()
    if found is None:
        return None
    tok, sc, inc = t.token, t.scope, t.incident
    tokens = conn.execute(
        select(tok)
        .where(tok.c.instance_id == instance_id, tok.c.state.in_(_LIVE))
        .order_by(tok.c.created_at, tok.c.id)
    )
    scopes = conn.execute(
        select(sc)
        .where(sc.c.instance_id == instance_id, sc.c.state == ScopeState.ACTIVE.value)
        .order_by(sc.c.created_at, sc.c.loop_counter, sc.c.id)
    )
    incidents = conn.execute(
        select(inc)
        .where(inc.c.instance_id == instance_id, inc.c.state == IncidentState.OPEN.value)
        .order_by(inc.c.created_at, inc.c.id)
    )
    return LiveState(
        instance=record_of(Instance, found._mapping),
        tokens=tuple(record_of(Token, r._mapping) for r in tokens),
        scopes=tuple(record_of(Scope, r._mapping) for r in scopes),
        incidents=tuple(record_of(Incident, r._mapping) for r in incidents),
    )
