"""A durable canvas: Celery's ``chain``, ``group``, ``chord``, ``chunks``, ``map`` and
``starmap`` over your tasks' signatures, run by the engine (import them from
:mod:`bpm.canvas`).

``chord(group(fetch.s(u) for u in urls), summarize.s()).apply_async()`` reads the canvas
(:mod:`.canvas_shape`: every member checked first, a :class:`CanvasError` and nothing
started for bad input), compiles its shape into a process deployed once
(:mod:`.canvas_compile`), and starts one instance with the arguments as variables. The
workers of the app the engine is installed in run each member inline
(:mod:`.canvas_run`): every member's state, result and retries are in PostgreSQL, so a
killed worker or a restarted broker delays the canvas and never hangs it. The result,
:class:`DurableResult`, reads the database from any process.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from typing import Any

from celery import Celery, current_app
from celery.canvas import Signature
from celery.exceptions import TimeoutError as CeleryTimeout

from bpm.contrib.celery.canvas_compile import RESULT_POINTER, compile_canvas
from bpm.contrib.celery.canvas_shape import (
    Call,
    CanvasError,
    Chain,
    Chord,
    Each,
    Group,
    Node,
    Reader,
)
from bpm.contrib.celery.runtime import ATTRIBUTE, Installation
from bpm.engine import Engine
from bpm.runtime.states import InstanceState

__all__ = [
    "CanvasError",
    "CanvasFailed",
    "DurableResult",
    "chain",
    "chord",
    "chunks",
    "durable",
    "group",
    "map",
    "starmap",
]


class CanvasFailed(CanvasError):
    """``get()`` of a canvas that failed: a member's attempts were used up (an incident an
    operator may retry, or its ``link_error`` path ran)."""


def _engine_for(app: Celery | None, engine: Engine | None) -> tuple[Engine, Celery]:
    app = app or current_app
    if engine is not None:
        return engine, app
    installation = getattr(app, ATTRIBUTE, None)
    if not isinstance(installation, Installation):
        raise CanvasError(
            f"the Celery app {app.main!r} has no engine: call "
            "bpm.contrib.celery.install(app, ...) first, or pass engine=..."
        )
    return installation.engine(), app


_deployed: dict[tuple[int, str], str] = {}
_deploy_lock = threading.Lock()


class Durable:
    """What every durable canvas shares: ``apply_async``, ``delay`` and ``|``."""

    def bpm_tree(self, reader: Reader) -> Node:
        raise NotImplementedError

    def __or__(self, other: Any) -> chain:
        return chain(self, other)

    def delay(self, *args: Any, **kwargs: Any) -> DurableResult:
        return self.apply_async(args, kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> DurableResult:
        return self.apply_async(args, kwargs)

    def apply_async(
        self,
        args: Iterable[Any] | None = None,
        kwargs: dict[str, Any] | None = None,
        *,
        app: Celery | None = None,
        engine: Engine | None = None,
        task_id: str | None = None,
        business_key: str | None = None,
        **_options: Any,
    ) -> DurableResult:
        """Check the canvas, deploy its shape (once), start it; returns its result.

        ``args`` / ``kwargs`` are given to the first task (to every member of a first
        group), as Celery does. ``task_id``: the start's idempotency key (the same id twice
        starts one canvas). Options Celery uses for routing (``queue``, ``countdown``...)
        are ignored: the engine runs the steps."""
        engine, app = _engine_for(app, engine)
        tree = Reader(app).node(self)
        if args or kwargs:
            tree = _partial(tree, tuple(args or ()), dict(kwargs or {}))
        compiled = compile_canvas(tree)
        cache = (id(engine), compiled.key)
        if cache not in _deployed:
            with _deploy_lock:
                if cache not in _deployed:
                    _deployed[cache] = engine.deploy(compiled.process).id
        inst = engine.start(
            compiled.key,
            variables=compiled.variables,
            idempotency_key=task_id,
            business_key=business_key,
        )
        return DurableResult(inst.id, engine=engine)


def _partial(node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    if isinstance(node, Call):
        return Call(
            node.task, args + node.args, {**node.kwargs, **kwargs}, node.immutable, node.on_error
        )
    if isinstance(node, Chain):
        return Chain((_partial(node.steps[0], args, kwargs), *node.steps[1:]))
    if isinstance(node, Group):
        return Group(tuple(_partial(m, args, kwargs) for m in node.members))
    if isinstance(node, Chord):
        header = _partial(node.header, args, kwargs)
        assert isinstance(header, Group)
        return Chord(header, node.body)
    raise CanvasError("arguments cannot be given to a map, starmap or chunks at apply_async")


class chain(Durable):
    """``chain(a.s(1), b.s(), c.s())``: each task gets the previous result first."""

    def __init__(self, *tasks: Any) -> None:
        if len(tasks) == 1 and not isinstance(tasks[0], Signature | Durable):
            tasks = tuple(tasks[0])
        self.tasks = tasks

    def bpm_tree(self, reader: Reader) -> Node:
        return reader.chain(self.tasks)


class group(Durable):
    """``group(fetch.s(u) for u in urls)``: every member at once; the result is the list
    of their results, in order."""

    def __init__(self, *tasks: Any) -> None:
        if len(tasks) == 1 and not isinstance(tasks[0], Signature | Durable):
            tasks = tuple(tasks[0])
        self.tasks = tasks

    def bpm_tree(self, reader: Reader) -> Node:
        return Group(tuple(reader.node(t, "group member") for t in self.tasks))


class chord(Durable):
    """``chord(header, body)`` or ``chord(header)(body)``: the body gets the list of the
    header's results once every member has finished."""

    def __init__(self, header: Any, body: Any = None) -> None:
        self.header = header
        self.body = body

    def __call__(self, body: Any = None, **options: Any) -> DurableResult:
        if body is None:
            raise CanvasError("chord(header)(body): give the body")
        return chord(self.header, body).apply_async(**options)

    def bpm_tree(self, reader: Reader) -> Node:
        if self.body is None:
            raise CanvasError("a chord needs a body: chord(header, body) or chord(header)(body)")
        header = reader.node(self.header, "chord header")
        if not isinstance(header, Group):
            header = Group((header,))
        return Chord(header, reader.node(self.body, "chord body"))


