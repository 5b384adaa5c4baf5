"""Tracing from the standard ``OTEL_*`` variables, without importing OpenTelemetry when
they ask for nothing (:func:`bpm.contrib.otel.configure_from_env` does the work)."""

from __future__ import annotations

import logging

from bpm.tracing import ASKING, asked

__all__ = ["ASKING", "asked", "trace_from_env"]

log = logging.getLogger("bpm.otel")


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
