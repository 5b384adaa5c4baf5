"""A Celery canvas read into a plain tree, checked before anything starts.

:func:`read` turns Celery's own signatures and canvases (``task.s()``, ``chain``, ``group``,
``chord``, ``chunks``, ``xmap``, ``xstarmap``, and the durable ones of :mod:`bpm.canvas`)
into :class:`Call`, :class:`Chain`, :class:`Group`, :class:`Chord` and :class:`Each`
values. Every member must be a signature of a task the app knows, with JSON arguments;
anything else is a :class:`CanvasError` naming the member, raised before an instance
exists.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from celery import Celery
from celery.canvas import Signature, _chain, chunks, group, xmap, xstarmap
from celery.canvas import chord as celery_chord

from bpm.errors import BpmError


class CanvasError(BpmError):
    """A canvas that cannot run: a member that is not a signature, an unknown task,
    arguments that are not JSON. Nothing was started."""


@dataclass(frozen=True)
class Call:
    """One task call: ``task(*args, **kwargs)``, after the parent's result unless
    ``immutable``; ``on_error``: the errbacks of ``link_error``."""

    task: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    immutable: bool = False
    on_error: tuple[Call, ...] = ()


@dataclass(frozen=True)
class Each:
    """One task over many items in one step: ``xmap`` (``task(item)``), ``xstarmap``
    (``task(*item)``); ``chunked`` (``chunks``): a group of such steps, one per chunk."""

    task: str
    items: tuple[Any, ...]
    star: bool
    chunked: tuple[tuple[Any, ...], ...] | None = None


@dataclass(frozen=True)
class Chain:
    steps: tuple[Node, ...]


@dataclass(frozen=True)
class Group:
    members: tuple[Node, ...]

    @property
    def same_task(self) -> str | None:
        """The task of every member, when each is a plain call of one task (the group then
        runs as one multi-instance step, whatever its size)."""
        names = {m.task for m in self.members if isinstance(m, Call) and not m.on_error}
        if len(names) == 1 and all(isinstance(m, Call) and not m.on_error for m in self.members):
            return names.pop()
        return None


@dataclass(frozen=True)
class Chord:
    header: Group
    body: Node


Node = Call | Each | Chain | Group | Chord


def _json(value: Any, where: str) -> Any:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise CanvasError(
            f"{where}: {exc}; a durable canvas keeps every argument and result in the "
            "database as JSON: pass JSON values (ids, not objects)"
        ) from None
    return value


class Reader:
    """Reads one canvas against the tasks of ``app`` (see :func:`read`)."""

    def __init__(self, app: Celery | None) -> None:
        self.app = app

    def task_name(self, sig: Signature[Any]) -> str:
        name = sig.get("task")
        if not isinstance(name, str) or not name:
            raise CanvasError(f"the signature {sig!r} names no task")
        app = self.app or getattr(sig, "_app", None)
        known = getattr(app, "tasks", None) if app is not None else None
        if known is not None and name not in known:
            raise CanvasError(
                f"no task named {name!r} in the Celery app {getattr(app, 'main', '?')!r}: "
                "import the module that defines it (or fix the name)"
            )
        return name

    def call(self, sig: Signature[Any]) -> Call:
        name = self.task_name(sig)
        args = tuple(_json(list(sig.args or ()), f"the arguments of {name}"))
        kwargs = _json(dict(sig.kwargs or {}), f"the keyword arguments of {name}")
        options = sig.options or {}
        errbacks = options.get("link_error") or ()
        if isinstance(errbacks, Signature | dict):
            errbacks = [errbacks]
        on_error = tuple(self.call(self.signature(e, "link_error")) for e in errbacks)
        if options.get("link"):
            raise CanvasError(
                f"link= on {name}: write the callback as the next step of a chain instead"
            )
        return Call(name, args, kwargs, bool(sig.immutable), on_error)

    def signature(self, value: Any, where: str) -> Signature[Any]:
        if isinstance(value, Signature):
            return value
        if isinstance(value, dict) and "task" in value:
            return Signature.from_dict(value, app=self.app)
        raise CanvasError(
            f"{where}: {value!r} is not a Celery signature; write task.s(...) or task.si(...)"
        )

    def node(self, value: Any, where: str = "canvas member") -> Node:
        tree = getattr(value, "bpm_tree", None)  # a durable canvas of bpm.canvas
        if callable(tree):
            found: Node = tree(self)
            return found
        sig = self.signature(value, where)
        if isinstance(sig, celery_chord):
            header = self.group(sig.tasks)
            body = sig.body
            if body is None:
                raise CanvasError(
                    "a chord needs a body: chord(header, body) or chord(header)(body)"
                )
            return Chord(header, self.node(body, "chord body"))
        if isinstance(sig, group):
            return self.group(sig.tasks)
        if isinstance(sig, _chain):
            return self.chain(sig.tasks)
        if isinstance(sig, chunks):
            inner = self.signature(sig.kwargs["task"], "chunks")
            name = self.task_name(inner)
            items = [tuple(_json(list(i), f"an item of {name}.chunks")) for i in sig.kwargs["it"]]
            size = int(sig.kwargs["n"])
            if size < 1:
                raise CanvasError(f"{name}.chunks(..., n): n must be at least 1")
            parts = tuple(tuple(items[i : i + size]) for i in range(0, len(items), size))
            return Each(name, (), True, parts)
        if isinstance(sig, xmap | xstarmap):
            inner = self.signature(sig.kwargs["task"], "map")
            name = self.task_name(inner)
            star = isinstance(sig, xstarmap)
            listed = tuple(_json(list(sig.kwargs["it"]), f"the items of {name}.map"))
            return Each(name, listed, star)
        return self.call(sig)

    def group(self, members: Any) -> Group:
        if isinstance(members, group):
            members = members.tasks
        if isinstance(members, Signature) and not isinstance(members, group):
            members = [members]
        return Group(tuple(self.node(m, "group member") for m in _listed(members)))

    def chain(self, steps: Any) -> Chain:
        read = tuple(self.node(s, "chain step") for s in _listed(steps))
        if not read:
            raise CanvasError("an empty chain: give it at least one signature")
        return Chain(read)


def _listed(values: Any) -> list[Any]:
    if isinstance(values, Signature | dict):
        return [values]
    if isinstance(values, Iterable) and not isinstance(values, str | bytes):
        return list(values)
    raise CanvasError(f"{values!r} is not a signature nor a sequence of signatures")


def read(value: Any, app: Celery | None = None) -> Node:
    """The tree of a canvas (see the module docstring); a :class:`CanvasError` for bad input."""
    return Reader(app).node(value)
