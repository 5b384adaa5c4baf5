"""Running inline service tasks: claim -> run the handlers (no transaction) -> finish.

The database lease decides: a finish whose lease is no longer ours for this attempt is
dropped, so duplicated or redelivered messages, and workers that died, change nothing.

Under load a worker does several steps per transaction. The message it got names one Ready
step; the claim also takes other Ready steps nobody holds (``SKIP LOCKED``), as many as
fit in :attr:`EngineConfig.batch_window` of handler time at the handlers' recent speed.
Their handlers run one after the other, outside any transaction; then ONE transaction
finishes them all (the instance locks in id order), continues every instance through its
gateways and events, and claims the Ready inline steps that creates for this worker. The
worker goes on until nothing is left or its budget is spent; a step it did not start goes
back to Ready and is published. With nothing queued a batch is one step: no waiting.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from bpm import tracing
from bpm.engine import observed, traced
from bpm.engine.core import EngineCore, default_worker_id
from bpm.engine.heartbeat import LeaseKeeper
from bpm.engine.listeners import finish_listener_step, run_with_listeners, step_of
from bpm.engine.reclaim import holder_died
from bpm.engine.step_policy import lease_for, policy_for
from bpm.engine.steps import Claimed, Outcome
from bpm.engine.task_listeners import (
    TaskListened,
    finish_task_listeners,
    listened_by,
    run_task_listeners,
    task_listener_step,
)
from bpm.engine.traced import StepSpans
from bpm.engine.unit import Unit, unit_of_work
from bpm.errors import BpmError, BpmnError, StepFailed
from bpm.handlers import LISTENER_STEP, TaskContext
from bpm.observe import StepOutcome
from bpm.runtime import listening, task_events
from bpm.runtime.failure import IMMEDIATE, Failure, exhausted, fail_attempt
from bpm.runtime.records import Token
from bpm.runtime.states import RUNNING_INSTANCE_STATES, BlockKind, TokenState
from bpm.runtime.throwing import find, throw
from bpm.runtime.variables import overlay
from bpm.runtime.walker import Walker
from bpm.runtime.work import check_variables
from bpm.store import instances as instance_store
from bpm.store import tokens as token_store
from bpm.store.work import scope_chains

log = logging.getLogger("bpm.execution")


# -- claim ----------------------------------------------------------------------------------


def claim(
    core: EngineCore, worker_id: str, now: datetime, *, first: str | None, more: int
) -> list[Claimed]:
    """Take the lease on ``first`` (if still Ready) and up to ``more`` other Ready steps."""
    with core.tx() as conn:
        got = token_store.claim(
            conn, worker_id, now + core.config.default_lease, now, first=first, more=more
        )
        steps: list[Claimed] = []
        foreign: list[Token] = []  # given back: another worker may have their handlers
        broken: list[Token] = []  # given back unpublished: nothing can run them
        longer = []
        mark = time.perf_counter()
        in_scopes = [
            tok
            for tok, _, definition_id, _ in got
            if tok.scope_id and core.model(conn, definition_id).sees_scopes(tok.node_id)
        ]
        scoped = {tok.scope_id for tok in in_scopes if tok.scope_id}
        # a step in a scope sees its local variables
        chains = scope_chains(conn, scoped, {tok.instance_id for tok in in_scopes})
        # a Ready token at a user task whose task is open runs the task's queued listeners
        # (or, its parent's task cancelled, the delete listeners)
        at_tasks = [
            tok
            for tok, _, definition_id, _ in got
            if core.model(conn, definition_id).node(tok.node_id).listens_to_task
        ]
        found = instance_store.listened_tasks_of(
            conn,
            [(tok.instance_id, tok.id) for tok in at_tasks]
            + [(tok.instance_id, tok.parent_id) for tok in at_tasks if tok.parent_id],
        )
        tasks = {tok.id: task for tok in at_tasks if (task := listened_by(found, tok))}
        for tok, variables, definition_id, business_key in got:
            if tok.scope_id in scoped:
                variables = overlay(variables, chains, tok.scope_id)
            model = core.model(conn, definition_id)
            task = tasks.get(tok.id)
            node = (
                task_listener_step(model.node(tok.node_id), task)
                if task is not None
                else step_of(model, model.node(tok.node_id), tok)
            )
            if node is None:
                log.error("token %s is not at an inline service task; not running it", tok.id)
                broken.append(tok)
                continue
            spec = core.registry.find(node.handler or "")
            if spec is None and tok.id != first:
                foreign.append(tok)
                continue
            lease = lease_for(core, node, spec)
            if lease != core.config.default_lease:
                longer.append((tok.id, worker_id, tok.attempt, now + lease))
                tok = replace(tok, lease_expires_at=now + lease)
            steps.append(
                Claimed(
                    tok,
                    variables,
                    definition_id,
                    node,
                    business_key,
                    model.key,
                    mark,
                    task=task,
                    task_node=model.node(tok.node_id) if task is not None else None,
                )
            )
        token_store.extend_leases(conn, longer, now)
    if first is not None and not any(s.token.id == first for s in steps):
        if holder_died(core, first, now):
            # Proven dead (a redelivered message of a killed child): taken back just now,
            # so the step is Ready again (or failed for good); claim it once more.
            return steps + claim(core, worker_id, now, first=first, more=0)
        core.stats.claims_lost += 1
        if core.observers:
            observed.message_ignored(core, first, "not_ready")
    if foreign or broken:
        _release(core, foreign + broken, worker_id, now, dispatch=[t.id for t in foreign])
    return steps


# -- run ------------------------------------------------------------------------------------


def run_handler(core: EngineCore, step: Claimed, worker_id: str) -> Outcome:
    """Call the user's handler outside any transaction; an exception becomes an Outcome."""
    tok = step.token

    def extend(duration: timedelta | None = None) -> bool:
        spec = core.registry.find(step.node.handler or "")
        lease = duration or lease_for(core, step.node, spec)
        since = time.monotonic()
        now = core.now()
        with core.tx() as conn:
            held = token_store.extend_leases(
                conn, [(tok.id, worker_id, tok.attempt, now + lease)], now
            )
        if held == 1:
            core.leases.extended(tok.id, lease, since)
        return held == 1

    ctx = TaskContext(
        instance_id=tok.instance_id,
        node_id=tok.node_id,
        token_id=tok.id,
        attempt=tok.attempt,
        variables=dict(step.variables),
        business_key=step.business_key,
        _extend=extend,
        script=getattr(step.node, "script", None),  # script tasks run as handlers
        properties=step.node.properties,
    )
    started = time.perf_counter()
    listened: tuple[str, ...] = ()
    task_did: TaskListened | None = None
    if core.observers:
        observed.handler_started(core, step, worker_id, started)
    try:
        spec = core.registry.get(step.node.handler or "")
        result: Any
        if step.task is not None and step.task_node is not None:
            result, listened, task_did = run_task_listeners(
                core.registry, step.task_node, step.task, ctx
            )
        elif step.node.listeners:
            via = listening.pending(tok).via
            result, listened = run_with_listeners(core.registry, step.node, ctx, spec.fn, flow=via)
        else:
            result = spec.fn(ctx)
    except Exception as exc:  # a handler may raise anything: it is the user's code
        outcome = Outcome(
            error=exc.message if isinstance(exc, StepFailed) else f"{type(exc).__name__}: {exc}",
            details=traceback.format_exc(limit=20),
            finished_at=core.now(),
            error_code=_error_code(exc),
            seconds=_ran_for(core, started),
            thrown=exc if isinstance(exc, BpmnError) else None,
            asked=exc if isinstance(exc, StepFailed) else None,
        )
    else:
        outcome = Outcome(
            variables=result,
            finished_at=core.now(),
            seconds=_ran_for(core, started),
            locals=dict(ctx.locals) or None,
            listeners=listened,
            task=task_did,
        )
    if core.observers:
        observed.handler_finished(core, step, worker_id, outcome)
    return outcome


