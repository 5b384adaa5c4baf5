"""The spans of inline steps, when a tracer is set (see :mod:`bpm.tracing`).

Kept apart from :mod:`bpm.engine.execution` like :mod:`bpm.engine.observed`: there each
call site is one guarded line. A step's span opens when its handler starts (current while
it runs, so the handler's own spans are its children) and ends once its outcome is
committed (``bpm.outcome``); the steps a finish makes Ready are published with the context
of the span of the step of their instance, and a step this worker continues inline is that
span's child too. A step whose message brings no trace (published by a timer, after a
retry's backoff, or again by the sweeper) is a child of its instance's ``bpm.start``: the
start records its trace headers in the ``instance_started`` history event.

Every attempt of a step has the parent of its first attempt (the attempts are siblings,
not each the child of the one that failed before it): an immediate retry is published
with the failed attempt's parent, and the ``attempt_failed`` event keeps that parent's
headers for a retry that runs after its backoff (its timer's message brings no trace).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from bpm import tracing
from bpm.observe import StepOutcome
from bpm.store import history as history_store
from bpm.tracing import Span, TraceContext, Tracer

if TYPE_CHECKING:
    from bpm.engine.core import EngineCore
    from bpm.engine.steps import Claimed, Outcome
    from bpm.engine.unit import Unit
    from bpm.runtime.work import InstanceWork

STEP = "bpm.step"


class StepSpans:
    """The open spans of one batch of steps."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self.spans: dict[str, Span] = {}  # by token id
        # by instance id: the context of the span of its last step in this batch
        self.contexts: dict[str, TraceContext] = {}

    def run(
        self,
        core: EngineCore,
        step: Claimed,
        worker: str,
        run: Callable[[EngineCore, Claimed, str], Outcome],
    ) -> Outcome:
        """``run(core, step, worker)`` inside the step's span."""
        tok = step.token
        span = self.tracer.start_span(
            STEP,
            {
                "bpm.instance_id": tok.instance_id,
                "bpm.process": step.definition_key,
                "bpm.node": tok.node_id,
                "bpm.token_id": tok.id,
                "bpm.attempt": tok.attempt,
                "bpm.lease_owner": worker,
                "bpm.handler": step.node.handler or "",
            },
            parent=step.trace,
        )
        self.spans[tok.id] = span
        try:
            with self.tracer.use(span) as context:
                outcome = run(core, step, worker)
        except BaseException as exc:  # the worker is going down (run catches Exception)
            span.set_error(f"{type(exc).__name__}: {exc}")
            self.end()
            raise
        self.contexts[tok.instance_id] = context
        if outcome.error is not None:
            span.set_error(outcome.error)
        return outcome

    def applied(self, token_id: str, outcome: StepOutcome | None) -> None:
        """The committed outcome of a step (None: its instance was purged meanwhile)."""
        span = self.spans.get(token_id)
        if span is not None:
            span.set_attribute("bpm.outcome", outcome.value if outcome else "purged")

    def end(self) -> None:
        for span in self.spans.values():
            span.end()
        self.spans.clear()


def retried(unit: Unit, work: InstanceWork, step: Claimed) -> None:
    """``step``'s attempt failed and it will be tried again: its next attempt gets this
    attempt's parent (published with it now, or read from ``attempt_failed`` later)."""
    active = tracing.tracer()
    if step.trace is None or active is None:
        return
    unit.token_traces[step.token.id] = step.trace
    headers = active.inject(step.trace)
    if not headers:
        return
    for i in range(len(work.events) - 1, -1, -1):
        event = work.events[i]
        if event.type == "attempt_failed" and event.token_id == step.token.id:
            work.events[i] = replace(event, payload={**event.payload, "trace": headers})
            return


def parents(core: EngineCore, tracer: Tracer, batch: list[Claimed]) -> list[Claimed]:
    """``batch`` with each step's parent: the message's trace (current now), else, for a
    retry, the parent its failed attempt recorded, else the trace its instance's start
    recorded (one read per instance), else none."""
    current = tracer.current()
    if tracer.inject(current):
        return [replace(step, trace=current) for step in batch]
    found: dict[str, TraceContext | None] = {}
    out = []
    with core.tx() as conn:  # this worker's held connection (execution.run_token)
        for step in batch:
            tok = step.token
            if tok.attempt > 1:
                headers = history_store.retry_trace(conn, tok.instance_id, tok.id)
                if headers:
                    out.append(replace(step, trace=tracer.extract(headers)))
                    continue
            if tok.instance_id not in found:
                headers = history_store.started_trace(conn, tok.instance_id)
                found[tok.instance_id] = tracer.extract(headers) if headers else None
            out.append(replace(step, trace=found[tok.instance_id]))
    return out
