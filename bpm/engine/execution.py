"""Running inline service tasks: claim -> run the handler (no transaction) -> finish.

The database lease decides: a finish whose lease is no longer ours for this attempt is
dropped, so duplicated or redelivered messages, and workers that died, change nothing.
"""

from __future__ import annotations

import logging
import traceback
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from bpm.engine.core import EngineCore, default_worker_id
from bpm.errors import BpmError, NotFound
from bpm.handlers import HandlerSpec, TaskContext
from bpm.model import nodes as n
from bpm.retry import RetryPolicy
from bpm.runtime.advance import Flow
from bpm.runtime.failure import fail_attempt
from bpm.runtime.records import Token
from bpm.runtime.states import InstanceState, TokenState
from bpm.store import tokens as token_store

log = logging.getLogger("bpm.execution")


class _NotRunnable(Exception):
    """Roll back a claim of a token that is not an inline service task."""


@dataclass(frozen=True)
class Claimed:
    """A step this worker holds the lease on."""

    token: Token
    variables: dict[str, Any]
    definition_id: str
    node: n.ServiceTask
    business_key: str | None = None


@dataclass(frozen=True)
class Outcome:
    """The result of running a handler: variables to merge, or an error."""

    variables: Any = None
    error: str | None = None
    details: str | None = None
    finished_at: datetime | None = None
    error_code: str | None = None  # from an ``error_code`` attribute of the exception


def lease_for(core: EngineCore, node: n.ServiceTask, spec: HandlerSpec | None) -> timedelta:
    if node.lease_seconds is not None:
        return timedelta(seconds=node.lease_seconds)
    if spec is not None and spec.lease is not None:
        return spec.lease
    return core.config.default_lease


def policy_for(node: n.Node, spec: HandlerSpec | None) -> RetryPolicy:
    """The model's policy wins over the handler's; the default is 3 attempts, no delay."""
    retry = getattr(node, "retry", None)
    if isinstance(retry, RetryPolicy):
        return retry
    if spec is not None and spec.retry is not None:
        return spec.retry
    return RetryPolicy.default()


def claim(core: EngineCore, token_id: str, worker_id: str, now: datetime) -> Claimed | None:
    """Take the lease on a Ready inline step, or None if someone else has it (or it is gone)."""
    try:
        with core.tx() as conn:
            got = token_store.claim(conn, token_id, worker_id, now + core.config.default_lease, now)
            if got is None:
                core.stats.claims_lost += 1
                return None
            tok, variables, definition_id, business_key = got
            node = core.model(conn, definition_id).node(tok.node_id)
            if not isinstance(node, n.ServiceTask) or node.is_external:
                raise _NotRunnable(tok.node_id)
            lease = lease_for(core, node, core.registry.find(node.handler or ""))
            if lease != core.config.default_lease:
                token_store.extend_lease(conn, tok.id, worker_id, tok.attempt, now + lease, now)
                tok = replace(tok, lease_expires_at=now + lease)
    except _NotRunnable:
        log.error("token %s is not at an inline service task; not running it", token_id)
        return None
    return Claimed(tok, variables, definition_id, node, business_key)


def run_handler(core: EngineCore, step: Claimed, worker_id: str) -> Outcome:
    """Call the user's handler outside any transaction; an exception becomes an Outcome."""
    tok = step.token

    def extend(duration: timedelta | None = None) -> bool:
        spec = core.registry.find(step.node.handler or "")
        lease = duration or lease_for(core, step.node, spec)
        now = core.now()
        with core.tx() as conn:
            return token_store.extend_lease(conn, tok.id, worker_id, tok.attempt, now + lease, now)

    ctx = TaskContext(
        instance_id=tok.instance_id,
        node_id=tok.node_id,
        token_id=tok.id,
        attempt=tok.attempt,
        variables=dict(step.variables),
        business_key=step.business_key,
        _extend=extend,
        script=getattr(step.node, "script", None),  # script tasks run as handlers
    )
    try:
        spec = core.registry.get(step.node.handler or "")
        result = spec.fn(ctx)
    except Exception as exc:  # a handler may raise anything: it is the user's code
        return Outcome(
            error=f"{type(exc).__name__}: {exc}",
            details=traceback.format_exc(limit=20),
            finished_at=core.now(),
            error_code=_error_code(exc),
        )
    return Outcome(variables=result, finished_at=core.now())


def _error_code(exc: Exception) -> str | None:
    """An exception may name its BPMN error code (``exc.error_code``) for error boundaries."""
    code = getattr(exc, "error_code", None)
    return None if code is None else str(code)