def _ran_for(core: EngineCore, started: float) -> float:
    seconds = time.perf_counter() - started
    core.pace.observe(seconds)
    return seconds


def _error_code(exc: Exception) -> str | None:
    """An exception may name its BPMN error code (``exc.error_code``) for error boundaries."""
    code = getattr(exc, "error_code", None)
    return None if code is None else str(code)


# -- finish ---------------------------------------------------------------------------------


def _apply(
    unit: Unit, walker: Walker, step: Claimed, outcome: Outcome, worker_id: str
) -> StepOutcome:
    """Apply one outcome if the lease is still ours (else it is ``DROPPED``)."""
    tok = step.token
    work = walker.work
    current = work.tokens.get(tok.id)
    if (
        current is None
        or current.state is not TokenState.EXECUTING
        or current.lease_owner != worker_id
        or current.attempt != tok.attempt
    ):
        unit.core.stats.finishes_dropped += 1
        log.warning(
            "dropping the result of %s attempt %d: the lease is no longer ours",
            tok.id,
            tok.attempt,
        )
        return StepOutcome.DROPPED
    work.record_claim(current)
    error, details, code = outcome.error, outcome.details, outcome.error_code
    if outcome.thrown is not None:
        try:
            check_variables(outcome.thrown.variables, work.max_variable_bytes)
            walker.write_variables(current, outcome.thrown.variables)
        except BpmError as exc:
            # a technical failure now, not the business error: retried, then an incident
            error, details, code = f"BpmnError {outcome.thrown.code}: {exc}", None, None
        else:
            return _throw_bpmn_error(unit, walker, step, current, outcome.thrown, outcome)
    if error is None:
        try:
            # Both checked before either is written: a bad value changes nothing.
            check_variables(outcome.variables, work.max_variable_bytes, work.max_update_bytes)
            check_variables(outcome.locals, work.max_variable_bytes, work.max_update_bytes)
            walker.write_variables(current, outcome.variables)
            walker.write_variables(current, outcome.locals, local=True)
        except BpmError as exc:
            error, details = f"{type(exc).__name__}: {exc}", None
    if error is None:
        if outcome.listeners:  # one row for all of them: the trail shows what ran
            work.record(
                "listeners_ran",
                token_id=current.id,
                node_id=current.node_id,
                payload={"listeners": list(outcome.listeners)},
            )
        if step.task is not None:
            finish_task_listeners(walker, current, step.task.id, outcome.task or TaskListened())
        elif step.node.handler == LISTENER_STEP:
            finish_listener_step(walker, current)
        else:
            walker.leave(current)
        return StepOutcome.COMPLETED
    policy = policy_for(step.node, unit.core.registry.find(step.node.handler or ""))
    asked = outcome.asked if error == outcome.error else None
    failure = Failure(
        error=error,
        failed_at=outcome.finished_at or unit.now,
        details=details,
        error_code=code,
        final=asked is not None and not asked.retry,
        delay=asked.delay if asked else None,
        max_attempts=asked.max_attempts if asked else None,
    )
    fail_attempt(walker, current, policy, failure)
    if failure.max_attempts is not None:
        policy = replace(policy, max_attempts=failure.max_attempts)
    retried = not failure.final and policy.has_attempt_after(current.attempt)
    return StepOutcome.RETRIED if retried else StepOutcome.FAILED


