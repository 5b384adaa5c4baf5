"""Every state machine of the runtime in one place (DESIGN section 4).

Tokens, external tasks, timers, user tasks, incidents and scopes are *work items*: each is a typed
record (:mod:`bpm.runtime.records`) whose state changes only through
:meth:`bpm.runtime.work.InstanceWork.move` (or, for the few set-based statements of the store,
a ``WHERE state IN`` built from :func:`sources`), which checks the table below and appends a
history event.
"""

from __future__ import annotations

from enum import StrEnum

from bpm.errors import IllegalTransition


class TokenState(StrEnum):
    CREATED = "created"
    READY = "ready"
    EXECUTING = "executing"
    WAITING = "waiting"
    COMPLETED = "completed"
    FAILED = "failed"
    TERMINATED = "terminated"


class InstanceState(StrEnum):
    ACTIVE = "active"
    SUSPENDED = "suspended"
    COMPLETED = "completed"
    TERMINATED = "terminated"
    FAILED = "failed"
    COMPENSATING = "compensating"  # its completed steps are being undone (the saga)
    COMPENSATED = "compensated"  # ended after undoing its completed steps


class BlockKind(StrEnum):
    """Why a token waits: every ``Waiting`` token carries one of these."""

    USER_TASK = "user_task"
    TIMER = "timer"
    RETRY_BACKOFF = "retry_backoff"
    EXTERNAL_TASK = "external_task"
    JOIN = "join"
    MESSAGE = "message"
    SIGNAL = "signal"
    CONDITION = "condition"  # a conditional catch event (or listener) waits for its condition
    EVENT_GATEWAY = "event_gateway"  # the events after an event-based gateway race
    SCOPE = "scope"  # a sub-process or multi-instance body it opened is running
    CALL_ACTIVITY = "call_activity"  # the instance it called is running


SUBSCRIBED = frozenset({BlockKind.MESSAGE, BlockKind.SIGNAL, BlockKind.CONDITION})
"""Waits on one open subscription (``blocked_id``): cancelled with it, listeners if at an
event sub-process's start."""


class ScopeKind(StrEnum):
    """What opened a scope (DESIGN section 4). The process scope is the instance itself."""

    FORK = "fork"  # a parallel fork: its joins' state (``expected``), no variables
    SUBPROCESS = "subprocess"
    EVENT_SUBPROCESS = "event_subprocess"
    MULTI_INSTANCE = "multi_instance"  # the body: counters and collected outputs
    INNER_INSTANCE = "inner_instance"  # one instance of a multi-instance activity
    ACTIVITY = "activity"  # an activity's own variables (input/output mappings)
    COMPENSATION = "compensation"  # one compensation run: its handlers, newest first


class CompensableState(StrEnum):
    """A completed activity that has something to undo (:mod:`bpm.runtime.compensation`)."""

    RECORDED = "recorded"  # completed; compensable while its scope lives
    QUEUED = "queued"  # taken by a compensation run, waiting for its turn
    RUNNING = "running"  # its compensation handler runs
    COMPENSATED = "compensated"  # undone: never compensated again


class ScopeState(StrEnum):
    ACTIVE = "active"
    COMPLETED = "completed"
    TERMINATED = "terminated"  # interrupted, cancelled, or ended with its instance


class TaskState(StrEnum):
    """An external task: fetched and locked by a worker outside the engine."""

    READY = "ready"
    LOCKED = "locked"
    COMPLETED = "completed"
    FAILED = "failed"  # out of retries: an incident is open
    CANCELLED = "cancelled"


class TimerState(StrEnum):
    PENDING = "pending"
    FIRED = "fired"
    CANCELLED = "cancelled"


class SubscriptionState(StrEnum):
    """A wait for a message or a signal; consumed at most once."""

    OPEN = "open"
    CONSUMED = "consumed"
    CANCELLED = "cancelled"


class UserTaskState(StrEnum):
    OPEN = "open"
    COMPLETED = "completed"
    CANCELLED = "cancelled"


class IncidentState(StrEnum):
    OPEN = "open"
    RESOLVED = "resolved"  # retried by an operator
    DELETED = "deleted"  # its token ended (terminated, interrupted)


_tok, _task = TokenState, TaskState

