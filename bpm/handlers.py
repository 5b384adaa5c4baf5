"""Inline service-task handlers: registration and the context a handler receives."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Protocol

from bpm.errors import HandlerNotFound
from bpm.retry import RetryPolicy


class LeaseExtender(Protocol):
    def __call__(self, duration: timedelta | None = None) -> bool: ...


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

    def extend_lease(self, duration: timedelta | None = None) -> bool:
        """Keep the lease on this step for ``duration`` (default: the task's lease) more.

        Returns False when the lease is already lost: the result will be dropped, so a long
        handler may stop early.
        """
        return self._extend(duration) if self._extend else True


Handler = Callable[[TaskContext], Mapping[str, Any] | None]


@dataclass(frozen=True)
class HandlerSpec:
    """A registered handler with its own retry policy and lease (both optional)."""

    name: str
    fn: Handler
    retry: RetryPolicy | None = None
    lease: timedelta | None = None


class HandlerRegistry:
    """Handlers by name. The module-level :data:`registry` is the default one."""

    def __init__(self) -> None:
        self._specs: dict[str, HandlerSpec] = {}

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
        lease_td = timedelta(seconds=lease) if isinstance(lease, int | float) else lease
        self._specs[name] = HandlerSpec(name, fn, retry, lease_td)
        return fn

    def get(self, name: str) -> HandlerSpec:
        try:
            return self._specs[name]
        except KeyError:
            known = ", ".join(sorted(self._specs)) or "none"
            raise HandlerNotFound(
                f"no handler named '{name}' is registered (known: {known}); import the "
                "module that defines it (BPM_HANDLERS / --handlers)"
            ) from None

    def find(self, name: str) -> HandlerSpec | None:
        return self._specs.get(name)

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
