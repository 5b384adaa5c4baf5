"""The spans of inline steps, when a tracer is set (see :mod:`bpm.tracing`).

Kept apart from :mod:`bpm.engine.execution` like :mod:`bpm.engine.observed`: there each
call site is one guarded line. A step's span opens when its handler starts (current while
it runs, so the handler's own spans are its children) and ends once its outcome is
committed (``bpm.outcome``); the steps a finish makes Ready are published with the context
of the span of the step of their instance, and a step this worker continues inline is that
span's child too. A step whose message brings no trace (published by a timer, after a
retry's backoff, or again by the sweeper) is a child of its instance's ``bpm.start``: the
start records its trace headers in the ``instance_started`` history event.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from bpm.observe import StepOutcome
from bpm.store import history as history_store
from bpm.tracing import Span, TraceContext, Tracer

if TYPE_CHECKING:
    from bpm.engine.core import EngineCore
    from bpm.engine.execution import Claimed, Outcome

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


def parents(core: EngineCore, tracer: Tracer, batch: list[Claimed]) -> list[Claimed]:
    """``batch`` with each step's parent: the message's trace (current now), else the
    trace its instance's start recorded (one read per instance), else none."""
    current = tracer.current()
    if tracer.inject(current):
        return [replace(step, trace=current) for step in batch]
    found: dict[str, TraceContext | None] = {}
    with core.tx() as conn:  # this worker's held connection (execution.run_token)
        for step in batch:
            instance_id = step.token.instance_id
            if instance_id not in found:
                headers = history_store.started_trace(conn, instance_id)
                found[instance_id] = tracer.extract(headers) if headers else None
    return [replace(step, trace=found[step.token.instance_id]) for step in batch]
