"""What a failed attempt does, for inline and external steps alike: retry, or give up.

An inline step's token is Executing when its attempt fails; an external step's token waits
while its task is locked by a worker. Both kinds count attempts, back off and retry under a
:class:`RetryPolicy` (or, for external tasks, the retries count the worker sends, as in
Camunda), and both end up in :func:`exhausted` when no attempt is left.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from bpm.retry import FailureAction, RetryPolicy
from bpm.runtime.compensation import compensate_instance
from bpm.runtime.hooks import Walk
from bpm.runtime.records import ExternalTask, Token
from bpm.runtime.states import BlockKind, InstanceState, TaskState, TokenState
from bpm.runtime.throwing import catching_boundary, take_error_boundary, throw

__all__ = [
    "IMMEDIATE",
    "Failure",
    "catching_boundary",
    "exhausted",
    "fail_attempt",
    "fail_external",
    "take_error_boundary",
]

IMMEDIATE = "immediate"


@dataclass(frozen=True)
class Failure:
    """One failed attempt: what went wrong, and when."""

    error: str
    failed_at: datetime
    details: str | None = None
    error_code: str | None = None  # a BPMN error code an error boundary may catch
    # What the handler asked for (bpm.errors.StepFailed): no further attempt, the next
    # one after this delay instead of the policy's, this many attempts in all.
    final: bool = False
    delay: timedelta | None = None
    max_attempts: int | None = None


def fail_attempt(walker: Walk, tok: Token, policy: RetryPolicy, failure: Failure) -> None:
    """A failed attempt of an Executing inline token: back off and retry, or give up.

    The next attempt is due at ``max(failed_at, now) + delay``: a handler that failed after a
    long run is scheduled from its failure, not from its start.
    """
    w = walker.work
    w.record(
        "attempt_failed",
        token_id=tok.id,
        node_id=tok.node_id,
        payload={"attempt": tok.attempt, "error": failure.error, "details": failure.details},
    )
    if failure.max_attempts is not None:
        policy = replace(policy, max_attempts=failure.max_attempts)
    if failure.final or not policy.has_attempt_after(tok.attempt):
        exhausted(walker, tok, policy.on_exhausted, failure, attempts=tok.attempt)
        return
    if failure.delay is not None:
        delay = failure.delay
    else:
        delay = policy.delay(tok.attempt, w.instance.id, tok.node_id)
    if delay <= timedelta(0):
        w.transition(
            tok.id,
            TokenState.WAITING,
            blocked=(BlockKind.RETRY_BACKOFF, IMMEDIATE),
            error=failure.error,
        )
        w.transition(tok.id, TokenState.READY)
        w.to_dispatch.append(tok.id)
        return
    fire_at = max(failure.failed_at, w.now) + delay
    timer = w.add_timer(tok, tok.node_id, "retry_backoff", fire_at)
    w.transition(
        tok.id,
        TokenState.WAITING,
        blocked=(BlockKind.RETRY_BACKOFF, timer.id),
        error=failure.error,
    )


def fail_external(
    walker: Walk,
    task: ExternalTask,
    tok: Token,
    failure: Failure,
    *,
    worker_id: str,
    policy: RetryPolicy | None,
    retries: int | None = None,
    retry_timeout: timedelta | None = None,
    lock_expired: bool = False,
) -> None:
    """A worker reports a failed attempt of its locked external task.

    With ``retries`` (Camunda semantics) the task gets that many retries left and is not
    fetchable for ``retry_timeout``; at 0 the model's failure action (if it has a policy)
    decides, else an incident. Without, the model's RetryPolicy decides when there is
    one; otherwise missing retries count as 0, as in Camunda.

    ``lock_expired``: nobody reported; ``worker_id``'s lock ran out (the worker is lost).
    The attempt counts the same, but the worker did not finish it, so a report it makes
    later is refused instead of taken for a repeat of this one.
    """
    w = walker.work
    attempt = task.attempt + 1
    w.record(
        "attempt_failed",
        token_id=tok.id,
        node_id=tok.node_id,
        payload={
            "task": task.id,
            "worker": worker_id,
            "attempt": attempt,
            "error": failure.error,
            "details": failure.details,
        },
    )
    if retries is not None:
        # The worker counts; what running out means is still the model's (the saga).
        action = policy.on_exhausted if policy is not None else FailureAction.INCIDENT
        left, delay = retries, retry_timeout or timedelta(0)
    elif policy is not None:
        more = policy.has_attempt_after(attempt)
        left = policy.max_attempts - attempt if more else 0
        delay = policy.delay(attempt, w.instance.id, task.node_id) if more else timedelta(0)
        action = policy.on_exhausted
    else:
        left, delay, action = 0, timedelta(0), FailureAction.INCIDENT
    reported: dict[str, Any] = {
        "lock_owner": None,
        "lock_expires_at": None,
        "finished_by": None if lock_expired else worker_id,
        "finish_kind": "lock_expired" if lock_expired else "failure",
        "error_message": failure.error,
        "error_details": failure.details,
        "attempt": attempt,
        "updated_at": w.now,
    }
    if left > 0:
        retry_at = w.now + delay if delay > timedelta(0) else None
        w.move(
            task,
            TaskState.READY,
            event="external_task_retry",
            payload={"retries": left, "retry_at": retry_at.isoformat() if retry_at else None},
            retries=left,
            retry_at=retry_at,
            **reported,
        )
        w.notify.add(task.topic)
        return
    w.move(task, TaskState.FAILED, retries=0, retry_at=None, **reported)
    exhausted(walker, tok, action, failure, attempts=attempt, external_task_id=task.id)


def exhausted(
    walker: Walk,
    tok: Token,
    action: FailureAction,
    failure: Failure,
    *,
    attempts: int,
    external_task_id: str | None = None,
) -> None:
    """The last attempt failed: error boundary, incident, or a failed instance.

    An error boundary that catches the error always wins (the error message and code land
    in the variables ``error_message`` / ``error_code``). Without one the action decides:
    ``continue`` leaves the task on its normal outgoing flows with the same variables set
    (a gateway after it can test them, like A3S Flow's ``step_failed``), ``fail`` ends the
    instance ``failed``, ``compensate`` ends every live token and compensates the
    instance (:mod:`bpm.runtime.compensation`), and ``incident`` (the default) waits for
    an operator's ``Engine.retry_incident``: an inline token goes ``failed``; an external
    task is out of retries and its token keeps waiting.
    """
    w = walker.work
    w.record(
        "step_failed",
        token_id=tok.id,
        node_id=tok.node_id,
        payload={
            "error": failure.error,
            "details": failure.details,
            "attempts": attempts,
            "error_code": failure.error_code,
        },
    )
    if throw(walker, tok, failure.error_code, failure.error):
        return
    if action is FailureAction.CONTINUE:
        walker.write_variables(
            tok,
            {
                "error_message": failure.error,
                "error_code": failure.error_code,
                "error_node": tok.node_id,
            },
        )
        walker.cancel_wait(tok)
        walker.leave(
            w.transition(
                tok.id,
                TokenState.COMPLETED,
                error=failure.error,
                payload={"continued_after_failure": True},
            )
        )
        return
    if action is FailureAction.COMPENSATE and w.instance.state in (
        InstanceState.ACTIVE,
        InstanceState.SUSPENDED,
    ):
        # The saga: what still runs is cancelled first, then the completed steps are
        # undone. (A compensation handler that fails this way opens an incident instead.)
        if tok.state is TokenState.EXECUTING:
            w.transition(tok.id, TokenState.FAILED, error=failure.error)
        reason = f"step {tok.node_id} failed: compensating"
        walker.terminate_all(reason)
        compensate_instance(walker, tok.node_id, reason)
        return
    if action is FailureAction.FAIL:
        if tok.state is TokenState.EXECUTING:
            w.transition(tok.id, TokenState.FAILED, error=failure.error)
            walker.cancel_boundaries(tok)
            walker.terminate_all(f"step {tok.node_id} failed", except_token=tok.id)
        else:
            walker.terminate_all(f"step {tok.node_id} failed")
        w.set_state(InstanceState.FAILED, node=tok.node_id, error=failure.error)
        return
    if external_task_id is None:
        tok = w.transition(tok.id, TokenState.FAILED, error=failure.error)
        incident_type = "failedJob"
    else:
        incident_type = "failedExternalTask"
    w.open_incident(
        tok,
        incident_type,
        failure.error,
        details=failure.details,
        external_task_id=external_task_id,
    )
