"""Inline service-task handlers: registration and the context a handler receives."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Protocol

from bpm.errors import CompletionDenied, HandlerNotFound
from bpm.retry import RetryPolicy
from bpm.scripts import PYTHON_SCRIPT, run_step


class LeaseExtender(Protocol):
    def __call__(self, duration: timedelta | None = None) -> bool: ...


TASK_FIELDS: tuple[str, ...] = ("assignee", "owner", "name", "description", "priority")
"""The fields of a user task a task listener may change."""


@dataclass(frozen=True)
class TaskContext:
    """What a handler gets: a snapshot of the variables it sees (the instance's, and the
    local variables of every scope around the step, innermost winning) and who it is
    running for.

    ``idempotency_key`` is the same for every attempt of this step, so a handler can pass it
    to the systems it calls and have a retry recognised as a repeat.
    """

    instance_id: str
    node_id: str
    token_id: str
    attempt: int
    variables: Mapping[str, Any]
    business_key: str | None = None
    _extend: LeaseExtender | None = field(default=None, repr=False, compare=False)
    script: str | None = None
    """The script text of a script task run by this handler (None for service tasks)."""
    locals: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """What :meth:`set_local` set, written when the step finishes."""
    properties: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)
    """The task's extension properties (``camunda:properties``, the builder's
    ``properties=``, ``bpm:resultVariable``)."""
    task: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """In a task listener: the user task as the event left it (``id``, ``name``, ``assignee``,
    ``owner``, ``priority``, ``description``, ``candidate_groups``, ``candidate_users``,
    ``due_at``, ``event``); empty elsewhere."""
    task_changes: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """What :meth:`set_assignee` and :meth:`update_task` set, applied to the task when the
    step finishes."""

    @property
    def idempotency_key(self) -> str:
        return f"{self.instance_id}:{self.node_id}:{self.token_id}"

    def set_local(self, name: str | Mapping[str, Any], value: Any = None) -> None:
        """Set a variable local to the scope this step runs in (its sub-process, its
        multi-instance inner instance, its activity's own variables; at the top level of
        a process, the instance's), instead of where a returned variable would go.
        ``set_local({"a": 1, "b": 2})`` sets several. Written when the step finishes,
        like the variables it returns."""
        if isinstance(name, Mapping):
            self.locals.update(name)
        else:
            self.locals[name] = value

    def set_assignee(self, user_id: str | None) -> None:
        """In a task listener: make ``user_id`` the task's assignee (None: nobody), as
        Camunda's ``delegateTask.setAssignee``; applied when the step finishes."""
        self.task_changes["assignee"] = user_id

    def update_task(self, **fields: Any) -> None:
        """In a task listener: change the task's ``assignee``, ``owner``, ``name``,
        ``description`` or ``priority``; applied when the step finishes."""
        unknown = sorted(set(fields) - set(TASK_FIELDS))
        if unknown:
            raise TypeError(f"a task listener cannot set {', '.join(unknown)}")
        self.task_changes.update(fields)

    def deny(self, reason: str = "") -> None:
        """In a ``complete`` task listener: deny the completion (Zeebe's ``deny``); the task
        stays open and nothing of the completion is written."""
        raise CompletionDenied(reason)

    def extend_lease(self, duration: timedelta | None = None) -> bool:
        """Keep the lease on this step for ``duration`` (default: the task's lease) more.

        Returns False when the lease is already lost: the result will be dropped, so a long
        handler may stop early.
        """
        return self._extend(duration) if self._extend else True


Handler = Callable[[TaskContext], Mapping[str, Any] | None]


@dataclass(frozen=True)
class HandlerSpec:
    """A registered handler with its own retry policy and lease (both optional).

    ``lost_worker_delay``: when the worker running an attempt is lost (its lease ran out,
    or its process was proven dead), the next attempt is due after this delay instead of
    the retry policy's. The lost attempt still counts: when none is left, the failure
    action (an incident by default) follows. None: the policy's delay. Celery tasks run
    as handlers use 0, as Celery redelivers a lost worker's message at once.
    """

    name: str
    fn: Handler
    retry: RetryPolicy | None = None
    lease: timedelta | None = None
    lost_worker_delay: timedelta | None = None


CELERY_TASK = "celery:"
"""The handler names of Celery tasks run as handlers: ``celery:shop.tasks.charge`` (from
``bpm:celeryTask="shop.tasks.charge"`` or the builder's ``task=``). They are resolved by
:func:`bpm.contrib.celery.install` (``HandlerRegistry.resolve_prefix``)."""

RESULT_VARIABLE = "bpm:resultVariable"
"""The extension property naming the variable a handler's non-mapping result goes to."""

Resolver = Callable[[str], "HandlerSpec | None"]


def _python_script(ctx: TaskContext) -> Mapping[str, Any]:
    """The built-in handler of Python script tasks: the script runs in the sandbox
    (:mod:`bpm.scripts`), on the worker that claimed the step."""
    return run_step(
        f"'{ctx.node_id}'", ctx.script or "", ctx.variables, ctx.properties.get(RESULT_VARIABLE)
    )


LISTENER_STEP = "bpm:listeners"
"""The handler of the step that runs a node's listeners before a token enters it (a user
task, an event: nodes whose own work no worker runs). It does nothing itself."""

BUILTIN: Mapping[str, HandlerSpec] = {
    PYTHON_SCRIPT: HandlerSpec(PYTHON_SCRIPT, _python_script),
    LISTENER_STEP: HandlerSpec(LISTENER_STEP, lambda ctx: None),
}
"""Handlers every registry knows: ``bpm:python`` runs a Python script in the sandbox,
``bpm:listeners`` the listeners a node runs first."""


class HandlerRegistry:
    """Handlers by name. The module-level :data:`registry` is the default one.

    Besides the handlers registered by name, a registry may resolve the names that start
    with a prefix (:meth:`resolve_prefix`): the Celery integration resolves ``celery:NAME``
    to the Celery task NAME of an installed app, found when a step first needs it."""

    def __init__(self) -> None:
        self._specs: dict[str, HandlerSpec] = {}
        self._resolvers: list[tuple[str, Resolver]] = []

    def resolve_prefix(self, prefix: str, resolver: Resolver) -> None:
        """Resolve names starting with ``prefix`` with ``resolver(rest_of_name)`` (None:
        not found) when no handler is registered under the whole name."""
        self._resolvers.append((prefix, resolver))

    def _resolve(self, name: str) -> HandlerSpec | None:
        for prefix, resolver in self._resolvers:
            if name.startswith(prefix):
                spec = resolver(name[len(prefix) :])
                if spec is not None:
                    return spec
        return None

    def register(
        self,
        name: str,
        fn: Handler,
        *,
        retry: RetryPolicy | None = None,
        lease: timedelta | float | None = None,
    ) -> Handler:
        if not name:
            raise ValueError("a handler needs a non-empty name")
        if name in BUILTIN:
            raise ValueError(f"'{name}' is the engine's own handler: choose another name")
        lease_td = timedelta(seconds=lease) if isinstance(lease, int | float) else lease
        self._specs[name] = HandlerSpec(name, fn, retry, lease_td)
        return fn

    def get(self, name: str) -> HandlerSpec:
        found = self.find(name)
        if found is not None:
            return found
        try:
            return self._specs[name]
        except KeyError:
            known = ", ".join(sorted(self._specs)) or "none"
            raise HandlerNotFound(
                f"no handler named '{name}' is registered (known: {known}); import the "
                "module that defines it (BPM_HANDLERS / --handlers)"
            ) from None

    def find(self, name: str) -> HandlerSpec | None:
        found = self._specs.get(name)
        if found is None and self._resolvers:
            found = self._resolve(name)
        if found is None:
            found = BUILTIN.get(name)
        return found

    def names(self) -> list[str]:
        return sorted(self._specs)


registry = HandlerRegistry()


def service_task(
    name: str,
    *,
    retry: RetryPolicy | None = None,
    lease: timedelta | float | None = None,
    registry: HandlerRegistry = registry,
) -> Callable[[Handler], Handler]:
    """Register the decorated function as the handler of service tasks named ``name``.

    The function takes a :class:`TaskContext` and returns the variables to merge (or None).
    """

    def decorate(fn: Handler) -> Handler:
        return registry.register(name, fn, retry=retry, lease=lease)

    return decorate


def execution_listener(
    name: str,
    *,
    retry: RetryPolicy | None = None,
    registry: HandlerRegistry = registry,
) -> Callable[[Handler], Handler]:
    """Register the decorated function as the execution listener ``name``
    (``camunda:executionListener delegateExpression="${name}"``, ``class="name"``,
    ``zeebe:executionListener type="name"``, the builder's ``listeners=[("start", name)]``).

    A listener is a handler: it takes a :class:`TaskContext` (``ctx.properties
    ["bpm:listenerEvent"]`` is ``start`` or ``end``) and returns the variables to set; it
    runs on the worker in the step's attempt, so its failure takes the step's retry policy.
    """

    def decorate(fn: Handler) -> Handler:
        return registry.register(name, fn, retry=retry)

    return decorate