def _throw_bpmn_error(
    unit: Unit, walker: Walker, step: Claimed, current: Token, err: BpmnError, outcome: Outcome
) -> StepOutcome:
    """A handler raised :class:`BpmnError` (its variables are written): the nearest
    catcher, or (nothing catches it) the retry policy's failure action, without further
    attempts."""
    message = err.message or err.code
    catcher = find(walker, current, err.code)
    walker.work.record(
        "bpmn_error",
        token_id=current.id,
        node_id=current.node_id,
        payload={
            "error_code": err.code,
            "message": err.message,
            "caught_by": catcher.node.id if catcher else None,
        },
    )
    if catcher is not None:
        throw(walker, current, err.code, message)
        return StepOutcome.FAILED
    policy = policy_for(step.node, unit.core.registry.find(step.node.handler or ""))
    failure = Failure(
        error=message,
        failed_at=outcome.finished_at or unit.now,
        details=f"BpmnError {err.code} was not caught by any error boundary or event sub-process",
        error_code=err.code,
    )
    exhausted(walker, current, policy.on_exhausted, failure, attempts=current.attempt)
    return StepOutcome.FAILED


def finish(
    core: EngineCore,
    results: Sequence[tuple[Claimed, Outcome]],
    worker_id: str,
    now: datetime | None = None,
    *,
    keep: int = 1,
    spans: StepSpans | None = None,
) -> list[Claimed]:
    """Apply the outcomes of a batch in ONE transaction and claim up to ``keep`` of the
    inline steps that become Ready for this worker (the rest are published).

    ``spans``: the steps' spans (with a tracer), told each outcome; the steps that become
    Ready are published with (or continued in) the trace of their instance's step."""
    ended: list[str] = []
    # For the observers, after the commit: each step's outcome and the incident it opened
    # (None: instance purged).
    outcomes: list[tuple[StepOutcome, str | None] | None] | None = [] if core.observers else None
    with unit_of_work(core, now) as unit:
        if spans is not None:
            unit.traces.update(spans.contexts)
        works = unit.lock(sorted({step.token.instance_id for step, _ in results}))
        walkers: dict[str, Walker] = {}
        for step, outcome in results:
            work = works.get(step.token.instance_id)
            if work is None:  # purged meanwhile
                if outcomes is not None:
                    outcomes.append(None)
                if spans is not None:
                    spans.applied(step.token.id, None)
                continue
            if work.instance.id not in walkers:
                walkers[work.instance.id] = unit.walker(work)
            walker = walkers[work.instance.id]
            applied = _apply(unit, walker, step, outcome, worker_id)
            if spans is not None and applied is StepOutcome.RETRIED:
                traced.retried(unit, work, step)
            if outcomes is not None:
                failed = applied is StepOutcome.FAILED
                incident = observed.incident_of(work, step.token.id) if failed else None
                outcomes.append((applied, incident))
            if spans is not None:
                spans.applied(step.token.id, applied)
        for walker in walkers.values():
            walker.run()
        nxt = _claim_next(unit, list(walkers.values()), worker_id, keep)
        for step, _ in results:
            work = works.get(step.token.instance_id)
            tok = work.tokens.get(step.token.id) if work else None
            if tok is not None and tok.state in (TokenState.COMPLETED, TokenState.TERMINATED):
                ended.append(tok.id)
    core.finished.add(ended)
    if outcomes is not None:
        observed.steps_finished(core, results, outcomes, worker_id)
    return nxt


