"""Token and instance states and the only legal token transitions (DESIGN section 4)."""

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


class BlockKind(StrEnum):
    """Why a token waits: every ``Waiting`` token carries one of these."""

    USER_TASK = "user_task"
    TIMER = "timer"
    RETRY_BACKOFF = "retry_backoff"
    EXTERNAL_TASK = "external_task"
    JOIN = "join"
    MESSAGE = "message"


T = TokenState

TRANSITIONS: dict[TokenState, frozenset[TokenState]] = {
    T.CREATED: frozenset({T.READY}),
    T.READY: frozenset({T.EXECUTING, T.WAITING, T.COMPLETED, T.TERMINATED}),
    T.EXECUTING: frozenset({T.COMPLETED, T.WAITING, T.FAILED, T.TERMINATED}),
    T.WAITING: frozenset({T.READY, T.COMPLETED, T.TERMINATED}),
    T.FAILED: frozenset({T.READY, T.TERMINATED}),
    T.COMPLETED: frozenset(),
    T.TERMINATED: frozenset(),
}

LIVE_TOKEN_STATES = frozenset({T.CREATED, T.READY, T.EXECUTING, T.WAITING, T.FAILED})
FINAL_INSTANCE_STATES = frozenset(
    {InstanceState.COMPLETED, InstanceState.TERMINATED, InstanceState.FAILED}
)


def check_transition(token_id: str, current: TokenState, target: TokenState) -> None:
    """Raise :class:`IllegalTransition` unless ``current -> target`` is in the table."""
    if target not in TRANSITIONS[current]:
        raise IllegalTransition(
            f"token {token_id}: {current.value} -> {target.value} is not a legal transition"
        )
