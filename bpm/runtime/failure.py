"""What a failed attempt does to its token: back off and retry, or give up per the policy."""

from __future__ import annotations

from datetime import datetime, timedelta

from bpm.model import nodes as n
from bpm.retry import FailureAction, RetryPolicy
from bpm.runtime.advance import Flow
from bpm.runtime.records import Token
from bpm.runtime.states import BlockKind, InstanceState, TokenState

T = TokenState
IMMEDIATE = "immediate"


def fail_attempt(
    flow: Flow,
    tok: Token,
    policy: RetryPolicy,
    error: str,
    *,
    failed_at: datetime,
    details: str | None = None,
    error_code: str | None = None,
) -> None:
    """Record a failed attempt of an Executing token and decide what comes next.

    The next attempt is due at ``max(failed_at, now) + delay``: a handler that failed after a
    long run is scheduled from its failure, not from its start.
    """
    w = flow.work
    w.record(
        "attempt_failed",
        token_id=tok.id,
        node_id=tok.node_id,
        payload={"attempt": tok.attempt, "error": error, "details": details},
    )
    if policy.has_attempt_after(tok.attempt):
        delay = policy.delay(tok.attempt, w.instance.id, tok.node_id)
        if delay <= timedelta(0):
            w.transition(
                tok.id, T.WAITING, blocked=(BlockKind.RETRY_BACKOFF, IMMEDIATE), error=error
            )
            w.transition(tok.id, T.READY)
            w.to_dispatch.append(tok.id)
            return
        fire_at = max(failed_at, w.now) + delay
        timer_id = w.add_timer(tok, tok.node_id, "retry_backoff", fire_at)
        w.transition(
            tok.id,
            T.WAITING,
            blocked=(BlockKind.RETRY_BACKOFF, timer_id),
            error=error,
            payload={"retry_at": fire_at.isoformat()},
        )
        return
    exhausted(flow, tok, policy, error, details=details, error_code=error_code)


def catching_boundary(flow: Flow, node_id: str, error_code: str | None) -> n.BoundaryEvent | None:
    """The error boundary event of ``node_id`` that catches ``error_code``, if any."""
    catch_all = None
    for b in flow.model.boundaries.get(node_id, ()):
        if not b.is_error:
            continue
        if b.error_code is None:
            catch_all = catch_all or b
        elif error_code is not None and b.error_code == error_code:
            return b
    return catch_all


def take_error_boundary(
    flow: Flow, tok: Token, boundary: n.BoundaryEvent, error: str, error_code: str | None
) -> None:
    """Interrupt the activity and continue on the boundary's path with the error recorded."""
    w = flow.work
    w.merge_variables(
        {"error_message": error, "error_code": error_code, "error_node": tok.node_id},
        source=boundary.id,
        token_id=tok.id,
    )
    flow.stop_token(w.token(tok.id), payload={"caught_by": boundary.id, "error": error})
    new = w.create_token(boundary.id, scope_id=tok.scope_id, parent_id=tok.id)
    flow.continue_tokens([new])


def exhausted(
    flow: Flow,
    tok: Token,
    policy: RetryPolicy,
    error: str,
    *,
    details: str | None = None,
    error_code: str | None = None,
) -> None:
    """The last attempt failed: error boundary, incident, or a failed instance.

    An error boundary that catches the error always wins (the error message and code land
    in the variables ``error_message`` / ``error_code``). Without one the policy decides:
    ``continue_on_failure()`` leaves the task on its normal outgoing flows with the same
    variables set (a gateway after it can test them, like A3S Flow's ``step_failed``),
    ``fail_instance()`` ends the instance ``failed``, and the default opens an incident
    (token ``failed``, instance still ``active``) for ``Engine.retry_incident``.
    """
    w = flow.work
    boundary = catching_boundary(flow, tok.node_id, error_code)
    w.record(
        "step_failed",
        token_id=tok.id,
        node_id=tok.node_id,
        payload={
            "error": error,
            "details": details,
            "attempts": tok.attempt,
            "error_code": error_code,
        },
    )
    if boundary is not None:
        take_error_boundary(flow, tok, boundary, error, error_code)
        return
    if policy.on_exhausted is FailureAction.CONTINUE:
        w.merge_variables(
            {"error_message": error, "error_code": error_code, "error_node": tok.node_id},
            source=tok.node_id,
            token_id=tok.id,
        )
        flow.leave(
            w.transition(
                tok.id, T.COMPLETED, error=error, payload={"continued_after_failure": True}
            )
        )
        return
    w.transition(tok.id, T.FAILED, error=error)
    if policy.on_exhausted is FailureAction.FAIL:
        flow.cancel_boundaries(tok)
        flow.terminate_all(f"step {tok.node_id} failed", except_token=tok.id)
        w.set_state(InstanceState.FAILED, node=tok.node_id, error=error)
        return
    w.open_incident(tok, "failedJob", error, details=details)
