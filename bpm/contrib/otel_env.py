"""Tracing from the standard ``OTEL_*`` variables, without importing OpenTelemetry when
they ask for nothing (:func:`bpm.contrib.otel.configure_from_env` does the work)."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

log = logging.getLogger("bpm.otel")

# The variables that ask for an exporter (the SDK's own names).
ASKING = (
    "OTEL_TRACES_EXPORTER",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
)


def asked(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the variables ask for a trace exporter."""
    env = os.environ if environ is None else environ
    return any(env.get(name, "").strip() for name in ASKING)


def trace_from_env(service_name: str) -> bool:
    """Trace this process if the variables ask for it; returns whether it is traced. With
    OpenTelemetry not installed, says how to install it (once) and traces nothing."""
    if not asked():
        return False
    try:
        from bpm.contrib import otel
    except ImportError:
        log.warning(
            "OTEL_* variables ask for traces, but OpenTelemetry is not installed: "
            "pip install 'bpm-celery[otel]' (tracing stays off)"
        )
        return False
    return otel.configure_from_env(service_name=service_name)
