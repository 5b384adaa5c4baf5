"""OpenTelemetry traces of the engine: ``pip install 'bpm-celery[otel]'``.

Two ways in:

* :func:`instrument` when your process configures OpenTelemetry itself (a tracer
  provider of yours, ``opentelemetry-instrument``): the engine's spans go to the global
  tracer provider (or the one given), whenever it is set;
* :func:`configure_from_env` (called by :func:`bpm.contrib.celery.install`, the ready-made
  worker app and ``bpm api``): when the standard variables ask for an exporter
  (``OTEL_TRACES_EXPORTER``, ``OTEL_EXPORTER_OTLP_ENDPOINT`` or
  ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``), it sets up the SDK with the OTLP exporter
  (HTTP/protobuf; ``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_BSP_*`` as
  the SDK reads them) and instruments. Without those variables it does nothing.

Without either, or without OpenTelemetry installed, the engine traces nothing at all. The
context travels in the Celery message as W3C ``traceparent``/``tracestate`` headers
(through the global propagator: ``OTEL_PROPAGATORS``), so one trace runs from the web
request that started an instance to every handler it caused. See ``docs/celery.md``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from bpm import tracing
from bpm.errors import ConfigurationError
from bpm.tracing import AttributeValue, TraceContext, asked

try:
    from opentelemetry import context as otel_context
    from opentelemetry import propagate, trace
    from opentelemetry.trace import Status, StatusCode
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError(
        "bpm.contrib.otel needs OpenTelemetry: pip install 'bpm-celery[otel]'"
    ) from exc

log = logging.getLogger("bpm.otel")

__all__ = ["OtelTracer", "configure_from_env", "instrument", "uninstrument"]

INSTRUMENTATION = "bpm"


class _Span:
    """An OpenTelemetry span, as :class:`bpm.tracing.Span`."""

    __slots__ = ("otel",)

    def __init__(self, otel: trace.Span) -> None:
        self.otel = otel

    def set_attribute(self, key: str, value: AttributeValue) -> None:
        self.otel.set_attribute(key, value)

    def set_error(self, message: str) -> None:
        self.otel.set_status(Status(StatusCode.ERROR, message))

    def end(self) -> None:
        self.otel.end()


class OtelTracer:
    """:class:`bpm.tracing.Tracer` on OpenTelemetry's API."""

    def __init__(self, provider: trace.TracerProvider | None = None) -> None:
        # Without a provider: the global one, also when it is set later (a proxy tracer).
        self._tracer = trace.get_tracer(INSTRUMENTATION, tracer_provider=provider)

    def start_span(
        self,
        name: str,
        attributes: Mapping[str, AttributeValue],
        parent: TraceContext | None = None,
    ) -> _Span:
        ctx = parent if isinstance(parent, otel_context.Context) else None
        return _Span(self._tracer.start_span(name, context=ctx, attributes=dict(attributes)))

    @contextmanager
    def use(self, span: tracing.Span) -> Iterator[TraceContext]:
        assert isinstance(span, _Span)
        with trace.use_span(span.otel, end_on_exit=False, record_exception=False):
            yield otel_context.get_current()

    def current(self) -> TraceContext:
        return otel_context.get_current()

    @contextmanager
    def resume(self, context: TraceContext | None) -> Iterator[None]:
        if not isinstance(context, otel_context.Context):
            yield
            return
        token = otel_context.attach(context)
        try:
            yield
        finally:
            otel_context.detach(token)

    def inject(self, context: TraceContext) -> dict[str, str]:
        headers: dict[str, str] = {}
        if isinstance(context, otel_context.Context):
            propagate.inject(headers, context=context)
        return headers

    def extract(self, headers: Mapping[str, object]) -> TraceContext | None:
        carrier = {k: v for k, v in headers.items() if isinstance(v, str)}
        if not carrier:
            return None
        ctx = propagate.extract(carrier)
        if not trace.get_current_span(ctx).get_span_context().is_valid:
            return None
        return ctx


def instrument(provider: trace.TracerProvider | None = None) -> Callable[[], None]:
    """Trace the engine in this process with OpenTelemetry (the global tracer provider, or
    ``provider``); returns a function that stops it again."""
    mine = OtelTracer(provider)
    tracing.set_tracer(mine)

    def stop() -> None:
        if tracing.tracer() is mine:
            tracing.set_tracer(None)

    return stop


def uninstrument() -> None:
    """Stop tracing the engine in this process (whoever instrumented it)."""
    if isinstance(tracing.tracer(), OtelTracer):
        tracing.set_tracer(None)


def configure_from_env(
    environ: Mapping[str, str] | None = None, *, service_name: str = "bpm"
) -> bool:
    """Set up the SDK's exporter from the standard ``OTEL_*`` variables and instrument;
    returns whether tracing is on. Nothing is done (False) unless a variable asks for an
    exporter, or with ``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none``.

    An SDK tracer provider already set (yours) is kept and only instrumented. Exporters:
    ``otlp`` (the default: HTTP/protobuf to ``OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT``,
    ``http://localhost:4318`` by default) and ``console``. ``service_name`` is the
    ``service.name`` when ``OTEL_SERVICE_NAME`` does not say.
    """
    env = os.environ if environ is None else environ  # the SDK itself reads os.environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if not asked(env):
        return False
    names = [
        n.strip().lower() for n in env.get("OTEL_TRACES_EXPORTER", "otlp").split(",") if n.strip()
    ]
    if names == ["none"]:
        return False
    try:
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
    except ImportError as exc:
        raise ConfigurationError(
            "OTEL_* variables ask for a trace exporter, but opentelemetry-sdk is not "
            "installed: pip install 'bpm-celery[otel]' (or unset OTEL_TRACES_EXPORTER and "
            "OTEL_EXPORTER_OTLP_ENDPOINT)"
        ) from exc
    current = trace.get_tracer_provider()
    if isinstance(current, TracerProvider):
        instrument()  # the process set up its own SDK: use it as it is
        return True
    exporters: list[SpanExporter] = []
    for name in names:
        exporters.append(_exporter(name, env))
    attributes: dict[str, Any] = {}
    if not env.get("OTEL_SERVICE_NAME"):
        attributes[SERVICE_NAME] = service_name
    # Resource.create reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES itself.
    provider = TracerProvider(resource=Resource.create(attributes))
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    instrument()
    log.info("tracing to %s", ", ".join(names))
    return True


def _exporter(name: str, env: Mapping[str, str]) -> Any:
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    if name != "otlp":
        raise ConfigurationError(
            f"OTEL_TRACES_EXPORTER={name!r} is not supported by bpm: use otlp, console or none"
        )
    protocol = env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get(
        "OTEL_EXPORTER_OTLP_PROTOCOL", ""
    )
    protocol = protocol.strip()
    if protocol == "grpc":
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
                OTLPSpanExporter as GrpcExporter,
            )
        except ImportError as exc:
            raise ConfigurationError(
                "OTEL_EXPORTER_OTLP_PROTOCOL=grpc needs opentelemetry-exporter-otlp-proto-grpc "
                "(pip install it), or use http/protobuf"
            ) from exc
        return GrpcExporter()
    if protocol not in ("", "http/protobuf"):
        raise ConfigurationError(
            f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r} is not supported: use http/protobuf or grpc"
        )
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:
        raise ConfigurationError(
            "the OTLP exporter is not installed: pip install 'bpm-celery[otel]'"
        ) from exc
    # The exporter reads its endpoint, headers, timeout and compression from the variables.
    return OTLPSpanExporter()
