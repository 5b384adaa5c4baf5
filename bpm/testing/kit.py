"""The object the ``bpm`` fixture gives a test: an engine in this process, on its own
database, with a clock that stands still until the test moves it.

Nothing runs behind the test's back: steps run when the test calls :meth:`BpmTest.run`
(which :meth:`~BpmTest.start`, :meth:`~BpmTest.complete`, :meth:`~BpmTest.correlate` and
:meth:`~BpmTest.advance` do for it), in the order they became ready, in the test's thread.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console

from bpm.engine import Correlation, Deployment, Engine, EngineConfig, SignalResult
from bpm.handlers import Handler, HandlerRegistry, HandlerSpec
from bpm.handlers import registry as default_registry
from bpm.local import LocalDispatcher
from bpm.retry import RetryPolicy
from bpm.runtime.records import ExternalTask, Instance, UserTask
from bpm.testing.clock import VirtualClock, as_delta
from bpm.testing.database import IN_MEMORY, copy_template, empty
from bpm.testing.doubles import HandlerDouble
from bpm.trail import trail_table

__all__ = ["WORKER", "BpmTest", "InstanceRef", "current"]

WORKER = "bpm.testing"
"""The worker id the kit runs steps and completes external tasks as."""

InstanceRef = Instance | str
"""An instance, or its id: the kit reads it again whenever it is asked about it."""

# The kits activated and not yet undone, newest last (a plain list, not a ContextVar: a
# fixture's setup and teardown may run in different contexts under async plugins).
_active: list[BpmTest] = []

LIVE = ("ready", "executing", "waiting", "failed")


def current() -> BpmTest:
    """The kit of the running test (the ``bpm`` fixture's)."""
    if not _active:
        raise RuntimeError(
            "no bpm.testing engine is active: use the bpm fixture in this test, or pass the "
            "kit: assert_that(instance, kit)"
        )
    return _active[-1]


def _id(instance: InstanceRef) -> str:
    return instance if isinstance(instance, str) else instance.id


class BpmTest:
    """An engine for one test. Made by the ``bpm`` fixture, or by :meth:`create`."""

    def __init__(
        self,
        engine: Engine,
        clock: VirtualClock,
        registry: HandlerRegistry,
        dispatcher: LocalDispatcher,
        *,
        max_steps: int = 10_000,
    ) -> None:
        self.engine = engine
        self.clock = clock
        self.registry = registry
        self.max_steps = max_steps
        self.doubles: dict[str, HandlerDouble] = {}
        self._dispatcher = dispatcher

    @classmethod
    def create(
        cls,
        database_url: str | None = None,
        *,
        start: datetime | None = None,
        config: EngineConfig | None = None,
        registry: HandlerRegistry | None = None,
    ) -> BpmTest:
        """A kit on a fresh in-memory SQLite database, or on ``database_url`` (a
        PostgreSQL database the kit may empty: every table is cleared first).

        Handlers are looked up among the test's doubles first, then in ``registry`` (by
        default the one ``@service_task`` registers in)."""
        clock = VirtualClock(start)
        own = HandlerRegistry()
        fallback = registry or default_registry
        own.resolve_prefix("", fallback.find)
        dispatcher = LocalDispatcher()
        # A lease the heartbeat never needs to extend (steps run in the test's thread), and
        # each step hands the ones it leads to back to run(), which counts them.
        # The history keeps variable values: a test's instance can be exported as a case.
        cfg = config or EngineConfig(
            default_lease=timedelta(hours=1), drain_for=timedelta(0), history_values=True
        )
        engine = Engine(
            database_url or IN_MEMORY,
            config=cfg,
            dispatcher=dispatcher,
            registry=own,
            clock=clock,
        )
        # No heartbeat thread: a step runs in the test's thread, and an in-memory
        # database's one connection must not be shared with another thread.
        engine.core.leases.stop()
        try:
            if database_url is None:
                copy_template(engine.db)
            else:
                empty(engine.db)
        except BaseException:
            engine.close()
            raise
        return cls(engine, clock, own, dispatcher)

    def close(self) -> None:
        self.engine.close()

    def activate(self) -> Callable[[], None]:
        """Make this the kit :func:`bpm.testing.assert_that` uses; returns the undo."""
        _active.append(self)
        return lambda: _active.remove(self)

    # -- models -----------------------------------------------------------------------------
    def deploy(self, *sources: Any) -> Deployment:
        """Deploy .bpmn/.dmn files (paths), BPMN XML text, builder processes (built or not)
        and models, in one deployment."""
        resolved: list[Any] = []
        for source in sources:
            if isinstance(source, Path) or (
                isinstance(source, str) and not source.lstrip().startswith("<")
            ):
                path = Path(source)
                if not path.is_file():
                    raise FileNotFoundError(f"{path}: no such file to deploy")
                resolved.append((path.name, path.read_text(encoding="utf-8")))
            else:
                resolved.append(source)
        return self.engine.create_deployment(*resolved)

    # -- handlers ---------------------------------------------------------------------------
    def mock(
        self,
        name: str,
        *,
        returns: Any = None,
        raises: BaseException | None = None,
        answers: Sequence[Mapping[str, Any] | BaseException | None] = (),
        retry: RetryPolicy | None = None,
    ) -> HandlerDouble:
        """Stand in for handler ``name`` in this test (see :class:`HandlerDouble`). The
        real handler's retry policy and lease still apply unless ``retry`` is given."""
        double = HandlerDouble(name, returns=returns, raises=raises, answers=tuple(answers))
        self._register(name, double, retry)
        self.doubles[name] = double
        return double

    def handler(self, name: str, fn: Handler, *, retry: RetryPolicy | None = None) -> Handler:
        """Register ``fn`` as handler ``name`` for this test only."""
        self._register(name, fn, retry)
        return fn

    def _register(self, name: str, fn: Handler, retry: RetryPolicy | None) -> None:
        real: HandlerSpec | None = default_registry.find(name)
        self.registry.register(
            name,
            fn,
            retry=retry if retry is not None else (real.retry if real else None),
            lease=real.lease if real else None,
        )

    # -- running ----------------------------------------------------------------------------
    def start(
        self,
        key: str,
        variables: Mapping[str, Any] | None = None,
        *,
        business_key: str | None = None,
        start_event: str | None = None,
        run: bool = True,
    ) -> Instance:
        """Start the latest version of ``key`` and (``run=True``) run until nothing is
        ready; returns the instance as it then is."""
        inst = self.engine.start(
            key, dict(variables or {}), business_key=business_key, start_event=start_event
        )
        return self._settle(inst.id, run)

    def run(self) -> int:
        """Run every ready step, timer due now, expired lease..., and what they lead to,
        until nothing is ready; returns how many steps ran. A process that keeps running
        (a loop that never waits) stops the test after :attr:`max_steps` steps."""
        ran = 0
        while True:
            token_id = self._dispatcher.pop()
            if token_id is not None:
                ran += self.engine.run_token(token_id, worker_id=WORKER)
                if ran > self.max_steps:
                    raise AssertionError(
                        f"more than {self.max_steps} steps ran without the process waiting: "
                        "does a loop never reach a wait state? (BpmTest.max_steps)"
                    )
                continue
            now = self.clock()
            moved = self.engine.fire_due_timers(now)
            moved += self.engine.fire_due_schedules(now)
            moved += self.engine.reclaim_expired_leases(now=now)
            moved += self.engine.reclaim_expired_external_locks(now=now)
            if not moved and not self._dispatcher.queue:
                return ran

    def advance(self, duration: str | timedelta | float) -> int:
        """Move the clock forward by ``duration`` (``"P3D"``, a timedelta, seconds),
        stopping at every due time on the way: each timer fires at its own time, in order,
        and what it leads to runs before the next one. Returns how many steps ran."""
        return self.advance_to(self.clock.now + as_delta(duration, relative_to=self.clock.now))

    def advance_to(self, at: datetime) -> int:
        """:meth:`advance` to the time ``at``."""
        if at.tzinfo is None:
            raise ValueError(f"{at.isoformat()} has no time zone: give a UTC time")
        if at < self.clock.now:
            raise ValueError(f"time only moves forward: {at.isoformat()} is in the past")
        ran = self.run()
        seen: datetime | None = None
        while True:
            due = self._next_due()
            if due is None or due > at or due == seen:
                break
            seen = due
            if due > self.clock.now:
                self.clock.set(due)
            ran += self.run()
        if at > self.clock.now:
            self.clock.set(at)
        return ran + self.run()

    def _next_due(self) -> datetime | None:
        times = [t for t in (self.engine.next_wakeup(),) if t is not None]
        times += [s.next_due for s in self.engine.schedules() if s.next_due is not None]
        return min(times, default=None)

    def _settle(self, instance_id: str, run: bool) -> Instance:
        if run:
            self.run()
        return self.engine.get_instance(instance_id)

    # -- the outside world ------------------------------------------------------------------
    def user_task(self, instance: InstanceRef, node_id: str) -> UserTask:
        """The open user task at ``node_id`` (the oldest, if several)."""
        tasks = self.engine.user_tasks(_id(instance), node_id=node_id)
        if not tasks:
            raise AssertionError(
                f"no open user task at '{node_id}'\n\n{self.describe(_id(instance))}"
            )
        return tasks[0]

    def external_task(self, instance: InstanceRef, node_id: str) -> ExternalTask:
        """The open external task at ``node_id`` (the oldest, if several)."""
        tasks = [t for t in self.engine.external_tasks(instance_id=_id(instance))]
        found = [t for t in tasks if t.node_id == node_id]
        if not found:
            raise AssertionError(
                f"no open external task at '{node_id}'\n\n{self.describe(_id(instance))}"
            )
        return found[0]

    def complete(
        self,
        instance: InstanceRef,
        node_id: str,
        variables: Mapping[str, Any] | None = None,
        *,
        run: bool = True,
    ) -> Instance:
        """Complete the user task or external task waiting at ``node_id`` with
        ``variables``, and run what follows."""
        iid = _id(instance)
        values = dict(variables or {})
        users = self.engine.user_tasks(iid, node_id=node_id)
        if users:
            self.engine.complete_user_task(users[0].id, values)
            return self._settle(iid, run)
        task = self.external_task(iid, node_id)
        self._lock(task)
        self.engine.complete_external_task(task.id, WORKER, values)
        return self._settle(iid, run)

    def throw_error(
        self,
        instance: InstanceRef,
        node_id: str,
        code: str,
        message: str | None = None,
        variables: Mapping[str, Any] | None = None,
        *,
        run: bool = True,
    ) -> Instance:
        """An external worker's BPMN error on the external task at ``node_id``."""
        iid = _id(instance)
        task = self.external_task(iid, node_id)
        self._lock(task)
        values = dict(variables or {})
        self.engine.external_task_bpmn_error(task.id, WORKER, code, message, values)
        return self._settle(iid, run)

    def fail(
        self,
        instance: InstanceRef,
        node_id: str,
        message: str = "failed in a test",
        *,
        retries: int | None = None,
        run: bool = True,
    ) -> Instance:
        """An external worker's failure report on the external task at ``node_id``
        (``retries``: Camunda's retries left; None: the model's retry policy)."""
        iid = _id(instance)
        task = self.external_task(iid, node_id)
        self._lock(task)
        self.engine.fail_external_task(task.id, WORKER, message, retries=retries)
        return self._settle(iid, run)

    def _lock(self, task: ExternalTask) -> None:
        if task.lock_owner != WORKER:
            self.engine.lock_external_task(task.id, WORKER, 3_600_000)

    def correlate(
        self,
        name: str,
        variables: Mapping[str, Any] | None = None,
        *,
        business_key: str | None = None,
        correlation_key: Any = None,
        instance: InstanceRef | None = None,
        all: bool = False,
        run: bool = True,
    ) -> list[Correlation]:
        """Deliver message ``name`` (see :meth:`bpm.Engine.correlate`) and run what follows."""
        values = dict(variables or {})
        found = self.engine.correlate(
            name,
            values,
            business_key=business_key,
            correlation_key=correlation_key,
            instance_id=None if instance is None else _id(instance),
            all=all,
        )
        if run:
            self.run()
        return found

    def signal(
        self, name: str, variables: Mapping[str, Any] | None = None, *, run: bool = True
    ) -> SignalResult:
        """Broadcast signal ``name`` and run what follows."""
        values = dict(variables or {})
        result = self.engine.signal(name, values)
        if run:
            self.run()
        return result

    # -- reading ----------------------------------------------------------------------------
    def instance(self, instance: InstanceRef) -> Instance:
        """The instance as it is now."""
        return self.engine.get_instance(_id(instance))

    def variables(self, instance: InstanceRef) -> dict[str, Any]:
        return dict(self.instance(instance).variables)

    def waiting_at(self, instance: InstanceRef) -> list[str]:
        """The nodes where the instance has a live token (ready, waiting, failed)."""
        inst = self.instance(instance)
        return [t.node_id for t in inst.tokens if t.state.value in LIVE]

    def trail(self, instance: InstanceRef, *, width: int = 140) -> str:
        """The instance's history as the text table ``bpm show`` prints."""
        events = self.engine.history(_id(instance))
        table = trail_table(events)
        table.box = box.ASCII  # readable in any terminal and CI log
        out = io.StringIO()
        Console(file=out, width=width, no_color=True, color_system=None).print(table)
        return out.getvalue()

    def describe(self, instance: InstanceRef) -> str:
        """What an assertion prints on failure: state, live tokens, incidents, variables,
        and the trail."""
        inst = self.instance(instance)
        lines = [f"instance {inst.id} of '{inst.definition_key}' is {inst.state.value}"]
        for tok in inst.tokens:
            if tok.state.value in LIVE:
                why = tok.blocked_kind.value if tok.blocked_kind else ""
                err = f": {tok.error}" if tok.error else ""
                lines.append(f"  at {tok.node_id}: {tok.state.value} {why}{err}".rstrip())
        for incident in self.engine.incidents(inst.id):
            lines.append(f"  incident at {incident.node_id}: {incident.message}")
        lines.append(f"  variables: {inst.variables!r}")
        return "\n".join(lines) + "\n\n" + self.trail(inst.id)
