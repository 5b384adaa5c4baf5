"""Runtime values as read from and written to the store: instances, tokens, scopes, events."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bpm.runtime.states import BlockKind, InstanceState, TokenState


@dataclass(frozen=True)
class Token:
    """One visit of the flow to one node. A retry re-runs the same token (``attempt + 1``)."""

    id: str
    instance_id: str
    node_id: str
    state: TokenState
    created_at: datetime
    updated_at: datetime
    scope_id: str | None = None
    parent_id: str | None = None
    blocked_kind: BlockKind | None = None
    blocked_id: str | None = None
    attempt: int = 0
    lease_owner: str | None = None
    lease_expires_at: datetime | None = None
    error: str | None = None


@dataclass(frozen=True)
class Instance:
    """A running (or finished) process instance. ``variables`` is one JSON document."""

    id: str
    definition_id: str
    definition_key: str
    state: InstanceState
    variables: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    business_key: str | None = None
    idempotency_key: str | None = None
    ended_at: datetime | None = None
    tokens: tuple[Token, ...] = field(default=(), compare=False)

    @property
    def ended(self) -> bool:
        return self.state in (
            InstanceState.COMPLETED,
            InstanceState.TERMINATED,
            InstanceState.FAILED,
        )


@dataclass(frozen=True)
class ForkScope:
    """The persisted state of one fork: how many branch tokens the joins still expect."""

    id: str
    instance_id: str
    fork_node_id: str
    expected: int
    created_at: datetime
    parent_id: str | None = None


@dataclass(frozen=True)
class HistoryEvent:
    """An append-only fact about an instance; ``seq`` orders them (None before insert)."""

    instance_id: str
    type: str
    at: datetime
    token_id: str | None = None
    node_id: str | None = None
    from_state: str | None = None
    to_state: str | None = None
    payload: dict[str, Any] = field(default_factory=dict)
    seq: int | None = None


@dataclass(frozen=True)
class ProcessDefinition:
    """A deployed version of a process."""

    id: str
    key: str
    version: int
    checksum: str
    created_at: datetime
    name: str | None = None
    resource: str | None = None
    deployment_id: str | None = None
    version_tag: str | None = None
    suspended: bool = False


@dataclass(frozen=True)
class UserTask:
    """A task waiting for a person; completing it moves its token on."""

    id: str
    instance_id: str
    token_id: str
    node_id: str
    state: str
    created_at: datetime
    name: str | None = None
    assignee: str | None = None
    candidate_groups: tuple[str, ...] = ()
    completed_at: datetime | None = None
    candidate_users: tuple[str, ...] = ()
    due_at: datetime | None = None
    follow_up_at: datetime | None = None
    priority: int = 50
    form_key: str | None = None
    form_ref: dict[str, str] | None = field(default=None, compare=False)
    """Camunda Forms reference: ``key``, ``binding`` (latest, deployment, version), ``version``."""

    @classmethod
    def from_mapping(cls, m: dict[str, Any]) -> UserTask:
        return cls(
            id=m["id"],
            instance_id=m["instance_id"],
            token_id=m["token_id"],
            node_id=m["node_id"],
            state=m["state"],
            created_at=m["created_at"],
            name=m["name"],
            assignee=m["assignee"],
            candidate_groups=tuple(m["candidate_groups"] or ()),
            completed_at=m["completed_at"],
            candidate_users=tuple(m.get("candidate_users") or ()),
            due_at=m.get("due_at"),
            follow_up_at=m.get("follow_up_at"),
            priority=int(m.get("priority") or 50) if m.get("priority") != 0 else 0,
            form_key=m.get("form_key"),
            form_ref=dict(m["form_ref"]) if m.get("form_ref") else None,
        )
