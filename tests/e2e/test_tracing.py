"""One trace across a real Celery worker: the test process starts an instance inside a
"web request" span, the worker (prefork, two children) runs every step and exports its
spans with the SDK's OTLP exporter, configured from ``OTEL_*`` variables alone, to an OTLP
receiver in this test. The steps' spans are children of the start (through the W3C headers
of the Celery message), of one another, and parents of the handlers' own spans."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from bpm import Engine, tracing
from bpm.contrib import otel
from tests.e2e.procs import start_worker
from tests.support import eventually
from tests.test_tracing import fork_process

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Received:
    """A span as an OTLP exporter sent it."""

    name: str
    trace_id: int
    span_id: int
    parent_id: int | None
    attributes: dict[str, Any]
    service: str


def _value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(x) for x in v.array_value.values)
    return getattr(v, kind) if kind else None


class Receiver:
    """An OTLP/HTTP trace receiver on 127.0.0.1 (protobuf bodies, what the SDK sends)."""

    def __init__(self) -> None:
        self.spans: list[Received] = []
        lock = threading.Lock()
        spans = self.spans

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                req = ExportTraceServiceRequest()
                req.ParseFromString(body)
                got = []
                for rs in req.resource_spans:
                    res = {a.key: _value(a.value) for a in rs.resource.attributes}
                    for ss in rs.scope_spans:
                        for s in ss.spans:
                            got.append(
                                Received(
                                    s.name,
                                    int.from_bytes(s.trace_id, "big"),
                                    int.from_bytes(s.span_id, "big"),
                                    int.from_bytes(s.parent_span_id, "big")
                                    if s.parent_span_id
                                    else None,
                                    {a.key: _value(a.value) for a in s.attributes},
                                    str(res.get("service.name")),
                                )
                            )
                with lock:
                    spans.extend(got)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def test_one_trace_from_the_request_through_the_worker_to_every_handler(
    celery_engine: Engine,
    worker_env: dict[str, str],
    queue: str,
    tmp_path: Path,
    receiver: Receiver,
) -> None:
    provider = TracerProvider()
    local = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(local))
    stop = otel.instrument(provider)
    env = {
        **worker_env,
        "BPM_HANDLERS": "tests.e2e.traced_handlers",
        "BPM_BATCH_SIZE": "1",  # after a: one branch continues inline, one is published
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": receiver.endpoint,
        "OTEL_SERVICE_NAME": "bpm-e2e-worker",
        "OTEL_BSP_SCHEDULE_DELAY": "50",
    }
    worker = start_worker(env, queue, tmp_path, children=2)
    try:
        celery_engine.deploy(fork_process(handler="traced-work"))
        with provider.get_tracer("shop").start_as_current_span("POST /orders"):
            inst = celery_engine.start("traced", {"n": 1})
        eventually(
            lambda: celery_engine.get_instance(inst.id).state.value == "completed",
            timeout=60,
            what="the instance to complete in the worker",
        )

        def steps() -> dict[str, Received] | None:
            got = {s.attributes["bpm.node"]: s for s in receiver.spans if s.name == "bpm.step"}
            shop = [s for s in receiver.spans if s.name.startswith("shop work")]
            return got if len(got) == 4 and len(shop) == 4 else None

        found = eventually(steps, timeout=30, what="the worker's spans at the receiver")
        assert worker.proc.poll() is None
    finally:
        worker.stop()
        stop()
        provider.shutdown()
    assert tracing.tracer() is None
    (web,) = [s for s in local.get_finished_spans() if s.name == "POST /orders"]
    (start,) = [s for s in local.get_finished_spans() if s.name == "bpm.start"]
    assert web.context is not None and start.context is not None
    assert start.parent is not None and start.parent.span_id == web.context.span_id
    a, b, c, d = (found[node] for node in "abcd")
    assert {s.trace_id for s in receiver.spans} == {web.context.trace_id}  # one trace
    assert {s.service for s in receiver.spans} == {"bpm-e2e-worker"}
    assert a.parent_id == start.context.span_id  # across the process, in the message
    assert b.parent_id == c.parent_id == a.span_id
    assert d.parent_id in (b.span_id, c.span_id)
    for node, step in found.items():
        attrs = dict(step.attributes)
        assert attrs.pop("bpm.token_id")
        owner = attrs.pop("bpm.lease_owner")
        assert isinstance(owner, str) and owner.endswith(tuple("0123456789"))  # host:pid
        assert attrs == {
            "bpm.instance_id": inst.id,
            "bpm.process": "traced",
            "bpm.node": node,
            "bpm.attempt": 1,
            "bpm.handler": "traced-work",
            "bpm.outcome": "completed",
        }
        (mine,) = [s for s in receiver.spans if s.name == f"shop work {node}"]
        assert mine.parent_id == step.span_id
