"""Celery tasks as handlers: a service task runs an existing Celery task inline.

``bpm:celeryTask="shop.tasks.charge"`` (or the builder's ``task=charge``) names the handler
``celery:shop.tasks.charge``; :func:`~bpm.contrib.celery.install` resolves it to the task of
that name on the installed app. The engine then calls the task's function in the worker
that holds the step's lease, under its idempotency key; no second message is sent.

* **Arguments** come from the variables of the parameters' names (the step's view: the
  instance's variables and those of the scopes around it); a parameter with a default may
  be missing, one without a default may not (a final failure saying which).
* **The result**: a mapping is merged into the variables; None sets nothing; any other
  value goes to the variable named by ``bpm:resultVariable`` (builder ``result=``), by
  default the task id.
* **Retries** follow the task's own settings: exceptions in ``autoretry_for`` are retried
  (``max_retries`` + 1 attempts in all, ``retry_kwargs``; ``retry_backoff`` /
  ``retry_backoff_max`` as the engine's exponential backoff with full jitter, else
  ``default_retry_delay`` between attempts); ``self.retry(countdown=..., max_retries=...)``
  is a retry of the same token after that countdown; any other exception fails the step
  for good (the task's failure action, an incident by default), as it fails the task in
  Celery. A retry policy on the model (``bpm:retry``) replaces the number and the delays.
* **A lost worker** (its process killed, its lease run out) is a failed attempt too, counted
  like any other (an incident when none is left, so a task that kills its worker does not
  loop), but the next attempt is due at once, without the task's retry delay: Celery, with
  late acks, redelivers a lost worker's message at once as well.
* **The request**: a bound task sees ``self.request.id`` = the step's idempotency key
  (``instance:node:token``, the same on every attempt and after every crash),
  ``self.request.retries`` = attempt - 1, ``root_id`` = the instance id, and the step in
  ``self.request.headers`` (``bpm_instance_id``, ``bpm_node_id``, ``bpm_attempt``).

Time limits of the task are not applied inline (the lease and the heartbeat look after a
long run); results are never sent to a result backend: the variables are the result.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from celery import Celery, Task
from celery.exceptions import Retry

from bpm.errors import StepFailed
from bpm.handlers import CELERY_TASK, RESULT_VARIABLE, HandlerRegistry, HandlerSpec, TaskContext
from bpm.retry import RetryPolicy

# Celery's max_retries=None retries for ever; the engine counts attempts.
FOREVER = 2**31 - 1
# A lost worker's attempt is run again at once (HandlerSpec.lost_worker_delay), as
# Celery's late acks redeliver its message at once: never after default_retry_delay.
REDELIVER = timedelta(0)
_MARKER = "bpm_step"


def retry_policy(task: Task) -> RetryPolicy:  # type: ignore[type-arg]
    """The step's retry policy from the task's ``max_retries``, ``retry_kwargs``,
    ``retry_backoff``, ``retry_backoff_max`` and ``default_retry_delay``."""
    kwargs = dict(getattr(task, "retry_kwargs", None) or {})
    max_retries = kwargs.get("max_retries", task.max_retries)
    attempts = FOREVER if max_retries is None else int(max_retries) + 1
    backoff = getattr(task, "retry_backoff", False)
    if backoff:
        factor = int(max(1.0, float(backoff)))
        ceiling = int(getattr(task, "retry_backoff_max", 600) or 600)
        return RetryPolicy.exponential(attempts, float(factor), float(max(ceiling, factor)))
    countdown = kwargs.get("countdown", task.default_retry_delay)
    return RetryPolicy.fixed(attempts, float(countdown or 0))


def _parameters(fn: Callable[..., Any]) -> list[inspect.Parameter]:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return []
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [p for p in signature.parameters.values() if p.kind in kinds]


def arguments_from(
    task: Task,  # type: ignore[type-arg]
    variables: Mapping[str, Any],
) -> dict[str, Any]:
    """The keyword arguments of ``task.run`` read from ``variables`` by parameter name."""
    out: dict[str, Any] = {}
    missing: list[str] = []
    for param in _parameters(function_of(task)):
        if param.name in variables:
            out[param.name] = variables[param.name]
        elif param.default is inspect.Parameter.empty:
            missing.append(param.name)
    if missing:
        raise StepFailed(
            f"the Celery task {task.name} needs the variable(s) {', '.join(missing)}, which "
            "the step does not see: set them before this task (or give the parameters "
            "defaults)",
            retry=False,
        )
    return out


def call_inline(
    task: Task,  # type: ignore[type-arg]
    ctx: TaskContext,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
) -> Any:
    """Run ``task``'s function in this thread as the step of ``ctx``: its request says who
    it runs for, ``self.retry()`` and its exceptions become the step's failure."""
    _own_retry(task)
    task.push_request(
        id=ctx.idempotency_key,
        retries=ctx.attempt - 1,
        args=list(args),
        kwargs=dict(kwargs),
        root_id=ctx.instance_id,
        parent_id=None,
        is_eager=False,
        called_directly=False,
        delivery_info={"is_eager": False},
        headers={
            "bpm_instance_id": ctx.instance_id,
            "bpm_node_id": ctx.node_id,
            "bpm_attempt": ctx.attempt,
        },
        **{_MARKER: True},
    )
    try:
        return function_of(task)(*args, **kwargs)
    except (StepFailed, Retry):
        raise
    except Exception as exc:
        retried_for = tuple(getattr(task, "autoretry_for", ()) or ())
        dont = tuple(getattr(task, "dont_autoretry_for", ()) or ())
        if retried_for and isinstance(exc, retried_for) and not isinstance(exc, dont):
            raise  # the step's policy (from the task's settings) retries it
        raise StepFailed(f"{type(exc).__name__}: {exc}", retry=False) from exc
    finally:
        task.pop_request()


