"""OpenTelemetry traces in one process (``bpm.contrib.otel`` with the SDK's in-memory
exporter): a start, each step and the REST API's fetch and complete are spans of one
trace, linked through the trace headers each published step carries, with the instance,
node, attempt and lease owner as attributes. The same across a real Celery worker is in
``tests/e2e/test_tracing.py``."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from bpm import Engine, EngineConfig, RetryPolicy, TaskContext, tracing
from bpm.api.app import create_app
from bpm.builder import Process
from bpm.contrib import otel
from bpm.contrib.otel_env import trace_from_env
from bpm.errors import ConfigurationError
from bpm.handlers import HandlerRegistry
from bpm.runtime.external import FetchRequest, TopicRequest

WORKER = "worker-1"


class Spans:
    """The finished spans of the test, and the SDK provider they come from."""

    def __init__(self, provider: TracerProvider, exporter: InMemorySpanExporter) -> None:
        self.provider = provider
        self.exporter = exporter

    def all(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.all() if s.name == name]

    def step(self, node: str, attempt: int = 1) -> ReadableSpan:
        found = [
            s
            for s in self.named("bpm.step")
            if s.attributes
            and s.attributes["bpm.node"] == node
            and s.attributes["bpm.attempt"] == attempt
        ]
        assert len(found) == 1, (node, attempt, [s.attributes for s in self.named("bpm.step")])
        return found[0]


@pytest.fixture
def engines() -> Iterator[list[Engine]]:
    """Engines the test makes, closed after it."""
    made: list[Engine] = []
    yield made
    for engine in made:
        engine.close()


@pytest.fixture
def spans() -> Iterator[Spans]:
    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    stop = otel.instrument(provider)
    yield Spans(provider, exporter)
    stop()
    provider.shutdown()
    assert tracing.tracer() is None


class TracingDispatcher:
    """A broker in a list: each published step with the trace headers the engine's
    publisher would put in its message (``run`` plays the worker: it extracts them)."""

    def __init__(self) -> None:
        self.queue: list[tuple[str, dict[str, str]]] = []

    def dispatch(self, token_ids: Sequence[str]) -> None:
        tracer = tracing.tracer()
        headers = tracer.inject(tracer.current()) if tracer else {}
        self.queue.extend((token_id, headers) for token_id in token_ids)

    def run(self, engine: Engine) -> int:
        ran = 0
        while self.queue:
            token_id, headers = self.queue.pop(0)
            tracer = tracing.tracer()
            assert tracer is not None
            with tracer.resume(tracer.extract(headers)):
                ran += engine.run_token(token_id, worker_id=WORKER)
        return ran


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent else None


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return int(span.context.span_id)


def trace_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return int(span.context.trace_id)


def fork_process(handler: str = "work") -> Process:
    """a -> fork [b, c] -> join -> d, each step run by ``handler``."""
    return (
        Process("traced")
        .start("s")
        .service_task("a", handler=handler)
        .parallel("fork")
        .service_task("b", handler=handler)
        .service_task("c", handler=handler)
        .parallel("join")
        .service_task("d", handler=handler)
        .end("e")
        .sequence("s", "a", "fork")
        .flow("fork", "b")
        .flow("fork", "c")
        .flow("b", "join")
        .flow("c", "join")
        .sequence("join", "d", "e")
    )


def test_one_trace_runs_from_the_request_to_every_handler(
    pg_database_url: str, spans: Spans, engines: list[Engine]
) -> None:
    registry = HandlerRegistry()
    app_tracer = spans.provider.get_tracer("shop")

    def work(ctx: TaskContext) -> dict[str, Any]:
        with app_tracer.start_as_current_span(f"shop work {ctx.node_id}"):
            return {ctx.node_id: True}

    registry.register("work", work)

    q = TracingDispatcher()
    # batch_size=1: after a, one branch continues in this worker, the other is published
    engine = Engine(
        pg_database_url, dispatcher=q, registry=registry, config=EngineConfig(batch_size=1)
    )
    engines.append(engine)
    engine.deploy(fork_process())
    with app_tracer.start_as_current_span("POST /orders") as request:
        inst = engine.start("traced", {"n": 1}, business_key="order-7")
    assert q.run(engine) == 4
    assert engine.get_instance(inst.id).state.value == "completed"

    (web,) = spans.named("POST /orders")
    (start,) = spans.named("bpm.start")
    assert request.get_span_context().trace_id == trace_id(web)
    assert {trace_id(s) for s in spans.all()} == {trace_id(web)}  # one trace
    assert parent_of(start) == span_id(web)
    assert start.attributes == {
        "bpm.process": "traced",
        "bpm.business_key": "order-7",
        "bpm.instance_id": inst.id,
    }
    a, b, c, d = (spans.step(node) for node in "abcd")
    assert parent_of(a) == span_id(start)  # through the message of the first step
    assert parent_of(b) == parent_of(c) == span_id(a)  # one inline, one published
    assert parent_of(d) in (span_id(b), span_id(c))  # the branch that completed the join
    for node, step in zip("abcd", (a, b, c, d), strict=True):
        attrs = dict(step.attributes or {})
        assert attrs.pop("bpm.token_id")
        assert attrs == {
            "bpm.instance_id": inst.id,
            "bpm.process": "traced",
            "bpm.node": node,
            "bpm.attempt": 1,
            "bpm.lease_owner": WORKER,
            "bpm.handler": "work",
            "bpm.outcome": "completed",
        }
        assert step.status.status_code is StatusCode.UNSET
        (mine,) = spans.named(f"shop work {node}")
        assert parent_of(mine) == span_id(step)  # the handler's own spans are children


def test_a_retried_step_is_one_span_per_attempt(
    pg_database_url: str, spans: Spans, engines: list[Engine]
) -> None:
    registry = HandlerRegistry()
    calls: list[int] = []

    def flaky(ctx: TaskContext) -> None:
        calls.append(ctx.attempt)
        if ctx.attempt < 3:
            raise RuntimeError(f"card declined on attempt {ctx.attempt}")

    registry.register("flaky", flaky)

    q = TracingDispatcher()
    engine = Engine(pg_database_url, dispatcher=q, registry=registry)
    engines.append(engine)
    engine.deploy(
        Process("retried")
        .start("s")
        .service_task("pay", handler="flaky", retry=RetryPolicy(max_attempts=3))
        .end("e")
        .sequence("s", "pay", "e")
    )
    inst = engine.start("retried")
    q.run(engine)
    assert calls == [1, 2, 3]
    assert engine.get_instance(inst.id).state.value == "completed"
    first, second, third = (spans.step("pay", n) for n in (1, 2, 3))
    (start,) = spans.named("bpm.start")
    # the attempts are siblings: an immediate retry is published with the failed
    # attempt's parent, not as its child (20 attempts were a chain 20 spans deep)
    assert parent_of(first) == parent_of(second) == parent_of(third) == span_id(start)
    assert len({trace_id(s) for s in (start, first, second, third)}) == 1
    for failed, n in ((first, 1), (second, 2)):
        assert failed.status.status_code is StatusCode.ERROR
        assert failed.status.description == f"RuntimeError: card declined on attempt {n}"
        assert failed.attributes and failed.attributes["bpm.outcome"] == "retried"
    assert third.attributes and third.attributes["bpm.outcome"] == "completed"
    assert third.status.status_code is StatusCode.UNSET


def test_a_traced_worker_takes_only_steps_whose_trace_it_knows(
    pg_database_url: str, spans: Spans, engines: list[Engine]
) -> None:
    """Without a tracer a worker also takes other Ready steps nobody holds (a batch); with
    one it does not: their own messages carry their traces."""
    registry = HandlerRegistry()
    registry.register("work", lambda ctx: None)
    q = TracingDispatcher()
    engine = Engine(pg_database_url, dispatcher=q, registry=registry)
    engines.append(engine)
    engine.deploy(
        Process("single")
        .start("s")
        .service_task("a", handler="work")
        .end("e")
        .sequence("s", "a", "e")
    )
    engine.start("single")
    q.run(engine)  # the worker learns its handlers' pace: batches may now hold many
    for _ in range(3):
        engine.start("single")
    (first_id, _), *others = q.queue
    assert engine.run_token(first_id) == 1  # traced: only the step its message names
    traced = tracing.set_tracer(None)  # the same worker, untraced
    try:
        assert engine.run_token(others[0][0]) == 2  # its own and the one left over
    finally:
        tracing.set_tracer(traced)


def test_without_a_tracer_nothing_is_traced(pg_database_url: str, engines: list[Engine]) -> None:
    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    assert tracing.tracer() is None
    registry = HandlerRegistry()
    registry.register("work", lambda ctx: None)
    q = TracingDispatcher()
    engine = Engine(pg_database_url, dispatcher=q, registry=registry)
    engines.append(engine)
    engine.deploy(fork_process())
    with provider.get_tracer("shop").start_as_current_span("POST /orders"):
        inst = engine.start("traced")
    assert q.queue and all(headers == {} for _, headers in q.queue)
    while q.queue:
        engine.run_token(q.queue.pop(0)[0])
    assert engine.get_instance(inst.id).state.value == "completed"
    assert [s.name for s in exporter.get_finished_spans()] == ["POST /orders"]
    with tracing.span("bpm.anything", {}) as none:
        assert none is None


def test_external_task_fetch_and_complete_are_spans_of_the_worker_s_trace(
    pg_database_url: str, spans: Spans, engines: list[Engine]
) -> None:
    registry = HandlerRegistry()
    registry.register("work", lambda ctx: None)
    q = TracingDispatcher()
    engine = Engine(pg_database_url, dispatcher=q, registry=registry)
    engines.append(engine)
    engine.deploy(
        Process("ext")
        .start("s")
        .service_task("charge", topic="pay")
        .service_task("ship", handler="work")
        .end("e")
        .sequence("s", "charge", "ship", "e")
    )
    inst = engine.start("ext")
    app = create_app(engine, open_access=True, api_keys=[])
    client_tracer = spans.provider.get_tracer("external-worker")
    tracer = tracing.tracer()
    assert tracer is not None

    async def call(path: str, body: dict[str, Any], headers: dict[str, str]) -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.post(
                f"/engine-rest/external-task/{path}", json=body, headers=headers
            )

    with client_tracer.start_as_current_span("poll") as poll:
        fetched = asyncio.run(
            call(
                "fetchAndLock",
                {
                    "workerId": "w1",
                    "maxTasks": 5,
                    "topics": [{"topicName": "pay", "lockDuration": 60_000}],
                },
                tracer.inject(tracer.current()),
            )
        )
    assert fetched.status_code == 200, fetched.text
    (task,) = fetched.json()
    with client_tracer.start_as_current_span("charged") as charged:
        done = asyncio.run(
            call(f"{task['id']}/complete", {"workerId": "w1"}, tracer.inject(tracer.current()))
        )
    assert done.status_code == 204, done.text
    assert q.run(engine) == 1
    assert engine.get_instance(inst.id).state.value == "completed"

    (fetch,) = spans.named("bpm.external.fetch")
    assert parent_of(fetch) == poll.get_span_context().span_id  # the caller's traceparent
    assert fetch.attributes == {
        "bpm.worker_id": "w1",
        "bpm.topics": ("pay",),
        "bpm.max_tasks": 5,
        "bpm.locked": 1,
        "bpm.external_task_ids": (task["id"],),
        "bpm.instance_ids": (inst.id,),
    }
    (complete,) = spans.named("bpm.external.complete")
    assert parent_of(complete) == charged.get_span_context().span_id
    assert complete.attributes == {"bpm.external_task_id": task["id"], "bpm.worker_id": "w1"}
    # committed in the API's batch thread, yet the next step is the complete's child
    assert parent_of(spans.step("ship")) == span_id(complete)


def test_a_traced_fetch_answers_each_task_with_the_trace_its_instance_started_in(
    pg_database_url: str, spans: Spans, engines: list[Engine]
) -> None:
    engine = Engine(pg_database_url, dispatcher=TracingDispatcher())
    engines.append(engine)
    engine.deploy(
        Process("ext")
        .start("s")
        .service_task("charge", topic="pay")
        .end("e")
        .sequence("s", "charge", "e")
    )
    with spans.provider.get_tracer("web").start_as_current_span("request"):
        traced = engine.start("ext")
    tracer = tracing.tracer()
    assert tracer is not None
    app = create_app(engine, open_access=True, api_keys=[])

    async def fetch(headers: dict[str, str]) -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.post(
                "/engine-rest/external-task/fetchAndLock",
                json={
                    "workerId": "w1",
                    "maxTasks": 5,
                    "topics": [{"topicName": "pay", "lockDuration": 60_000}],
                },
                headers=headers,
            )

    (start,) = spans.named("bpm.start")
    # an untraced caller (Camunda's clients) gets Camunda's answer, nothing more
    plain = asyncio.run(fetch({}))
    assert plain.status_code == 200, plain.text
    (task,) = plain.json()
    assert "bpmTrace" not in task
    engine.unlock_external_task(task["id"])
    with spans.provider.get_tracer("worker").start_as_current_span("poll"):
        answered = asyncio.run(fetch(tracer.inject(tracer.current())))
    assert answered.status_code == 200, answered.text
    (task,) = answered.json()
    assert task["processInstanceId"] == traced.id
    parent = tracer.extract(task["bpmTrace"])
    assert parent is not None
    # the handler's span, opened under it, is in the start's trace, the start's child
    tracer.start_span("handler", {}, parent=parent).end()
    (handler,) = [s for s in spans.all() if s.name == "handler"]
    assert trace_id(handler) == trace_id(start)
    assert parent_of(handler) == span_id(start)


def test_a_refused_complete_is_a_failed_span_and_changes_nothing(
    pg_database_url: str, spans: Spans, engines: list[Engine]
) -> None:
    engine = Engine(pg_database_url, dispatcher=TracingDispatcher())
    engines.append(engine)
    engine.deploy(
        Process("ext1")
        .start("s")
        .service_task("charge", topic="pay")
        .end("e")
        .sequence("s", "charge", "e")
    )
    inst = engine.start("ext1")
    (task,) = engine.fetch_and_lock(
        FetchRequest(worker_id="w1", max_tasks=1, topics=(TopicRequest("pay", 60_000),))
    )
    app = create_app(engine, open_access=True, api_keys=[])

    async def call() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.post(
                f"/engine-rest/external-task/{task.id}/complete", json={"workerId": "w2"}
            )

    answer = asyncio.run(call())
    assert answer.status_code in (400, 500), answer.text
    (complete,) = spans.named("bpm.external.complete")
    assert complete.status.status_code is StatusCode.ERROR
    assert "w1" in (complete.status.description or "")
    assert engine.get_instance(inst.id).state.value == "active"
    assert engine.external_task(task.id).worker_id == "w1"


@pytest.mark.parametrize(
    ("env", "why"),
    [
        ({}, "nothing asked"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"}, "off"),
        ({"OTEL_TRACES_EXPORTER": "none"}, "exporter none"),
    ],
)
def test_configure_from_env_does_nothing_unless_asked(env: dict[str, str], why: str) -> None:
    assert otel.configure_from_env(env) is False, why
    assert tracing.tracer() is None


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER='zipkin' is not supported"),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_EXPORTER_OTLP_PROTOCOL": "thrift"},
            "use http/protobuf or grpc",
        ),
    ],
)
def test_configure_from_env_refuses_what_it_cannot_export(env: dict[str, str], says: str) -> None:
    with pytest.raises(ConfigurationError, match="not supported") as err:
        otel.configure_from_env(env)
    assert says in str(err.value)
    assert tracing.tracer() is None  # nothing set up


def test_otel_variables_without_opentelemetry_say_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import bpm.contrib

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
    # as if the extra were not installed: importing bpm.contrib.otel fails
    monkeypatch.delattr(bpm.contrib, "otel")
    monkeypatch.setitem(sys.modules, "bpm.contrib.otel", None)
    with caplog.at_level(logging.WARNING, logger="bpm.otel"):
        assert trace_from_env("bpm-worker") is False
    assert "pip install 'bpm-celery[otel]'" in caplog.text
    assert tracing.tracer() is None
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT")
    caplog.clear()
    assert trace_from_env("bpm-worker") is False  # nothing asked: nothing said
    assert caplog.text == ""


def test_a_step_whose_worker_goes_down_mid_handler_still_ends_its_span(
    pg_database_url: str, spans: Spans, engines: list[Engine]
) -> None:
    registry = HandlerRegistry()

    def going_down(ctx: TaskContext) -> None:
        raise SystemExit(3)  # what a warm shutdown may raise inside a handler

    registry.register("down", going_down)
    q = TracingDispatcher()
    engine = Engine(pg_database_url, dispatcher=q, registry=registry)
    engines.append(engine)
    engine.deploy(
        Process("down")
        .start("s")
        .service_task("a", handler="down")
        .end("e")
        .sequence("s", "a", "e")
    )
    inst = engine.start("down")
    with pytest.raises(SystemExit):
        q.run(engine)
    step = spans.step("a")
    assert step.status.status_code is StatusCode.ERROR
    assert step.status.description == "SystemExit: 3"
    assert step.end_time is not None and "bpm.outcome" not in (step.attributes or {})
    # nothing committed: the step is still held, its lease runs out as for a dead worker
    assert engine.get_instance(inst.id).state.value == "active"


def test_a_start_through_the_rest_api_joins_the_caller_s_trace(
    pg_database_url: str, spans: Spans, engines: list[Engine]
) -> None:
    q = TracingDispatcher()
    engine = Engine(pg_database_url, dispatcher=q)
    engines.append(engine)
    definition = engine.deploy(fork_process())
    app = create_app(engine, open_access=True, api_keys=[])
    tracer = tracing.tracer()
    assert tracer is not None

    async def start(path: str, headers: dict[str, str]) -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.post(
                f"/engine-rest/process-definition/{path}/start",
                json={"businessKey": "b-1"},
                headers=headers,
            )

    with spans.provider.get_tracer("client").start_as_current_span("client") as client:
        by_key = asyncio.run(start("key/traced", tracer.inject(tracer.current())))
        by_id = asyncio.run(start(definition.id, tracer.inject(tracer.current())))
    untraced = asyncio.run(start("key/traced", {}))  # no traceparent: a trace of its own
    assert [r.status_code for r in (by_key, by_id, untraced)] == [200, 200, 200]
    first, second, alone = spans.named("bpm.start")
    assert parent_of(first) == parent_of(second) == client.get_span_context().span_id
    assert alone.parent is None
    assert first.attributes and first.attributes["bpm.instance_id"] == by_key.json()["id"]
    assert second.attributes == {
        "bpm.business_key": "b-1",
        "bpm.definition_id": definition.id,
        "bpm.instance_id": by_id.json()["id"],
        "bpm.process": "traced",
    }
    # the first steps' messages carry each start's context
    parents = [tracer.extract(headers) for _, headers in q.queue]
    assert len(parents) == 3 and all(p is not None for p in parents)


def test_steps_whose_message_brings_no_trace_join_their_instance_s_start(
    pg_database_url: str, spans: Spans, engines: list[Engine]
) -> None:
    """A retry after its backoff (published by the timer that ends the backoff) and a step
    published again by the sweeper carry no trace: the retry's span gets its failed
    attempt's parent (which ``attempt_failed`` keeps), the swept step's is a child of the
    start, whose trace the ``instance_started`` history event keeps."""
    registry = HandlerRegistry()

    def flaky(ctx: TaskContext) -> None:
        if ctx.attempt == 1:
            raise RuntimeError("try again later")

    registry.register("flaky", flaky)
    registry.register("work", lambda ctx: None)
    q = TracingDispatcher()
    engine = Engine(pg_database_url, dispatcher=q, registry=registry)
    engines.append(engine)
    engine.deploy(
        Process("later")
        .start("s")
        .service_task("pay", handler="flaky", retry=RetryPolicy.fixed(2, 5))
        .end("e")
        .sequence("s", "pay", "e")
    )
    engine.deploy(
        Process("lost")
        .start("s")
        .service_task("a", handler="work")
        .end("e")
        .sequence("s", "a", "e")
    )
    t0 = datetime.now(UTC)
    shop = spans.provider.get_tracer("shop")
    with shop.start_as_current_span("POST /later"):
        later = engine.start("later", now=t0)
    q.run(engine)  # pay, attempt 1: fails, waits 5 s
    with shop.start_as_current_span("POST /lost"):
        lost = engine.start("lost", now=t0)
    q.queue.clear()  # the broker lost the first step of "lost"
    # the backoff's timer fires (no span current): the retry's message carries no trace
    assert engine.fire_due_timers(now=t0 + timedelta(seconds=6)) == 1
    assert [headers for _, headers in q.queue] == [{}]
    q.run(engine)
    # the sweeper publishes the lost step again, without a trace either
    assert engine.redispatch_stale_ready(now=t0 + timedelta(seconds=60)) == 1
    assert [headers for _, headers in q.queue] == [{}]
    q.run(engine)
    for inst in (later, lost):
        assert engine.get_instance(inst.id).state.value == "completed"
    starts = {s.attributes["bpm.process"]: s for s in spans.named("bpm.start") if s.attributes}
    first, second = spans.step("pay", 1), spans.step("pay", 2)
    assert parent_of(first) == span_id(starts["later"])  # through its message
    assert parent_of(second) == span_id(starts["later"])  # through the failed attempt's record
    assert trace_id(second) == trace_id(starts["later"])
    swept = spans.step("a")
    assert parent_of(swept) == span_id(starts["lost"])
    assert trace_id(swept) == trace_id(starts["lost"]) != trace_id(starts["later"])
    started = [e for e in engine.history(later.id) if e.type == "instance_started"]
    assert started[0].payload["trace"]["traceparent"].split("-")[1] == format(
        trace_id(second), "032x"
    )


@pytest.mark.parametrize("delay", [0.0, 5.0], ids=["immediate", "after-backoff"])
def test_every_attempt_of_a_step_has_its_first_attempt_s_parent(
    pg_database_url: str, spans: Spans, engines: list[Engine], delay: float
) -> None:
    """``a -> pay``: each attempt of ``pay`` is a child of ``a``'s span (the step that made
    it Ready), whether the retry is published at once by the failed attempt or, after its
    backoff, by a timer whose message brings no trace (then ``attempt_failed`` says)."""
    registry = HandlerRegistry()
    registry.register("work", lambda ctx: None)

    def flaky(ctx: TaskContext) -> None:
        if ctx.attempt < 3:
            raise RuntimeError(f"declined {ctx.attempt}")

    registry.register("flaky", flaky)
    q = TracingDispatcher()
    engine = Engine(pg_database_url, dispatcher=q, registry=registry)
    engines.append(engine)
    engine.deploy(
        Process("siblings")
        .start("s")
        .service_task("a", handler="work")
        .service_task("pay", handler="flaky", retry=RetryPolicy.fixed(3, delay))
        .end("e")
        .sequence("s", "a", "pay", "e")
    )
    t0 = datetime.now(UTC)
    inst = engine.start("siblings", now=t0)
    q.run(engine)
    for n in (1, 2):  # the backoffs' timers (no span current)
        if delay:
            assert engine.fire_due_timers(now=t0 + timedelta(seconds=6 * n)) == 1
            assert [headers for _, headers in q.queue] == [{}]
            q.run(engine)
    assert engine.get_instance(inst.id).state.value == "completed"
    a = spans.step("a")
    attempts = [spans.step("pay", n) for n in (1, 2, 3)]
    assert [parent_of(s) for s in attempts] == [span_id(a)] * 3
    assert {trace_id(s) for s in attempts} == {trace_id(a)}
    failed = [e for e in engine.history(inst.id) if e.type == "attempt_failed"]
    assert [e.payload["trace"]["traceparent"].split("-")[2] for e in failed] == [
        format(span_id(a), "016x")
    ] * 2