def _claim_next(unit: Unit, walkers: list[Walker], worker_id: str, keep: int) -> list[Claimed]:
    """Synchronous continuation: keep up to ``keep`` new Ready inline steps for this worker."""
    core = unit.core
    if not core.config.continue_inline:
        return []
    out: list[Claimed] = []
    mark = time.perf_counter()
    for walker in walkers:
        work = walker.work
        if work.instance.state not in RUNNING_INSTANCE_STATES:
            continue
        for token_id in list(work.to_dispatch):
            if len(out) >= keep:
                return out
            tok = work.tokens[token_id]
            model_node = walker.model.node(tok.node_id)
            task = task_events.listened_task(walker, tok) if model_node.listens_to_task else None
            node = (
                task_listener_step(model_node, task)
                if task
                else step_of(walker.model, model_node, tok)
            )
            spec = core.registry.find(node.handler or "") if node else None
            if tok.state is not TokenState.READY or node is None or spec is None:
                continue
            work.to_dispatch.remove(token_id)
            tok = work.transition(
                tok.id,
                TokenState.EXECUTING,
                attempt=tok.attempt + 1,
                lease_owner=worker_id,
                lease_expires_at=unit.now + lease_for(core, node, spec),
            )
            out.append(
                Claimed(
                    tok,
                    dict(walker.variables(tok)),
                    work.instance.definition_id,
                    node,
                    work.instance.business_key,
                    walker.model.key,
                    mark,
                    unit.token_traces.get(tok.id, unit.traces.get(work.instance.id)),
                    task=task,
                    task_node=model_node if task else None,
                )
            )
    return out


