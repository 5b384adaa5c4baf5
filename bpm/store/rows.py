"""Turning rows into runtime records."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Row

from bpm.runtime.records import ForkScope, HistoryEvent, Instance, ProcessDefinition, Token
from bpm.runtime.states import BlockKind, InstanceState, TokenState


def token_from_row(r: Row[Any] | Any) -> Token:
    return token_from_mapping(r._mapping)


def token_from_mapping(m: Mapping[Any, Any]) -> Token:
    return Token(
        id=m["id"],
        instance_id=m["instance_id"],
        node_id=m["node_id"],
        state=TokenState(m["state"]),
        created_at=m["created_at"],
        updated_at=m["updated_at"],
        scope_id=m["scope_id"],
        parent_id=m["parent_id"],
        blocked_kind=BlockKind(m["blocked_kind"]) if m["blocked_kind"] else None,
        blocked_id=m["blocked_id"],
        attempt=m["attempt"],
        lease_owner=m["lease_owner"],
        lease_expires_at=m["lease_expires_at"],
        error=m["error"],
    )


def token_values(t: Token) -> dict[str, Any]:
    return {
        "id": t.id,
        "instance_id": t.instance_id,
        "node_id": t.node_id,
        "state": t.state.value,
        "blocked_kind": t.blocked_kind.value if t.blocked_kind else None,
        "blocked_id": t.blocked_id,
        "scope_id": t.scope_id,
        "parent_id": t.parent_id,
        "attempt": t.attempt,
        "lease_owner": t.lease_owner,
        "lease_expires_at": t.lease_expires_at,
        "error": t.error,
        "created_at": t.created_at,
        "updated_at": t.updated_at,
    }


def instance_from_row(r: Row[Any] | Any, tokens: tuple[Token, ...] = ()) -> Instance:
    return instance_from_mapping(r._mapping, tokens)


def instance_from_mapping(m: Mapping[Any, Any], tokens: tuple[Token, ...] = ()) -> Instance:
    return Instance(
        id=m["id"],
        definition_id=m["definition_id"],
        definition_key=m["definition_key"],
        state=InstanceState(m["state"]),
        variables=dict(m["variables"] or {}),
        created_at=m["created_at"],
        updated_at=m["updated_at"],
        business_key=m["business_key"],
        idempotency_key=m["idempotency_key"],
        ended_at=m["ended_at"],
        tokens=tokens,
    )


def scope_from_row(r: Row[Any] | Any) -> ForkScope:
    m = r._mapping
    return ForkScope(
        id=m["id"],
        instance_id=m["instance_id"],
        fork_node_id=m["fork_node_id"],
        expected=m["expected"],
        created_at=m["created_at"],
        parent_id=m["parent_id"],
    )


def event_from_row(r: Row[Any] | Any) -> HistoryEvent:
    m = r._mapping
    return HistoryEvent(
        seq=m["seq"],
        instance_id=m["instance_id"],
        token_id=m["token_id"],
        node_id=m["node_id"],
        type=m["type"],
        from_state=m["from_state"],
        to_state=m["to_state"],
        payload=dict(m["payload"] or {}),
        at=m["at"],
    )


def event_values(e: HistoryEvent) -> dict[str, Any]:
    return {
        "instance_id": e.instance_id,
        "token_id": e.token_id,
        "node_id": e.node_id,
        "type": e.type,
        "from_state": e.from_state,
        "to_state": e.to_state,
        "payload": e.payload,
        "at": e.at,
    }


def definition_from_row(r: Row[Any] | Any) -> ProcessDefinition:
    m = r._mapping
    return ProcessDefinition(
        id=m["id"],
        key=m["key"],
        version=m["version"],
        checksum=m["checksum"],
        created_at=m["created_at"],
        name=m["name"],
        resource=m["resource"],
        deployment_id=m["deployment_id"],
        version_tag=m["version_tag"],
        suspended=bool(m.get("suspended", False)),
    )
