"""Running a canvas step: the ``canvas:TASK`` handlers (see :mod:`.canvas_compile` for the
variables they read). A step calls the task inline with its signature's arguments, after
the parent's result unless the signature is immutable, exactly as Celery would, and writes
the result (a multi-instance member writes it as its output, gathered in order)."""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping
from typing import Any

from celery import Celery, Task

from bpm.contrib.celery.canvas_compile import CANVAS_TASK
from bpm.contrib.celery.handlers import REDELIVER, call_inline, function_of, retry_policy
from bpm.errors import StepFailed
from bpm.handlers import HandlerRegistry, HandlerSpec, TaskContext


def _json_result(task: Task, value: Any) -> Any:  # type: ignore[type-arg]
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise StepFailed(
            f"the result of {task.name} is not JSON ({exc}): a durable canvas keeps results "
            "in the database; return JSON values",
            retry=False,
        ) from None
    return value


def _errback_args(task: Task, ctx: TaskContext, failed: str) -> list[Any]:  # type: ignore[type-arg]
    """Celery's errback calls: ``(request, exc, traceback)`` for a function of three
    parameters or more, else ``(task_id,)``; here the request is a mapping with the failed
    step's ``id`` and ``task``, the exception its message."""
    failed_id = f"{ctx.instance_id}:{failed}"
    try:
        params = [
            p
            for p in inspect.signature(function_of(task)).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        params = []
    if len(params) >= 3:
        request = {"id": failed_id, "node": failed}
        return [request, ctx.variables.get("error_message"), None]
    return [failed_id]


def run_step(task: Task, ctx: TaskContext) -> Mapping[str, Any] | None:  # type: ignore[type-arg]
    path = ctx.node_id.removeprefix("t_")
    spec: Mapping[str, Any] = ctx.variables.get(f"c_{path}") or {}
    call: Mapping[str, Any] = ctx.variables.get("_call") or spec
    args = list(call.get("a") or ())
    kwargs = dict(call.get("k") or {})
    given = spec.get("i")
    if given and not call.get("m"):
        args.insert(0, ctx.variables.get(given))
    if spec.get("f"):
        args = _errback_args(task, ctx, str(spec["f"])) + args
    if "s" in call:
        result: Any = [call_inline(task, ctx, list(item), {}) for item in call["s"]]
    elif "e" in call:
        result = [call_inline(task, ctx, [item], {}) for item in call["e"]]
    else:
        result = call_inline(task, ctx, args, kwargs)
    result = _json_result(task, result)
    if "_call" in ctx.variables:  # one member of a group: its output, gathered in order
        ctx.set_local("_out", result)
        return None
    return {f"r_{path}": result}


class CanvasResolver:
    """Resolves ``canvas:NAME`` to a step running the task NAME of ``app``."""

    def __init__(self, app: Celery) -> None:
        self.app = app
        self._specs: dict[str, HandlerSpec] = {}

    def __call__(self, task_name: str) -> HandlerSpec | None:
        found = self._specs.get(task_name)
        if found is not None:
            return found
        task = self.app.tasks.get(task_name)
        if task is None:
            return None

        def handler(ctx: TaskContext) -> Mapping[str, Any] | None:
            return run_step(task, ctx)

        spec = HandlerSpec(
            CANVAS_TASK + task_name, handler, retry=retry_policy(task), lost_worker_delay=REDELIVER
        )
        self._specs[task_name] = spec
        return spec


def resolve_canvas(app: Celery, registry: HandlerRegistry) -> None:
    """Let ``registry`` run the canvas steps of ``app``'s tasks."""
    registry.resolve_prefix(CANVAS_TASK, CanvasResolver(app))