def finish(
    core: EngineCore, step: Claimed, outcome: Outcome, worker_id: str, now: datetime
) -> Claimed | None:
    """Apply the outcome if the lease is still ours; maybe claim the next inline step."""
    tok = step.token
    with core.tx() as conn:
        try:
            work = core.load(conn, tok.instance_id, now)
        except NotFound:
            return None
        current = work.tokens.get(tok.id)
        if (
            current is None
            or current.state is not TokenState.EXECUTING
            or current.lease_owner != worker_id
            or current.attempt != tok.attempt
        ):
            core.stats.finishes_dropped += 1
            log.warning(
                "dropping the result of %s attempt %d: the lease is no longer ours",
                tok.id,
                tok.attempt,
            )
            return None
        model = core.model(conn, step.definition_id)
        flow = Flow(work, model)
        spec = core.registry.find(step.node.handler or "")
        error, details = outcome.error, outcome.details
        if error is None:
            try:
                work.merge_variables(outcome.variables, source=tok.node_id, token_id=tok.id)
            except BpmError as exc:
                error, details = f"{type(exc).__name__}: {exc}", None
        if error is None:
            flow.leave(current)
            flow.run(())
        else:
            fail_attempt(
                flow,
                current,
                policy_for(step.node, spec),
                error,
                failed_at=outcome.finished_at or now,
                details=details,
                error_code=outcome.error_code,
            )
            flow.run(())
        nxt = _claim_next_inline(core, work, model, worker_id, now)
        core.flush(conn, work)
    core.dispatch(work.to_dispatch)
    return nxt


def _claim_next_inline(
    core: EngineCore, work: Any, model: Any, worker_id: str, now: datetime
) -> Claimed | None:
    """Synchronous continuation: keep one new Ready inline step for this worker."""
    if not core.config.continue_inline or work.instance.state is not InstanceState.ACTIVE:
        return None
    while work.to_dispatch:
        token_id = work.to_dispatch.pop(0)
        tok = work.tokens[token_id]
        if tok.state is not TokenState.READY:
            continue
        node = model.node(tok.node_id)
        spec = core.registry.find(node.handler or "")
        lease = lease_for(core, node, spec)
        tok = work.transition(
            tok.id,
            TokenState.EXECUTING,
            attempt=tok.attempt + 1,
            lease_owner=worker_id,
            lease_expires_at=now + lease,
            payload={"worker": worker_id},
        )
        return Claimed(
            tok,
            dict(work.instance.variables),
            work.instance.definition_id,
            node,
            work.instance.business_key,
        )
    return None


def run_token(
    core: EngineCore, token_id: str, *, worker_id: str | None = None, now: datetime | None = None
) -> int:
    """Run a Ready inline step and the inline steps it leads to; returns how many ran."""
    worker = worker_id or default_worker_id()
    with core.hold_connection():  # one pool checkout for all the transactions below
        step = claim(core, token_id, worker, core.now(now))
        ran = 0
        while step is not None and ran < core.config.max_inline_steps:
            outcome = run_handler(core, step, worker)
            ran += 1
            core.stats.steps_run += 1
            step = finish(core, step, outcome, worker, core.now(now))
        if step is not None:  # hand the rest back to the broker rather than hog this worker
            _release(core, step, worker, core.now(now))
    return ran


def _release(core: EngineCore, step: Claimed, worker: str, now: datetime) -> None:
    """Give a claimed but not started step back to Ready (not a failed attempt)."""
    with core.tx() as conn:
        work = core.load(conn, step.token.instance_id, now)
        tok = work.tokens.get(step.token.id)
        if tok is None or tok.state is not TokenState.EXECUTING or tok.lease_owner != worker:
            return
        # Executing -> Waiting(retry_backoff) -> Ready keeps to the transition table.
        from bpm.runtime.failure import IMMEDIATE
        from bpm.runtime.states import BlockKind

        work.transition(
            tok.id,
            TokenState.WAITING,
            blocked=(BlockKind.RETRY_BACKOFF, IMMEDIATE),
            payload={"released": True},
        )
        work.transition(tok.id, TokenState.READY, attempt=tok.attempt - 1)
        core.flush(conn, work)
    core.dispatch([step.token.id])


def reclaim_expired_leases(
    core: EngineCore, *, now: datetime | None = None, limit: int = 100
) -> int:
    """Expired leases count as failed attempts ("worker lost"); returns how many."""
    at = core.now(now)
    with core.db.connect() as conn:
        expired = token_store.expired_leases(conn, at, limit)
    count = 0
    for instance_id, token_id in expired:
        with core.tx() as conn:
            try:
                work = core.load(conn, instance_id, at)
            except NotFound:  # purged since the scan
                continue
            tok = work.tokens.get(token_id)
            if (
                tok is None
                or tok.state is not TokenState.EXECUTING
                or tok.lease_expires_at is None
                or tok.lease_expires_at >= at
            ):
                continue
            model = core.model(conn, work.instance.definition_id)
            node = model.node(tok.node_id)
            spec = core.registry.find(getattr(node, "handler", None) or "")
            flow = Flow(work, model)
            fail_attempt(
                flow,
                tok,
                policy_for(node, spec),
                f"worker lost: lease of {tok.lease_owner} expired",
                failed_at=at,
            )
            flow.run(())
            core.flush(conn, work)
        core.dispatch(work.to_dispatch)
        count += 1
    return count


def redispatch_stale_ready(
    core: EngineCore, *, now: datetime | None = None, limit: int = 500
) -> int:
    """Publish again Ready steps nobody claimed for a while (a publish was lost)."""
    at = core.now(now)
    with core.tx() as conn:
        ids = token_store.stale_ready(conn, at - core.config.redispatch_after, limit)
        token_store.touch(conn, ids, at)
    core.dispatch(ids)
    return len(ids)
