"""Metrics and structured logs of Celery worker and beat processes.

``BPM_METRICS_PORT=N``: the process serves ``/metrics`` on port N (``BPM_METRICS_ADDR``,
default all interfaces). A worker serves it from its main process once it is ready; its
prefork children count into files of prometheus-client's multiprocess mode (the directory
``PROMETHEUS_MULTIPROC_DIR``, or a private one made at start) and the main process serves
their sum. Beat serves its own (the timer waiter runs in it). See ``docs/metrics.md``.

Every failed attempt, incident and missing handler is logged at WARNING or above, with
the node, the instance and the reason, on the logger ``bpm.steps`` (Celery itself logs
``Task bpm.run_token[...] succeeded`` for a step whose handler failed: the task did its
job). ``BPM_LOG_FORMAT=json``: Celery's log handlers write JSON lines, and every step
outcome is logged, completed ones at INFO (:mod:`bpm.structured_logs`).

:func:`prepare` runs in :func:`bpm.contrib.celery.install`, before the handler modules are
imported: whatever imports prometheus-client first decides its mode.
"""

from __future__ import annotations

import logging
from typing import Any

from celery.signals import after_setup_logger, after_setup_task_logger, beat_init, worker_ready

from bpm import structured_logs
from bpm.contrib.celery.runtime import ATTRIBUTE, Installation
from bpm.contrib.celery.settings import WorkerSettings
from bpm.contrib.prometheus_dir import ensure_multiprocess_dir

log = logging.getLogger("bpm.metrics")


def prepare(settings: WorkerSettings) -> None:
    """Count this process's work and serve it when ready; log the steps that fail (and,
    with JSON, every step)."""
    if settings.metrics_port is not None:
        ensure_multiprocess_dir()
        from bpm.contrib import prometheus

        prometheus.install()
        worker_ready.connect(_serve, weak=False, dispatch_uid="bpm-metrics-worker")
        beat_init.connect(_serve, weak=False, dispatch_uid="bpm-metrics-beat")
    if settings.log_format != structured_logs.JSON:
        structured_logs.log_steps(completed=logging.DEBUG)
    else:
        structured_logs.log_steps()
        after_setup_logger.connect(_json, weak=False, dispatch_uid="bpm-json-logs")
        after_setup_task_logger.connect(_json, weak=False, dispatch_uid="bpm-json-task-logs")


def _serve(sender: Any = None, **_: Any) -> None:
    from bpm.contrib import prometheus

    installation = getattr(getattr(sender, "app", None), ATTRIBUTE, None)
    if not isinstance(installation, Installation):
        return  # another app of this process, not installed
    settings = installation.settings
    if settings.metrics_port is None:
        return
    try:
        prometheus.serve(settings.metrics_port, settings.metrics_addr)
    except OSError as exc:
        # e.g. ``worker -B``: the embedded beat shares the worker's port and directory,
        # so the worker already serves its values.
        log.warning(
            "metrics: cannot serve on %s:%d (%s); with worker -B the worker serves beat's "
            "metrics too, otherwise give each process on this host its own BPM_METRICS_PORT",
            settings.metrics_addr,
            settings.metrics_port,
            exc,
        )
        return
    log.info("metrics: serving /metrics on %s:%d", settings.metrics_addr, settings.metrics_port)


def _json(logger: logging.Logger | None = None, **_: Any) -> None:
    if logger is not None:
        structured_logs.use_json(logger)
