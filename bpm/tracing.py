"""Tracing hook: where the engine opens spans and carries trace context, without a tracer.

The engine never imports a tracing library. It asks :func:`tracer` for the process's
:class:`Tracer` at a few points, and does nothing when there is none (the default: one
``None`` check per step)::

    start            span "bpm.start"   (the web request's span, if any, is its parent)
    publish          the current context, as W3C ``traceparent``/``tracestate`` headers
                     of the Celery message (bpm.contrib.celery.publisher)
    worker           the message's context made current again (bpm.contrib.celery.tasks)
    each step        span "bpm.step" around the handler, child of the message's context,
                     or of the step before it when the worker continues an instance inline
    REST API         spans "bpm.external.fetch" and "bpm.external.complete"

:mod:`bpm.contrib.otel` is the OpenTelemetry implementation (``pip install
'bpm-celery[otel]'``, then ``bpm.contrib.otel.instrument()``); any object with these
methods will do. Contexts are opaque to the engine: it only hands back what the tracer gave.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol

__all__ = ["AttributeValue", "Span", "TraceContext", "Tracer", "set_tracer", "span", "tracer"]

AttributeValue = str | int | float | bool | Sequence[str]

# Whatever the tracer uses for a context (OpenTelemetry: a ``Context``); never looked into.
TraceContext = object


class Span(Protocol):
    """A started span; ended exactly once with :meth:`end`."""

    def set_attribute(self, key: str, value: AttributeValue) -> None: ...

    def set_error(self, message: str) -> None: ...

    def end(self) -> None: ...


class Tracer(Protocol):
    """What the engine needs of a tracer (see the module docstring)."""

    def start_span(
        self,
        name: str,
        attributes: Mapping[str, AttributeValue],
        parent: TraceContext | None = None,
    ) -> Span:
        """A span, child of ``parent`` (a context from :meth:`current` or :meth:`extract`),
        else of the current context. Not made current: see :meth:`use`."""
        ...

    def use(self, span: Span) -> AbstractContextManager[TraceContext]:
        """Make ``span`` the current span for the block; yields the context it makes."""
        ...

    def current(self) -> TraceContext:
        """The current context, to make current again later (:meth:`resume`), maybe in
        another thread."""
        ...

    def resume(self, context: TraceContext | None) -> AbstractContextManager[None]:
        """Make ``context`` current for the block (None: leave the current one)."""
        ...

    def inject(self, context: TraceContext) -> dict[str, str]:
        """``context`` as message headers (W3C ``traceparent`` and ``tracestate``); empty
        when it holds no valid span."""
        ...

    def extract(self, headers: Mapping[str, object]) -> TraceContext | None:
        """The context in ``headers`` (see :meth:`inject`); None when there is none."""
        ...


_tracer: Tracer | None = None


def tracer() -> Tracer | None:
    """The process's tracer, or None: then the engine traces nothing."""
    return _tracer


def set_tracer(new: Tracer | None) -> Tracer | None:
    """Make ``new`` the process's tracer (None: trace nothing); returns the previous one."""
    global _tracer
    old, _tracer = _tracer, new
    return old


@contextmanager
def span(name: str, attributes: Mapping[str, AttributeValue]) -> Iterator[Span | None]:
    """A current span for the block when a tracer is set (else None); an exception that
    leaves the block marks it failed and goes on."""
    active = _tracer
    if active is None:
        yield None
        return
    started = active.start_span(name, attributes)
    try:
        with active.use(started):
            yield started
    except BaseException as exc:
        started.set_error(f"{type(exc).__name__}: {exc}")
        raise
    finally:
        started.end()


ASKING = (
    "OTEL_TRACES_EXPORTER",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
)
"""The standard ``OTEL_*`` variables that ask for a trace exporter (the SDK's own names)."""


def asked(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the ``OTEL_*`` variables ask for a trace exporter (read here, below both
    :mod:`bpm.contrib.otel` and :mod:`bpm.contrib.otel_env`, which need it)."""
    env = os.environ if environ is None else environ
    return any(env.get(name, "").strip() for name in ASKING)
