"""Every runtime record, as read from and written to the store. One home for each.

Records are frozen: a change is a new record made by :class:`bpm.runtime.work.InstanceWork`,
which checks the transition table and records the history event. Field names equal the
column names of the record's table (:attr:`TABLE`), so the store maps rows generically.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar

from bpm.runtime.states import (
    FINAL_INSTANCE_STATES,
    BlockKind,
    CompensableState,
    IncidentState,
    InstanceState,
    ScopeKind,
    ScopeState,
    SubscriptionState,
    TaskState,
    TimerState,
    TokenState,
    UserTaskState,
)


@dataclass(frozen=True)
class Token:
    """One visit of the flow to one node. A retry re-runs the same token (``attempt + 1``).

    While ``executing``, ``updated_at`` is the time of the claim (extending a lease does not
    change it): the claim's history event is written with the attempt's outcome.
    """

    TABLE: ClassVar[str] = "token"
    KIND: ClassVar[str] = "token"

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
    listening: str | None = None
    """Where the token stands with the execution listeners a worker runs for it (JSON
    text, :mod:`bpm.runtime.listening`); None for nearly every token."""

    @property
    def token_id(self) -> str:
        return self.id


@dataclass(frozen=True)
class Instance:
    """A running (or finished) process instance. ``variables`` is one JSON document."""

    TABLE: ClassVar[str] = "process_instance"

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
    parent_id: str | None = None
    """The instance whose call activity started this one (None: started on its own)."""
    parent_token_id: str | None = None
    """The token of that call activity, which waits for this instance."""
    root_id: str | None = None
    """The first instance of the call tree (None: this is one); its row is locked by every
    change of any instance of the tree (see :mod:`bpm.engine.unit`)."""
    call_depth: int = 0
    tokens: tuple[Token, ...] = field(default=(), compare=False)
    variable_types: dict[str, str] = field(default_factory=dict)
    """The Camunda type of each variable whose JSON value does not tell it (``Date``,
    ``Long``, ``Json``...), as the REST API received it; see :mod:`bpm.runtime.variable_types`."""
    scopes: tuple[Scope, ...] = field(default=(), compare=False)
    """Its scopes (read by ``Engine.get_instance``; fork scopes left out)."""
    children: tuple[str, ...] = field(default=(), compare=False)
    """Ids of the instances its call activities started (read by ``Engine.get_instance``)."""

    @property
    def tree_root(self) -> str:
        return self.root_id or self.id

    @property
    def ended(self) -> bool:
        return self.state in FINAL_INSTANCE_STATES


@dataclass(frozen=True)
class Scope:
    """A region of an instance with its own tokens and local variables (DESIGN section 4):
    a sub-process, an event sub-process, a multi-instance body or one inner instance, an
    activity's own variables, or a parallel fork (``expected``: how many branch tokens its
    joins still wait for). Scopes nest (``parent_id``; None: the instance, which is the
    process scope). ``token_id`` is the token that opened it and waits for it (none for a
    fork or an event sub-process); ``node_id`` the node it belongs to.
    """

    TABLE: ClassVar[str] = "scope"
    KIND: ClassVar[str] = "scope"

    id: str
    instance_id: str
    kind: ScopeKind
    node_id: str
    state: ScopeState
    created_at: datetime
    parent_id: str | None = None
    token_id: str | None = None
    variables: dict[str, Any] = field(default_factory=dict)
    expected: int | None = None
    loop_counter: int | None = None
    items: list[Any] | None = None
    """A sequential multi-instance body's items, read when its activity is entered."""
    ended_at: datetime | None = None

    @property
    def is_fork(self) -> bool:
        return self.kind is ScopeKind.FORK


@dataclass(frozen=True)
class HistoryEvent:
    """An append-only fact about an instance; ``seq`` is its position in the instance's
    history (1-based; None before it is stored)."""

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

    TABLE: ClassVar[str] = "process_definition"

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
    tenant_id: str | None = None