class durable(Durable):
    """``durable(celery_canvas)``: any canvas built with Celery's own classes (``a.s() |
    b.s()``, ``celery.group(...)``, ``sig.chunks(...)``), run by the engine."""

    def __init__(self, canvas: Any) -> None:
        self.canvas = canvas

    def bpm_tree(self, reader: Reader) -> Node:
        return reader.node(self.canvas)


class _each(Durable):
    def __init__(self, task: Any, it: Iterable[Any], n: int | None, star: bool) -> None:
        self.task, self.items, self.n, self.star = task, list(it), n, star

    def bpm_tree(self, reader: Reader) -> Node:
        name = reader.task_name(reader.signature(self.task, "map"))
        if self.n is not None:
            if self.n < 1:
                raise CanvasError(f"chunks({name}, ..., n): n must be at least 1")
            items = [tuple(_listed_item(i, name)) for i in self.items]
            parts = tuple(tuple(items[i : i + self.n]) for i in range(0, len(items), self.n))
            return Each(name, (), True, parts)
        items_read = tuple(_listed_item(i, name) if self.star else i for i in self.items)
        return Each(name, items_read, self.star)


def _listed_item(item: Any, name: str) -> list[Any]:
    if isinstance(item, list | tuple):
        return list(item)
    raise CanvasError(f"an item of {name}.starmap / chunks is {item!r}: give a tuple of arguments")


def chunks(task: Any, it: Iterable[Any], n: int) -> Durable:
    """``chunks(add.s(), zip(xs, ys), 10)``: the items in groups of ``n``, one step per
    group calling ``add(*item)`` for each item; the result is the list of their lists."""
    return _each(task, it, n, star=True)


