"""Where each task of an app goes once the engine is installed into it.

The engine's tasks go to the engine's queue through the app's ``task_routes`` (Celery 5.7
deprecates the ``queue`` task attribute, 6.0 ignores it); the app's own tasks keep their
routes and its default queue. Messages are sent through Celery's in-memory broker and read
back from the queues they landed in.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from celery import Celery
from celery.exceptions import CDeprecationWarning

from bpm.contrib.celery import RUN_TOKEN, WorkerSettings, install
from bpm.contrib.celery.beat_tasks import SWEEPS
from bpm.contrib.celery.publisher import RUN_BATCH_CHUNK
from bpm.contrib.celery.tasks import EngineRoutes

ENGINE_TASKS = (RUN_TOKEN, RUN_BATCH_CHUNK, *SWEEPS)


def _router(name: str, *_: Any, **__: Any) -> dict[str, str] | None:
    """An app's own router function (for the tasks of ``shop.``)."""
    return {"queue": "by-function"} if name.startswith("shop.") else None


def shop_app(routes: Any) -> Celery:
    app = Celery("shop", broker="memory://", set_as_current=False)
    app.conf.update(task_default_queue="shop-default", task_routes=routes)

    @app.task(name="shop.add", shared=False)
    def add(x: int, y: int) -> int:
        return x + y

    @app.task(name="shop.mail", shared=False)
    def mail(to: str) -> None:
        return None

    return app


@pytest.fixture
def installed() -> Iterator[Celery]:
    app = shop_app({"*": {"queue": "everything"}, "shop.mail": {"queue": "mail"}})
    install(app, WorkerSettings(database_url="sqlite:///unused.db"), queue="bpm-q", beat=False)
    yield app
    app.close()


def queue_of(app: Celery, name: str, **options: Any) -> str:
    route = app.amqp.router.route(dict(options), name)
    return str(route["queue"].name)


def landed(app: Celery, queue: str) -> list[str]:
    """The task names of the messages waiting in ``queue`` (read off the broker)."""
    names = []
    with app.connection_for_read() as conn:
        box = conn.SimpleQueue(queue)
        while True:
            try:
                message = box.get(timeout=0.05)
            except box.Empty:
                break
            names.append(str(message.headers["task"]))
            message.ack()
        box.close()
    return names


def test_the_engines_tasks_go_to_the_engines_queue_and_the_apps_keep_their_routes(
    installed: Celery,
) -> None:
    for name in ENGINE_TASKS:
        # a route of the app that matches every task does not move the engine's tasks
        assert queue_of(installed, name) == "bpm-q"
    assert queue_of(installed, "shop.add") == "everything"
    assert queue_of(installed, "shop.mail") == "mail"
    # an explicit queue of a call wins, as with any Celery route
    assert queue_of(installed, RUN_TOKEN, queue="elsewhere") == "elsewhere"


def test_messages_land_in_those_queues(installed: Celery) -> None:
    installed.tasks[RUN_TOKEN].apply_async(args=("token-1",))
    installed.tasks["bpm.fire_due_timers"].delay()
    installed.send_task("bpm.purge_history")
    installed.tasks["shop.add"].delay(2, 3)
    installed.tasks["shop.mail"].delay("a@example.com")
    assert landed(installed, "bpm-q") == [RUN_TOKEN, "bpm.fire_due_timers", "bpm.purge_history"]
    assert landed(installed, "everything") == ["shop.add"]
    assert landed(installed, "mail") == ["shop.mail"]


def test_the_engines_tasks_are_bound_without_celerys_deprecation_warning() -> None:
    app = shop_app(None)
    install(app, WorkerSettings(database_url="sqlite:///unused.db"), queue="bpm-q", beat=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        app.finalize()  # binds every task to the app: where Celery warns on `queue`
        for name in ENGINE_TASKS:
            assert app.tasks[name].acks_late is True
            assert "queue" not in type(app.tasks[name]).__dict__
    assert [w for w in caught if issubclass(w.category, CDeprecationWarning)] == []
    app.close()


@pytest.mark.parametrize(
    ("routes", "shop_queue"),
    [
        (None, "shop-default"),
        ({"shop.add": "adds"}, "adds"),
        ({"shop.*": {"queue": "adds"}}, "adds"),
        ([{"shop.add": "adds"}, {"*": "rest"}], "adds"),
        (({"shop.add": "adds"},), "adds"),
        (_router, "by-function"),
        ("tests.test_celery_routes._router", "by-function"),
    ],
    ids=["none", "mapping", "pattern", "list", "tuple", "function", "dotted-name"],
)
def test_every_form_of_the_apps_routes_is_kept_after_the_engines(
    routes: Any, shop_queue: str
) -> None:
    app = shop_app(routes)
    install(app, WorkerSettings(database_url="sqlite:///unused.db"), queue="bpm-q", beat=False)
    first, *rest = app.conf.task_routes
    assert isinstance(first, EngineRoutes) and first.names == frozenset(ENGINE_TASKS)
    assert len(rest) == (0 if routes is None else len(routes) if isinstance(routes, list) else 1)
    assert queue_of(app, RUN_TOKEN) == "bpm-q"
    assert queue_of(app, "shop.add") == shop_queue
    app.close()


def test_the_router_says_nothing_about_other_tasks() -> None:
    router = EngineRoutes("bpm-q", frozenset(ENGINE_TASKS))
    assert router(RUN_TOKEN) == {"queue": "bpm-q"}
    assert router("shop.add", (), {}, {}, task=None) is None
    assert router("bpm.unknown") is None