def run_token(
    core: EngineCore, token_id: str, *, worker_id: str | None = None, now: datetime | None = None
) -> int:
    """Run a Ready inline step and the inline steps it leads to; returns how many ran.

    See the module docstring: when steps are queued this also runs other Ready steps, in
    batches of one transaction each, until nothing is left or the budget is spent.
    """
    if token_id in core.finished:  # this process finished it: the message is a duplicate
        if core.observers:
            observed.message_ignored(core, token_id, "finished_here")
        return 0
    worker = worker_id or default_worker_id()
    ran = 0
    deadline = time.monotonic() + core.config.drain_for.total_seconds()
    keeper = core.leases
    abandoned = core.stats.finishes_abandoned
    # With a tracer a worker takes only steps whose trace it knows: the one the message
    # names (its context is current: the message's) and those that follow from the steps
    # it ran, not other Ready steps (their own messages carry their traces).
    tracer = tracing.tracer()
    with core.hold_connection():  # one pool checkout for all the transactions below
        batch = claim(
            core,
            worker,
            core.now(now),
            first=token_id,
            more=core.pace.batch(core.config) - 1 if tracer is None else 0,
        )
        if tracer is not None and batch:
            batch = traced.parents(core, tracer, batch)
        while batch:
            _hold(core, keeper, batch, worker)
            results = []
            spans = StepSpans(tracer) if tracer is not None else None
            for step in batch:
                if spans is None:
                    results.append((step, run_handler(core, step, worker)))
                else:
                    results.append((step, spans.run(core, step, worker, run_handler)))
                core.stats.steps_run += 1
            ran += len(batch)
            budget_left = ran < core.config.max_inline_steps and time.monotonic() < deadline
            try:
                batch = finish_retrying(
                    core,
                    results,
                    worker,
                    now,
                    keep=core.pace.batch(core.config) if budget_left else 0,
                    spans=spans,
                )
            finally:
                keeper.release(step.token.id for step, _ in results)
                if spans is not None:
                    spans.end()
            if not budget_left or core.stats.finishes_abandoned > abandoned:
                break  # out of budget, or the database stayed away: hand back, take no more
            if (
                not batch
                and tracer is None
                and core.config.batch_size > 1
                and core.pace.batch(core.config) > 1
            ):
                try:
                    batch = claim(
                        core, worker, core.now(now), first=None, more=core.pace.batch(core.config)
                    )
                except DBAPIError as exc:  # only an offer to take more: the steps ran
                    log.warning("no more steps taken: the database did not answer (%s)", exc)
                    break
    return ran


def _hold(core: EngineCore, keeper: LeaseKeeper, batch: Sequence[Claimed], worker: str) -> None:
    """Let the heartbeat keep these leases while their handlers run."""
    since = time.monotonic()
    steps = []
    for step in batch:
        tok = step.token
        spec = core.registry.find(step.node.handler or "")
        steps.append((tok.id, worker, tok.attempt, lease_for(core, step.node, spec)))
    keeper.hold(steps, since)


# Waits between the tries of a finish that met a broken connection (seconds).
FIRST_RETRY = 0.05
LONGEST_RETRY = 2.0