def map(task: Any, it: Iterable[Any]) -> Durable:
    """``map(double.s(), [1, 2, 3])``: one step calling ``double(item)`` for each item."""
    return _each(task, it, None, star=False)


def starmap(task: Any, it: Iterable[Any]) -> Durable:
    """``starmap(add.s(), [(1, 2), (3, 4)])``: one step calling ``add(*item)`` per item."""
    return _each(task, it, None, star=True)


class DurableResult:
    """Celery's result API over a canvas instance: ``id`` (the instance id), ``state``,
    ``ready()``, ``successful()``, ``failed()``, ``get(timeout=)``, ``revoke()``. Every call
    reads the database, so it works from any process: ``DurableResult(id)``."""

    def __init__(self, id: str, *, engine: Engine | None = None, app: Celery | None = None):
        self.id = id
        self._engine = engine
        self._app = app

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            self._engine, _ = _engine_for(self._app, None)
        return self._engine

    def __repr__(self) -> str:
        return f"<DurableResult: {self.id}>"

    def _read(self) -> tuple[str, Any, str | None]:
        inst = self.engine.get_instance(self.id)
        variables = inst.variables
        # the error path of link_error sets error_message, then ends at a terminate end
        failure = variables.get("error_message")
        if inst.state in (InstanceState.COMPLETED, InstanceState.TERMINATED):
            if failure is not None:
                return "FAILURE", None, str(failure)
            if inst.state is InstanceState.TERMINATED:
                return "REVOKED", None, None
            pointer = variables.get(RESULT_POINTER)
            return "SUCCESS", variables.get(pointer) if pointer else None, None
        incident = self._incident_message()
        if inst.state is InstanceState.FAILED:
            return "FAILURE", None, incident or "failed"
        if incident is not None:
            return "FAILURE", None, incident
        return "STARTED", None, None

    def _incident_message(self) -> str | None:
        found = self.engine.incidents(self.id, limit=1)
        return found[0].message if found else None

    @property
    def state(self) -> str:
        """``STARTED``, ``SUCCESS``, ``FAILURE`` (an open incident, or the error path of
        ``link_error``) or ``REVOKED``."""
        return self._read()[0]

    status = state

    def ready(self) -> bool:
        return self.state in ("SUCCESS", "FAILURE", "REVOKED")

    def successful(self) -> bool:
        return self.state == "SUCCESS"

    def failed(self) -> bool:
        return self.state == "FAILURE"

    @property
    def result(self) -> Any:
        """The result when it succeeded, else None."""
        return self._read()[1]

    def get(
        self, timeout: float | None = None, propagate: bool = True, interval: float = 0.05
    ) -> Any:
        """Wait for the canvas (reading the database with a growing interval, up to 1 s),
        return its result; :class:`CanvasFailed` when it failed (``propagate``), Celery's
        ``TimeoutError`` after ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        wait = interval
        while True:
            state, value, error = self._read()
            if state == "SUCCESS":
                return value
            if state in ("FAILURE", "REVOKED"):
                if propagate:
                    raise CanvasFailed(f"canvas {self.id}: {state}: {error or 'revoked'}")
                return None
            if deadline is not None and time.monotonic() >= deadline:
                raise CeleryTimeout(f"canvas {self.id} is not ready after {timeout}s")
            left = None if deadline is None else deadline - time.monotonic()
            time.sleep(min(wait, left) if left is not None else wait)
            wait = min(wait * 1.5, 1.0)

    def revoke(self, terminate: bool = True, **_options: Any) -> None:
        """Terminate the canvas instance: every member still to run is cancelled."""
        inst = self.engine.get_instance(self.id)
        if inst.state in (InstanceState.ACTIVE, InstanceState.SUSPENDED):
            self.engine.terminate(self.id, reason="revoked")
