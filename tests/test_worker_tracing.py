"""The external-task worker SDK's spans and the trace headers of its requests.

A real :class:`~bpm.worker.ExternalWorker` against a small HTTP server in a thread that
plays the REST API (one task to lock, then nothing) and records each request's headers;
spans go to the OpenTelemetry SDK's in-memory exporter. The REST API's own spans for these
headers are in ``tests/test_tracing.py``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from bpm import tracing
from bpm.contrib import otel
from bpm.worker import ExternalWorker, Task
from tests.support import eventually

TASK = {
    "id": "task-1",
    "topicName": "pay",
    "workerId": "w1",
    "processInstanceId": "instance-1",
    "activityId": "charge",
    "variables": {},
}


class FakeApi:
    """Answers fetchAndLock with TASK once (then []), complete with 204; keeps the
    (path, headers) of every request."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.given = False
        self.task: dict[str, Any] = TASK
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                api.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                if self.path.endswith("/fetchAndLock"):
                    body = [] if api.given else [api.task]
                    api.given = True
                    data = json.dumps(body).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def headers_of(self, suffix: str) -> list[dict[str, str]]:
        return [h for path, h in self.requests if path.endswith(suffix)]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_api() -> Iterator[FakeApi]:
    api = FakeApi()
    yield api
    api.close()


@pytest.fixture
def exporter() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    provider = TracerProvider()
    exported = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exported))
    stop = otel.instrument(provider)
    yield provider, exported
    stop()
    provider.shutdown()


def run_once(api: FakeApi, handle: Any) -> ExternalWorker:
    worker = ExternalWorker(api.url, worker_id="w1", long_poll_ms=100)
    worker.subscribe("pay", lock_duration=10_000)(handle)
    thread = worker.start_background()
    try:
        eventually(lambda: api.headers_of("/complete"), timeout=30, what="the complete")
    finally:
        worker.stop()
        thread.join(30)
    return worker


def span_hex(span: ReadableSpan) -> str:
    assert span.context is not None
    return format(span.context.span_id, "016x")


def traceparent_span(headers: dict[str, str]) -> str:
    return headers["traceparent"].split("-")[2]


def test_the_worker_s_requests_carry_its_spans_and_the_handler_runs_in_them(
    fake_api: FakeApi, exporter: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exported = exporter
    shop = provider.get_tracer("shop")

    def handle(task: Task) -> dict[str, Any]:
        with shop.start_as_current_span("charge the card"):
            return {"charged": True}

    worker = run_once(fake_api, handle)
    assert worker.completed == 1
    finished = exported.get_finished_spans()
    (fetch,) = [
        s
        for s in finished
        if s.name == "bpm.worker.fetch" and s.attributes and s.attributes["bpm.locked"] == 1
    ]
    (task,) = [s for s in finished if s.name == "bpm.worker.task"]
    (charge,) = [s for s in finished if s.name == "charge the card"]
    assert fetch.context and task.context and charge.context
    assert task.attributes == {
        "bpm.external_task_id": "task-1",
        "bpm.topic": "pay",
        "bpm.worker_id": "w1",
        "bpm.instance_id": "instance-1",
    }
    # one trace: the fetch, the task (in a pool thread) its child, the handler's span its child
    assert task.parent is not None and task.parent.span_id == fetch.context.span_id
    assert charge.parent is not None and charge.parent.span_id == task.context.span_id
    assert len({s.context.trace_id for s in (fetch, task, charge)}) == 1
    # the API hears the fetch under the fetch span and the complete under the task span
    first_fetch = fake_api.headers_of("/fetchAndLock")[0]
    assert traceparent_span(first_fetch) == span_hex(fetch)
    (complete,) = fake_api.headers_of("/complete")
    assert traceparent_span(complete) == span_hex(task)


def test_a_task_sent_with_its_instance_s_trace_runs_in_that_trace(
    fake_api: FakeApi, exporter: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exported = exporter
    with provider.get_tracer("web").start_as_current_span("bpm.start") as start:
        tracer = tracing.tracer()
        assert tracer is not None
        started = tracer.inject(tracer.current())
    fake_api.task = {**TASK, "bpmTrace": started}

    worker = run_once(fake_api, lambda task: {"charged": True})
    assert worker.completed == 1
    finished = exported.get_finished_spans()
    (task,) = [s for s in finished if s.name == "bpm.worker.task"]
    fetches = [s for s in finished if s.name == "bpm.worker.fetch"]
    assert task.context and fetches
    # the instance's start is the task's parent, not the poll that locked it
    assert task.parent is not None
    assert task.parent.span_id == start.get_span_context().span_id
    assert task.context.trace_id == start.get_span_context().trace_id
    assert all(f.context and f.context.trace_id != task.context.trace_id for f in fetches)
    # the complete carries the task's span: the steps it makes Ready join the same trace
    (complete,) = fake_api.headers_of("/complete")
    assert traceparent_span(complete) == span_hex(task)


def test_without_a_tracer_the_worker_sends_no_trace_headers(fake_api: FakeApi) -> None:
    assert tracing.tracer() is None
    worker = run_once(fake_api, lambda task: None)
    assert worker.completed == 1
    assert [h for _, h in fake_api.requests if "traceparent" in h] == []