TRANSITIONS: dict[type[StrEnum], dict[StrEnum, frozenset[StrEnum]]] = {
    TokenState: {
        _tok.CREATED: frozenset({_tok.READY}),
        _tok.READY: frozenset({_tok.EXECUTING, _tok.WAITING, _tok.COMPLETED, _tok.TERMINATED}),
        _tok.EXECUTING: frozenset({_tok.COMPLETED, _tok.WAITING, _tok.FAILED, _tok.TERMINATED}),
        _tok.WAITING: frozenset({_tok.READY, _tok.COMPLETED, _tok.TERMINATED}),
        _tok.FAILED: frozenset({_tok.READY, _tok.TERMINATED}),
        _tok.COMPLETED: frozenset(),
        _tok.TERMINATED: frozenset(),
    },
    TaskState: {
        # ready -> failed: retries set to 0 by an operator opens an incident
        _task.READY: frozenset({_task.LOCKED, _task.FAILED, _task.CANCELLED}),
        # locked -> locked: an expired lock taken by another worker
        _task.LOCKED: frozenset(
            {_task.LOCKED, _task.READY, _task.COMPLETED, _task.FAILED, _task.CANCELLED}
        ),
        _task.FAILED: frozenset({_task.READY, _task.CANCELLED}),
        _task.COMPLETED: frozenset(),
        _task.CANCELLED: frozenset(),
    },
    TimerState: {
        TimerState.PENDING: frozenset({TimerState.FIRED, TimerState.CANCELLED}),
        TimerState.FIRED: frozenset(),
        TimerState.CANCELLED: frozenset(),
    },
    UserTaskState: {
        UserTaskState.OPEN: frozenset({UserTaskState.COMPLETED, UserTaskState.CANCELLED}),
        UserTaskState.COMPLETED: frozenset(),
        UserTaskState.CANCELLED: frozenset(),
    },
    IncidentState: {
        IncidentState.OPEN: frozenset({IncidentState.RESOLVED, IncidentState.DELETED}),
        IncidentState.RESOLVED: frozenset(),
        IncidentState.DELETED: frozenset(),
    },
    SubscriptionState: {
        SubscriptionState.OPEN: frozenset(
            {SubscriptionState.CONSUMED, SubscriptionState.CANCELLED}
        ),
        SubscriptionState.CONSUMED: frozenset(),
        SubscriptionState.CANCELLED: frozenset(),
    },
    InstanceState: {
        InstanceState.ACTIVE: frozenset(
            {
                InstanceState.SUSPENDED,
                InstanceState.COMPLETED,
                InstanceState.TERMINATED,
                InstanceState.FAILED,
                InstanceState.COMPENSATING,
            }
        ),
        InstanceState.SUSPENDED: frozenset(
            {
                InstanceState.ACTIVE,
                InstanceState.COMPLETED,
                InstanceState.TERMINATED,
                InstanceState.FAILED,
                InstanceState.COMPENSATING,
            }
        ),
        # a compensation end event's run that leaves other paths running goes back to active
        InstanceState.COMPENSATING: frozenset(
            {
                InstanceState.COMPENSATED,
                InstanceState.ACTIVE,
                InstanceState.TERMINATED,
                InstanceState.FAILED,
            }
        ),
        InstanceState.COMPLETED: frozenset(),
        InstanceState.TERMINATED: frozenset(),
        InstanceState.FAILED: frozenset(),
        InstanceState.COMPENSATED: frozenset(),
    },
    CompensableState: {
        CompensableState.RECORDED: frozenset({CompensableState.QUEUED}),
        # back to recorded: the run that took it was interrupted before its handler ended
        CompensableState.QUEUED: frozenset({CompensableState.RUNNING, CompensableState.RECORDED}),
        CompensableState.RUNNING: frozenset(
            {CompensableState.COMPENSATED, CompensableState.RECORDED}
        ),
        CompensableState.COMPENSATED: frozenset(),
    },
    ScopeState: {
        ScopeState.ACTIVE: frozenset({ScopeState.COMPLETED, ScopeState.TERMINATED}),
        ScopeState.COMPLETED: frozenset(),
        ScopeState.TERMINATED: frozenset(),
    },
}

LIVE_TOKEN_STATES = frozenset({_tok.CREATED, _tok.READY, _tok.EXECUTING, _tok.WAITING, _tok.FAILED})
FINAL_INSTANCE_STATES = frozenset(
    {
        InstanceState.COMPLETED,
        InstanceState.TERMINATED,
        InstanceState.FAILED,
        InstanceState.COMPENSATED,
    }
)
RUNNING_INSTANCE_STATES = frozenset({InstanceState.ACTIVE, InstanceState.COMPENSATING})
"""Instances whose steps are handed out (claimed, fetched, timed): a compensating instance
runs its compensation handlers like any other step."""
OPEN_TASK_STATES = frozenset({_task.READY, _task.LOCKED, _task.FAILED})


def check_transition(item: str, current: StrEnum, target: StrEnum) -> None:
    """Raise :class:`IllegalTransition` unless ``current -> target`` is in its table."""
    table = TRANSITIONS[type(current)]
    if target not in table[current]:
        raise IllegalTransition(
            f"{item}: {current.value} -> {target.value} is not a legal transition"
        )


def sources(target: StrEnum) -> frozenset[StrEnum]:
    """Every state from which ``target`` may be reached (for set-based statements)."""
    table = TRANSITIONS[type(target)]
    return frozenset(state for state, targets in table.items() if target in targets)