def function_of(task: Task) -> Callable[..., Any]:  # type: ignore[type-arg]
    """The task's own function: without Celery's autoretry wrapper, whose retries (with
    Celery's random jitter) the engine's policy does instead."""
    found: Callable[..., Any] = getattr(task, "_orig_run", None) or task.run
    return found


_patched: set[int] = set()
_patch_lock = threading.Lock()


def _own_retry(task: Task) -> None:  # type: ignore[type-arg]
    """Make ``self.retry()`` of a task run as a step fail the attempt instead of sending a
    new message (elsewhere, in the app's own calls of the task, it is Celery's)."""
    if id(task) in _patched:
        return
    with _patch_lock:
        if id(task) in _patched:
            return
        celery_retry = task.retry

        def retry(
            args: Any = None,
            kwargs: Any = None,
            exc: Exception | None = None,
            throw: bool = True,
            eta: Any = None,
            countdown: float | None = None,
            max_retries: int | None = None,
            **options: Any,
        ) -> Any:
            request = task.request
            if not getattr(request, _MARKER, False):
                return celery_retry(
                    args=args,
                    kwargs=kwargs,
                    exc=exc,
                    throw=throw,
                    eta=eta,
                    countdown=countdown,
                    max_retries=max_retries,
                    **options,
                )
            delay = task.default_retry_delay if countdown is None else countdown
            cause = exc or Retry("Task can be retried", None)
            failed = StepFailed(
                f"retry asked by {task.name}: {type(cause).__name__}: {cause}",
                delay=timedelta(seconds=float(delay or 0)),
                max_attempts=None if max_retries is None else int(max_retries) + 1,
            )
            raise failed from cause

        task.retry = retry  # type: ignore[method-assign]
        _patched.add(id(task))


def result_variables(result: Any, ctx: TaskContext) -> Mapping[str, Any] | None:
    """A mapping as it is, None as nothing, any other value under the result variable."""
    if result is None:
        return None
    if isinstance(result, Mapping):
        return result
    return {ctx.properties.get(RESULT_VARIABLE) or ctx.node_id: result}


def spec_for(task: Task, name: str) -> HandlerSpec:  # type: ignore[type-arg]
    """The handler that runs ``task`` as a step (see the module docstring)."""

    def handler(ctx: TaskContext) -> Mapping[str, Any] | None:
        kwargs = arguments_from(task, ctx.variables)
        return result_variables(call_inline(task, ctx, (), kwargs), ctx)

    return HandlerSpec(name, handler, retry=retry_policy(task), lost_worker_delay=REDELIVER)


class TaskResolver:
    """Resolves ``celery:NAME`` to the task NAME of ``app`` (once per task and process)."""

    def __init__(self, app: Celery, prefix: str) -> None:
        self.app = app
        self.prefix = prefix
        self._specs: dict[str, HandlerSpec] = {}

    def __call__(self, task_name: str) -> HandlerSpec | None:
        found = self._specs.get(task_name)
        if found is not None:
            return found
        task = self.app.tasks.get(task_name)
        if task is None:
            return None
        spec = spec_for(task, self.prefix + task_name)
        self._specs[task_name] = spec
        return spec


def resolve_tasks(app: Celery, registry: HandlerRegistry) -> None:
    """Let ``registry`` resolve ``celery:NAME`` handler names to ``app``'s tasks."""
    registry.resolve_prefix(CELERY_TASK, TaskResolver(app, CELERY_TASK))