def finish_retrying(
    core: EngineCore,
    results: Sequence[tuple[Claimed, Outcome]],
    worker_id: str,
    now: datetime | None = None,
    *,
    keep: int = 1,
    spans: StepSpans | None = None,
) -> list[Claimed]:
    """:func:`finish`, tried again with backoff while the database cannot be reached.

    The handlers' results are kept in memory meanwhile: a result is thrown away only when
    the lease runs out before the database answers (then the step runs again, as it would
    for a dead worker). A finish that did commit before its connection broke is dropped by
    the retry's lease check (the lease is no longer "executing"), never applied twice.
    """
    wait = FIRST_RETRY
    ids = [step.token.id for step, _ in results]
    while True:
        try:
            return finish(core, results, worker_id, core.now(now), keep=keep, spans=spans)
        except DBAPIError as exc:
            if not connection_trouble(exc):
                raise
            left = core.leases.surely_ours_until(ids) - time.monotonic()
            if left <= 0:
                core.stats.finishes_abandoned += len(ids)
                log.error(
                    "giving up the finish of %d step(s) %s: the database was unreachable "
                    "until their leases ran out (%s); they will run again",
                    len(ids),
                    ids,
                    exc.orig or exc,
                )
                return []
            core.stats.finish_retries += 1
            log.warning(
                "the finish of %d step(s) failed on the database connection (%s); trying "
                "again in %.2fs, for at most %.1fs more",
                len(ids),
                exc.orig or exc,
                min(wait, left),
                left,
            )
            time.sleep(min(wait, left))
            wait = min(wait * 2, LONGEST_RETRY)


def connection_trouble(exc: DBAPIError) -> bool:
    """A broken or refused connection, a server going away (not a bug in a statement)."""
    return bool(exc.connection_invalidated or isinstance(exc, (OperationalError, InterfaceError)))


def _release(
    core: EngineCore,
    tokens: Sequence[Token],
    worker: str,
    now: datetime,
    *,
    dispatch: Sequence[str],
) -> None:
    """Give claimed but not started steps back to Ready (not a failed attempt); publish
    those in ``dispatch``."""
    with unit_of_work(core, now) as unit:
        works = unit.lock(sorted({t.instance_id for t in tokens}))
        for claimed in tokens:
            work = works.get(claimed.instance_id)
            tok = work.tokens.get(claimed.id) if work else None
            if (
                work is None
                or tok is None
                or tok.state is not TokenState.EXECUTING
                or tok.lease_owner != worker
            ):
                continue
            # Executing -> Waiting(retry_backoff) -> Ready keeps to the transition table.
            work.transition(
                tok.id,
                TokenState.WAITING,
                blocked=(BlockKind.RETRY_BACKOFF, IMMEDIATE),
                payload={"released": True},
            )
            work.transition(tok.id, TokenState.READY, attempt=tok.attempt - 1)
            if tok.id in dispatch:
                work.to_dispatch.append(tok.id)


#: The longest wait between two publishes of a Ready step, in ``redispatch_after``s.
REDISPATCH_BACKOFF_CAP = 8


def republish_due(
    updated_at: datetime, created_at: datetime, at: datetime, after: timedelta
) -> bool:
    """Whether a Ready step last published (or made Ready) at ``updated_at`` is due for
    another publish at ``at``: ``after`` the first time, then after as long again as it
    had waited when it was last published (``after`` doubles: 1, 2, 4, 8...), at most
    ``REDISPATCH_BACKOFF_CAP`` times ``after`` apart.

    A step waiting behind a long queue looks just like one whose message was lost, so a
    sweeper that runs on time (beat's upkeep thread) would publish every queued step again
    on every run; with the backoff a backlog gets a few duplicates per step, while a lost
    message is still sent again within ``after`` (a fresh step) or the cap (a retried one,
    whose token is older)."""
    waited = max(updated_at - created_at, timedelta(0))
    return at - updated_at >= min(max(waited, after), after * REDISPATCH_BACKOFF_CAP)


def redispatch_stale_ready(
    core: EngineCore, *, now: datetime | None = None, limit: int = 500
) -> int:
    """Publish again Ready steps nobody claimed for a while (a publish was lost), with a
    backoff (:func:`republish_due`); returns how many. Two sweepers at once publish each
    step once (the rows are read with ``SKIP LOCKED`` and marked in the same transaction)."""
    at = core.now(now)
    after = core.config.redispatch_after
    with core.tx() as conn:
        candidates = token_store.stale_ready(conn, at - after, limit)
        ids = [
            i for i, updated, created in candidates if republish_due(updated, created, at, after)
        ]
        token_store.touch(conn, ids, at)
    core.dispatch(ids)
    return len(ids)
