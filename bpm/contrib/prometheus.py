"""Prometheus metrics: the observer that counts, the database gauges, the exposition.

``pip install 'bpm-celery[prometheus]'`` (the ``api`` and ``celery`` extras include it).
The API serves ``/metrics`` (:mod:`bpm.api.metrics`); Celery workers and beat serve it on
``BPM_METRICS_PORT`` (:mod:`bpm.contrib.celery.metrics`). See ``docs/metrics.md`` for every metric
and the scrape setup.

Counters and histograms come from :class:`PrometheusObserver`, an observer of
:mod:`bpm.observe`: it counts what THIS process did. Under ``PROMETHEUS_MULTIPROC_DIR``
(prometheus-client's multiprocess mode) every process writes its values to a file in that
directory and the exposition sums the files, which is how the children of a prefork Celery
worker are served from one port. The gauges of :class:`DatabaseGauges` are read from the
database at scrape time; they are global, so one process serves them (the API).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    start_http_server,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from bpm.observe import (
    Event,
    HandlerFinished,
    HandlerStarted,
    LeaseExpired,
    MessageIgnored,
    RequestServed,
    StepFinished,
    StepOutcome,
    TimerFired,
    observers,
)

if TYPE_CHECKING:
    from bpm.engine import Engine

log = logging.getLogger("bpm.metrics")

__all__ = [
    "DatabaseGauges",
    "PrometheusObserver",
    "exposition",
    "install",
    "multiprocess_mode",
    "serve",
]

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

# Seconds. Steps and handlers run from a millisecond (no-op) to minutes (a slow call).
DURATION_BUCKETS = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900,
)  # fmt: skip
# Claim-to-run is the wait inside a batch (earlier handlers of the batch run first).
WAIT_BUCKETS = (0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5)
# The timer waiter fires within milliseconds; a beat that was down fires minutes late.
LATENESS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600)
REQUEST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)

STEP = ("definition", "node")


class _StepSeries:
    """The children of one (definition, node): label lookups once, not per event."""

    __slots__ = ("completed", "dropped", "duration", "failed", "retried", "started")

    def __init__(self, m: PrometheusObserver, labels: tuple[str, str]) -> None:
        self.started = m.steps_started.labels(*labels)
        self.completed = m.steps_completed.labels(*labels)
        self.retried = m.steps_retried.labels(*labels)
        self.failed = m.steps_failed.labels(*labels)
        self.dropped = m.finishes_dropped.labels(*labels)
        self.duration = m.step_duration.labels(*labels)


class PrometheusObserver:
    """Counts steps, handlers, leases, ignored messages, timers and API requests.

    One per process (:func:`install`); tests give each its own ``registry``.
    """

    def __init__(self, registry: CollectorRegistry | None = REGISTRY) -> None:
        def counter(name: str, doc: str, labels: tuple[str, ...] = STEP) -> Counter:
            return Counter(name, doc, labels, registry=registry)

        def histogram(
            name: str, doc: str, labels: tuple[str, ...], buckets: tuple[float, ...]
        ) -> Histogram:
            return Histogram(name, doc, labels, registry=registry, buckets=buckets)

        self.steps_started = counter("bpm_steps_started", "Handlers started (attempts).")
        self.steps_completed = counter("bpm_steps_completed", "Attempts that completed.")
        self.steps_retried = counter(
            "bpm_steps_retried", "Attempts that failed with another attempt to come."
        )
        self.steps_failed = counter(
            "bpm_steps_failed", "Last attempts that failed (incident, error path, failed)."
        )
        self.finishes_dropped = counter(
            "bpm_finishes_dropped", "Results refused because the lease was no longer ours."
        )
        self.leases_lost = counter(
            "bpm_leases_lost", "Leases the reclaimer found expired (worker lost)."
        )
        self.messages_ignored = counter(
            "bpm_messages_ignored",
            "Messages for a step that needed nothing (redelivered, duplicated, stale).",
            ("reason",),
        )
        self.step_duration = histogram(
            "bpm_step_duration_seconds",
            "From the claim to the committed outcome of an attempt.",
            STEP,
            DURATION_BUCKETS,
        )
        self.handler_duration = histogram(
            "bpm_handler_duration_seconds",
            "Time spent in the handler.",
            (*STEP, "outcome"),
            DURATION_BUCKETS,
        )
        self.claim_to_run = histogram(
            "bpm_claim_to_run_seconds",
            "From the claim (lease taken) to the handler's start.",
            (),
            WAIT_BUCKETS,
        )
        self.timer_lateness = histogram(
            "bpm_timer_lateness_seconds",
            "How long after its due time a timer fired.",
            ("kind",),
            LATENESS_BUCKETS,
        )
        self.request_duration = histogram(
            "bpm_api_request_duration_seconds",
            "API requests by method, route template and status.",
            ("method", "route", "status"),
            REQUEST_BUCKETS,
        )
        self._steps: dict[tuple[str, str], _StepSeries] = {}
        self._lock = threading.Lock()

    def _series(self, definition: str, node_id: str) -> _StepSeries:
        key = (definition, node_id)
        found = self._steps.get(key)
        if found is None:
            with self._lock:
                found = self._steps.get(key) or _StepSeries(self, key)
                self._steps[key] = found
        return found

    def observe(self, event: Event) -> None:
        match event:
            case StepFinished():
                series = self._series(event.definition, event.node_id)
                if event.outcome is StepOutcome.COMPLETED:
                    series.completed.inc()
                elif event.outcome is StepOutcome.RETRIED:
                    series.retried.inc()
                elif event.outcome is StepOutcome.FAILED:
                    series.failed.inc()
                else:
                    series.dropped.inc()
                series.duration.observe(event.seconds)
            case HandlerStarted():
                self._series(event.definition, event.node_id).started.inc()
                self.claim_to_run.observe(event.waited)
            case HandlerFinished():
                outcome = "ok" if event.error is None else "error"
                self.handler_duration.labels(event.definition, event.node_id, outcome).observe(
                    event.seconds
                )
            case LeaseExpired():
                self.leases_lost.labels(event.definition, event.node_id).inc()
            case MessageIgnored():
                self.messages_ignored.labels(event.reason).inc()
            case TimerFired():
                self.timer_lateness.labels(event.kind).observe(max(0.0, event.lateness))
            case RequestServed():
                self.request_duration.labels(event.method, event.route, str(event.status)).observe(
                    event.seconds
                )


class DatabaseGauges:
    """Gauges read from the database at scrape time (:meth:`Engine.gauges`).

    A database that does not answer makes ``bpm_metrics_database_up`` 0 instead of
    failing the scrape: the counters of the process are still worth having.
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def collect(self) -> Iterable[Metric]:
        up = GaugeMetricFamily(
            "bpm_metrics_database_up", "1 when the database gauges below could be read."
        )
        try:
            gauges = self.engine.gauges()
        except Exception as exc:  # the scrape must not fail with the database
            log.warning("metrics: cannot read the database gauges: %s", exc)
            up.add_metric([], 0)
            return [up]
        up.add_metric([], 1)
        ready = GaugeMetricFamily(
            "bpm_ready_tokens", "Ready inline steps waiting for a worker.", labels=STEP
        )
        age = GaugeMetricFamily(
            "bpm_ready_token_age_seconds", "Age of the oldest Ready step.", labels=STEP
        )
        for b in gauges.backlog:
            ready.add_metric([b.definition_key, b.node_id], b.count)
            if b.oldest is not None:
                seconds = max(0.0, (gauges.at - b.oldest).total_seconds())
                age.add_metric([b.definition_key, b.node_id], seconds)
        tasks = GaugeMetricFamily(
            "bpm_external_tasks",
            "Open external tasks: ready, locked, or locked with an expired lock.",
            labels=("topic", "state"),
        )
        for t in gauges.topics:
            tasks.add_metric([t.topic, "ready"], t.ready)
            tasks.add_metric([t.topic, "locked"], t.locked)
            tasks.add_metric([t.topic, "expired"], t.expired)
        incidents = GaugeMetricFamily("bpm_open_incidents", "Open incidents.", labels=STEP)
        for i in gauges.incidents:
            incidents.add_metric([i.definition_key, i.node_id], i.count)
        return [up, ready, age, tasks, incidents]


