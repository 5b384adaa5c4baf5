"""Spans of the REST API's external-task calls, when a tracer is set (:mod:`bpm.tracing`).

A request's span is a child of the current span when the server already traces requests
(OpenTelemetry's ASGI or FastAPI instrumentation), else of the caller's W3C
``traceparent`` header, else it starts a trace.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from starlette.requests import Request

from bpm import tracing
from bpm.tracing import AttributeValue, Span

FETCH = "bpm.external.fetch"
COMPLETE = "bpm.external.complete"


@contextmanager
def request_span(
    request: Request, name: str, attributes: Mapping[str, AttributeValue]
) -> Iterator[Span | None]:
    """A current span for the block (None without a tracer); an exception marks it failed."""
    tracer = tracing.tracer()
    if tracer is None:
        yield None
        return
    parent = None
    if not tracer.inject(tracer.current()):  # no span current: the caller's, if it sent one
        parent = tracer.extract(dict(request.headers))
    with tracer.resume(parent), tracing.span(name, attributes) as span:
        yield span


@contextmanager
def caller_context(request: Request) -> Iterator[None]:
    """The caller's trace (its W3C ``traceparent``) current for the block, when no span is
    current already: an instance started by a traced client joins the client's trace."""
    tracer = tracing.tracer()
    if tracer is None or tracer.inject(tracer.current()):
        yield
        return
    with tracer.resume(tracer.extract(dict(request.headers))):
        yield
