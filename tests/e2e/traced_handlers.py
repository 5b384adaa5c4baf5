"""Handlers of the tracing e2e test (``BPM_HANDLERS=tests.e2e.traced_handlers``): each
opens a span of its own through OpenTelemetry's global tracer, which the worker's
``configure_from_env`` set up from the ``OTEL_*`` variables."""

from __future__ import annotations

from typing import Any

from opentelemetry import trace

from bpm import TaskContext, service_task


@service_task("traced-work")
def work(ctx: TaskContext) -> dict[str, Any]:
    with trace.get_tracer("shop").start_as_current_span(f"shop work {ctx.node_id}"):
        return {ctx.node_id: True}
