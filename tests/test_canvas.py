"""The durable canvas in process on both backends: Celery's call signatures over the app's
own task signatures, compiled into one definition per shape, run by the engine, read back
through the result object; bad input refused at apply_async with nothing started."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from celery import Celery
from celery import chain as celery_chain
from celery import group as celery_group

from bpm import Engine, InstanceState
from bpm.canvas import (
    CanvasError,
    CanvasFailed,
    DurableResult,
    chain,
    chord,
    chunks,
    durable,
    group,
    starmap,
)
from bpm.canvas import map as cmap
from bpm.contrib.celery.canvas_run import resolve_canvas
from bpm.handlers import HandlerRegistry
from tests.engine_helpers import QueueDispatcher, drain, make_engine

calls: list[tuple[str, Any]] = []


def make_app() -> Celery:
    app = Celery("canvas-shop", set_as_current=False)

    @app.task(name="shop.fetch", shared=False)
    def fetch(url: str) -> int:
        calls.append(("fetch", url))
        return len(url)

    @app.task(name="shop.add", shared=False)
    def add(x: int, y: int) -> int:
        calls.append(("add", (x, y)))
        return x + y

    @app.task(name="shop.total", shared=False)
    def total(values: list[int], bonus: int = 0) -> int:
        return sum(values) + bonus

    @app.task(name="shop.double", shared=False)
    def double(x: int) -> int:
        return 2 * x

    @app.task(name="shop.boom", shared=False)
    def boom(x: Any = None) -> None:
        raise RuntimeError("boom")

    @app.task(name="shop.object", shared=False)
    def obj() -> Any:
        return object()

    @app.task(name="shop.on_error", shared=False)
    def on_error(request: dict[str, Any], exc: str, traceback: Any) -> str:
        calls.append(("on_error", (request["node"], exc)))
        return "handled"

    return app


@pytest.fixture
def app() -> Celery:
    calls.clear()
    return make_app()


@pytest.fixture
def env(database_url: str, app: Celery) -> Iterator[tuple[Engine, QueueDispatcher]]:
    reg = HandlerRegistry()
    resolve_canvas(app, reg)
    engine, q = make_engine(database_url, reg)
    yield engine, q
    engine.close()  # its pool's connections, else a ResourceWarning in whichever test is next


def run(canvas: Any, env: tuple[Engine, QueueDispatcher], app: Celery) -> DurableResult:
    engine, q = env
    result = canvas.apply_async(engine=engine, app=app)
    drain(engine, q)
    return result


def test_a_chord_over_a_group_is_one_definition_whatever_its_size(
    env: tuple[Engine, QueueDispatcher], app: Celery
) -> None:
    fetch, total = app.tasks["shop.fetch"], app.tasks["shop.total"]
    urls = ["a", "bb", "ccc"]
    first = run(chord(group(fetch.s(u) for u in urls), total.s(bonus=10)), env, app)
    assert first.state == "SUCCESS" and first.ready() and first.successful()
    assert first.get(timeout=1) == 1 + 2 + 3 + 10
    bigger = run(chord(group(fetch.s(u) for u in urls * 5), total.s()), env, app)
    assert bigger.get(timeout=1) == 5 * 6
    engine, _ = env
    a, b = engine.get_instance(first.id), engine.get_instance(bigger.id)
    assert a.definition_id == b.definition_id  # one definition per shape, reused
    assert sorted(u for kind, u in calls if kind == "fetch") == sorted(urls * 6)


def test_celerys_own_group_and_pipe_inside_a_durable_chord(
    env: tuple[Engine, QueueDispatcher], app: Celery
) -> None:
    add, double, total = (app.tasks[n] for n in ("shop.add", "shop.double", "shop.total"))
    header = celery_group(add.s(1, 2), add.s(3, 4) | double.s())  # mixed: two branches
    assert run(chord(header, total.s()), env, app).get(timeout=1) == 3 + 14


def test_a_chain_passes_each_result_on_and_si_does_not(
    env: tuple[Engine, QueueDispatcher], app: Celery
) -> None:
    add, double = app.tasks["shop.add"], app.tasks["shop.double"]
    assert run(chain(add.s(1, 2), double.s(), add.s(4)), env, app).get(timeout=1) == 10
    assert run(chain(add.s(1, 2), double.si(5)), env, app).get(timeout=1) == 10
    assert run(durable(celery_chain(add.s(1, 1), double.s())), env, app).get(timeout=1) == 4


def test_a_group_alone_gives_the_list_of_results_in_order(
    env: tuple[Engine, QueueDispatcher], app: Celery
) -> None:
    double = app.tasks["shop.double"]
    assert run(group(double.s(i) for i in range(5)), env, app).get(timeout=1) == [0, 2, 4, 6, 8]
    assert run(chord(group(), app.tasks["shop.total"].s()), env, app).get(timeout=1) == 0


def test_map_starmap_and_chunks(env: tuple[Engine, QueueDispatcher], app: Celery) -> None:
    add, double = app.tasks["shop.add"], app.tasks["shop.double"]
    assert run(cmap(double.s(), [1, 2, 3]), env, app).get(timeout=1) == [2, 4, 6]
    assert run(starmap(add.s(), [(1, 2), (3, 4)]), env, app).get(timeout=1) == [3, 7]
    pairs = list(zip(range(5), range(5), strict=True))
    assert run(chunks(add.s(), pairs, 2), env, app).get(timeout=1) == [[0, 2], [4, 6], [8]]
    assert run(durable(add.chunks(pairs, 3)), env, app).get(timeout=1) == [[0, 2, 4], [6, 8]]


def test_link_error_is_the_error_path(env: tuple[Engine, QueueDispatcher], app: Celery) -> None:
    boom, on_error = app.tasks["shop.boom"], app.tasks["shop.on_error"]
    sig = boom.s()
    sig.link_error(on_error.s())
    result = run(chain(sig, app.tasks["shop.double"].s()), env, app)
    assert result.state == "FAILURE" and result.failed()
    with pytest.raises(CanvasFailed, match="RuntimeError: boom"):
        result.get(timeout=1)
    assert calls == [("on_error", ("t_0_0", "RuntimeError: boom"))]


def test_a_failing_member_without_link_error_is_a_failure_an_operator_may_retry(
    env: tuple[Engine, QueueDispatcher], app: Celery
) -> None:
    result = run(chord(group(app.tasks["shop.boom"].s()), app.tasks["shop.total"].s()), env, app)
    assert result.state == "FAILURE"
    assert result.get(propagate=False, timeout=1) is None
    engine, _ = env
    assert engine.get_instance(result.id).state is InstanceState.ACTIVE
    (incident,) = engine.incidents(result.id)
    assert incident.message == "RuntimeError: boom"


def test_a_result_that_is_not_json_fails_the_step_saying_so(
    env: tuple[Engine, QueueDispatcher], app: Celery
) -> None:
    result = run(chain(app.tasks["shop.object"].s()), env, app)
    with pytest.raises(CanvasFailed, match=r"result of shop\.object is not JSON"):
        result.get(timeout=1)


def test_revoke_terminates_and_the_result_reads_from_anywhere(
    env: tuple[Engine, QueueDispatcher], app: Celery
) -> None:
    engine, q = env
    result = chain(app.tasks["shop.double"].s(2)).apply_async(engine=engine, app=app)
    elsewhere = DurableResult(result.id, engine=engine)
    assert elsewhere.state == "STARTED" and not elsewhere.ready()
    elsewhere.revoke()
    assert result.state == "REVOKED"
    assert engine.get_instance(result.id).state is InstanceState.TERMINATED
    from celery.exceptions import TimeoutError as CeleryTimeout

    other = chain(app.tasks["shop.double"].s(2)).apply_async(engine=engine, app=app)
    with pytest.raises(CeleryTimeout):
        other.get(timeout=0.1)
    drain(engine, q)
    assert other.get(timeout=1) == 4


def test_task_id_is_the_idempotency_key(env: tuple[Engine, QueueDispatcher], app: Celery) -> None:
    engine, _ = env
    sig = chain(app.tasks["shop.double"].s(2))
    a = sig.apply_async(engine=engine, app=app, task_id="order-42")
    b = sig.apply_async(engine=engine, app=app, task_id="order-42")
    assert a.id == b.id


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda app: chord(group(app.tasks["shop.add"].s(1, 2), 42), app.tasks["shop.total"].s()),
         "42 is not a Celery signature"),
        (lambda app: chain(app.signature("shop.nope"), app.tasks["shop.total"].s()),
         "no task named 'shop.nope'"),
        (lambda app: chain(app.tasks["shop.fetch"].s(object())), "arguments of shop.fetch"),
        (lambda app: chord(group(app.tasks["shop.add"].s(1, 2))), "needs a body"),
        (lambda app: chain(), "empty chain"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_at_apply_async_and_nothing_starts(
    env: tuple[Engine, QueueDispatcher], app: Celery, make: Any, message: str
) -> None:
    engine, q = env
    with pytest.raises(CanvasError, match=message):
        make(app).apply_async(engine=engine, app=app)
    assert engine.instances() == [] and not q.published