@dataclass(frozen=True)
class DeploymentRecord:
    """A stored deployment: what was deployed together, when, from where."""

    TABLE: ClassVar[str] = "deployment"

    id: str
    created_at: datetime
    name: str | None = None
    source: str | None = None
    """Camunda's ``deployment-source``: who deployed (``Camunda Modeler``...)."""
    tenant_id: str | None = None


@dataclass(frozen=True)
class DeploymentResource:
    """One file of a deployment, kept as it was given (``data`` None when not read)."""

    TABLE: ClassVar[str] = "deployment_resource"

    id: str
    deployment_id: str
    name: str
    checksum: str
    data: bytes | None = field(default=None, repr=False)


@dataclass(frozen=True)
class UserTask:
    """A task waiting for a person; completing it moves its token on."""

    TABLE: ClassVar[str] = "user_task"
    KIND: ClassVar[str] = "user_task"

    id: str
    instance_id: str
    token_id: str
    node_id: str
    state: UserTaskState
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
    owner: str | None = None
    description: str | None = None
    listening: tuple[dict[str, Any], ...] = field(default=(), compare=False)
    """The task's events whose listeners a worker is still to run, oldest first (each
    ``{"event": ..., "seq": n, ...}``; see :mod:`bpm.engine.task_listeners`)."""


@dataclass(frozen=True)
class ExternalTask:
    """A task that a worker outside the engine fetches, locks and completes over REST.

    The token waits (``Waiting(external_task)``) while the task is open. ``finished_by`` and
    ``finish_kind`` name the worker's last report, so that a repeat is answered OK and
    changes nothing. ``variables`` (fetched tasks only) and ``suspended`` are not columns.
    """

    TABLE: ClassVar[str] = "external_task"
    KIND: ClassVar[str] = "external_task"

    id: str
    instance_id: str
    token_id: str
    definition_id: str
    definition_key: str
    node_id: str
    topic: str
    state: TaskState
    created_at: datetime
    updated_at: datetime
    business_key: str | None = None
    priority: int = 0
    lock_owner: str | None = None
    lock_expires_at: datetime | None = None
    retries: int | None = None
    retry_at: datetime | None = None
    attempt: int = 0
    error_message: str | None = None
    error_details: str | None = None
    finished_by: str | None = None
    finish_kind: str | None = None
    properties: Mapping[str, Any] = field(default_factory=dict)
    worker_id: str | None = None
    """Camunda's ``workerId``: the worker that locked the task last; a failure keeps it,
    only an unlock clears it (``lock_owner`` is the live lock's holder)."""
    variables: dict[str, Any] | None = None
    suspended: bool = False

    def is_locked(self, now: datetime) -> bool:
        """Locked and the lock has not expired yet."""
        return (
            self.state is TaskState.LOCKED
            and self.lock_expires_at is not None
            and self.lock_expires_at >= now
        )


@dataclass(frozen=True)
class Timer:
    """A persisted timer: why a token waits (or when a boundary event triggers).

    ``kind``: ``delay``/``date`` (a timer catch event), ``timeout`` (a boundary timer;
    ``node_id`` is the boundary event), ``retry_backoff`` (the wait before a retry).
    """

    TABLE: ClassVar[str] = "timer"
    KIND: ClassVar[str] = "timer"

    id: str
    instance_id: str
    token_id: str
    node_id: str
    kind: str
    state: TimerState
    fire_at: datetime
    created_at: datetime
    fired_at: datetime | None = None
    repeat_left: int | None = None
    interval_ms: int | None = None


@dataclass(frozen=True)
class Incident:
    """A step that needs an operator: its token is ``failed`` (or its external task out of
    retries) until the incident is retried.

    ``state`` is ``open``, ``resolved`` (retried) or ``deleted`` (its token was ended, e.g.
    the instance was terminated or a timeout interrupted the task).
    """

    TABLE: ClassVar[str] = "incident"
    KIND: ClassVar[str] = "incident"

    id: str
    instance_id: str
    token_id: str
    node_id: str
    type: str
    state: IncidentState
    created_at: datetime
    message: str | None = None
    details: str | None = None
    external_task_id: str | None = None
    resolved_at: datetime | None = None