class _Joined:
    """Several collectors exposed as one (the process's metrics and the gauges)."""

    def __init__(self, *parts: Collector) -> None:
        self.parts = parts

    def collect(self) -> Iterable[Metric]:
        for part in self.parts:
            yield from part.collect()


_installed: PrometheusObserver | None = None
_install_lock = threading.Lock()


def install(registry: CollectorRegistry | None = None) -> PrometheusObserver:
    """Count this process's work: subscribe the process's :class:`PrometheusObserver`
    (made on the first call, on ``registry`` or the default one; later calls return it)."""
    global _installed
    with _install_lock:
        if _installed is None:
            _installed = PrometheusObserver(registry if registry is not None else REGISTRY)
            observers.subscribe(_installed)
        return _installed


def multiprocess_mode() -> bool:
    """Whether values go to files in ``PROMETHEUS_MULTIPROC_DIR`` (read at first import
    of prometheus-client, so this must be set before anything imports it)."""
    return bool(os.environ.get(MULTIPROC_ENV))


def _process_metrics() -> Collector:
    if multiprocess_mode():
        registry = CollectorRegistry()
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]  # every process, summed
        return registry
    return REGISTRY


def source(engine: Engine | None = None) -> Collector:
    """What ``/metrics`` shows: this process's (or, multiprocess, every process's)
    metrics, and the database gauges of ``engine`` when given."""
    metrics = _process_metrics()
    return metrics if engine is None else _Joined(metrics, DatabaseGauges(engine))


def exposition(engine: Engine | None = None) -> tuple[bytes, str]:
    """The body and content type of a ``/metrics`` answer (blocking: database reads)."""
    return generate_latest(source(engine)), CONTENT_TYPE_LATEST


def serve(port: int, addr: str = "0.0.0.0", engine: Engine | None = None) -> None:
    """Serve ``/metrics`` on ``addr:port`` from a daemon thread (workers, beat)."""
    start_http_server(port, addr, registry=source(engine))