@dataclass(frozen=True)
class Subscription:
    """A token's wait for a message or a signal (``kind``) called ``name``.

    ``token_id`` is the token that waits: at a catch event or receive task, at an
    event-based gateway (``node_id`` is then the catch event after it), or at the activity
    a boundary event (``node_id``) is attached to; a listener at an event sub-process's
    start event. ``correlation_key`` is the value its correlation key had when it opened.
    """

    TABLE: ClassVar[str] = "event_subscription"
    KIND: ClassVar[str] = "subscription"

    id: str
    instance_id: str
    token_id: str
    node_id: str
    kind: str
    name: str
    state: SubscriptionState
    created_at: datetime
    correlation_key: str | None = None
    definition_id: str | None = None
    consumed_at: datetime | None = None


@dataclass(frozen=True)
class Compensable:
    """A completed activity with something to undo: its compensation handler (the node
    ``handler_node``), or, for a sub-process without one, the compensable activities it
    completed inside (its scope ``inner_scope_id``). ``seq`` is its place in the
    instance's completion order; ``scope_id`` the region it completed in (None: the
    process). ``run_id`` is the compensation scope that took it, ``handler_token_id`` the
    token running its handler. Written in the transaction that completed the activity.
    """

    TABLE: ClassVar[str] = "compensable"
    KIND: ClassVar[str] = "compensation"

    id: str
    instance_id: str
    token_id: str
    node_id: str
    seq: int
    state: CompensableState
    created_at: datetime
    handler_node: str | None = None
    scope_id: str | None = None
    inner_scope_id: str | None = None
    run_id: str | None = None
    handler_token_id: str | None = None
    variables: dict[str, Any] = field(default_factory=dict)
    """The local variables the activity saw when it completed (its sub-process's, its
    multi-instance element...): its handler sees them again."""
    compensated_at: datetime | None = None


#: The work items besides tokens: each has a table, a state and a transition table.
WorkItem = ExternalTask | Timer | UserTask | Incident | Scope | Subscription | Compensable


@dataclass(frozen=True)
class DecisionRequirementsDefinition:
    """A deployed DMN ``<definitions>`` (Camunda's decision requirements definition)."""

    TABLE: ClassVar[str] = "decision_requirements_definition"

    id: str
    key: str
    version: int
    checksum: str
    resource: str
    deployment_id: str
    created_at: datetime
    name: str | None = None
    namespace: str | None = None
    tenant_id: str | None = None


@dataclass(frozen=True)
class DecisionDefinition:
    """A deployed version of one decision of a DMN file."""

    TABLE: ClassVar[str] = "decision_definition"

    id: str
    key: str
    version: int
    checksum: str
    resource: str
    deployment_id: str
    created_at: datetime
    name: str | None = None
    drd_id: str | None = None
    drd_key: str | None = None
    version_tag: str | None = None
    tenant_id: str | None = None


@dataclass(frozen=True)
class DecisionInstance:
    """One evaluated decision, as the history keeps it (inputs, matched rules, outputs)."""

    TABLE: ClassVar[str] = "decision_instance"

    id: str
    definition_id: str
    definition_key: str
    evaluated_at: datetime
    inputs: tuple[Mapping[str, Any], ...]
    outputs: tuple[Mapping[str, Any], ...]
    definition_name: str | None = None
    drd_id: str | None = None
    drd_key: str | None = None
    process_definition_id: str | None = None
    process_definition_key: str | None = None
    process_instance_id: str | None = None
    activity_id: str | None = None
    root_id: str | None = None
    tenant_id: str | None = None
    collect_result: Any = None
