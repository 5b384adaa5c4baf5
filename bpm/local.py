"""The embedded mode: an in-process dispatcher and loop, no broker, one process.

``bpm run`` and ``bpm dev`` use it on SQLite by default. Ready inline steps go into a
local queue instead of Celery; the loop runs them, fires due timers and sweeps, sleeping
only until the engine's next wake-up.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta

from bpm.engine import Engine
from bpm.runtime.records import Instance


class LocalDispatcher:
    """Collects published token ids in memory for :class:`LocalLoop`."""

    def __init__(self) -> None:
        self.queue: deque[str] = deque()
        self._lock = threading.Lock()

    def dispatch(self, token_ids: Sequence[str]) -> None:
        with self._lock:
            self.queue.extend(token_ids)

    def pop(self) -> str | None:
        with self._lock:
            return self.queue.popleft() if self.queue else None


@dataclass(frozen=True)
class Settled:
    """How a local run stopped: ended, or waiting on something outside the loop."""

    instance: Instance
    waiting_on: tuple[str, ...]

    @property
    def ended(self) -> bool:
        return self.instance.ended


class LocalLoop:
    """Drives an engine in this process. Attach it before starting instances."""

    def __init__(
        self,
        engine: Engine,
        *,
        idle_poll: timedelta = timedelta(seconds=0.5),
        tick_budget: timedelta = timedelta(seconds=1),
    ) -> None:
        self.engine = engine
        self.dispatcher = LocalDispatcher()
        engine.dispatcher = self.dispatcher
        # One ``run_token`` may keep running the steps it leads to for ``drain_for``; in
        # this loop it must not outlast a tick.
        config = engine.core.config
        engine.core.config = replace(config, drain_for=min(config.drain_for, tick_budget))
        self.idle_poll = idle_poll
        # How long one tick may keep running queued steps: a step that loops back to
        # itself re-queues for ever, and timers, the sweeper, a deadline and Ctrl-C must
        # still get their turn.
        self.tick_budget = tick_budget
        self._stop = threading.Event()

    def run_ready(self, budget: timedelta | None = None) -> int:
        """Run queued Ready steps (and what they lead to) until none is left, the budget
        (by default :attr:`tick_budget`) is spent or :meth:`stop` was called; return how
        many ran. Steps not run yet stay queued."""
        ran = 0
        until = time.monotonic() + (budget or self.tick_budget).total_seconds()
        while not self._stop.is_set() and time.monotonic() < until:
            token_id = self.dispatcher.pop()
            if token_id is None:
                break
            ran += self.engine.run_token(token_id)
        return ran

    def tick(self, budget: timedelta | None = None) -> int:
        """One round of everything beat and the workers would do."""
        work = self.run_ready(budget)
        work += self.engine.fire_due_timers()
        work += self.engine.fire_due_schedules()
        work += self.engine.reclaim_expired_leases()
        work += self.engine.redispatch_stale_ready()
        # batch chunks: nothing publishes them here, the loop claims them itself (one per
        # tick at most, so a big batch never keeps timers and steps waiting)
        work += self.engine.batches.run_ready(limit=1)
        return work + self.run_ready(budget)

    def _sleep_until_wakeup(self, cap: timedelta) -> None:
        wake = self.engine.next_wakeup()
        delay = cap
        if wake is not None:
            delay = min(cap, max(timedelta(0), wake - self.engine.core.now()))
        self._stop.wait(delay.total_seconds())

    def run_instance(
        self,
        instance_id: str,
        *,
        timeout: timedelta | None = None,
        on_progress: Callable[[Instance], None] | None = None,
    ) -> Settled:
        """Drive the loop until the instance ends, waits only on the outside world, or
        ``timeout`` passed (then ``waiting_on`` starts with ``"timeout"``, even when steps
        were still running: a step that loops back to itself never ends by itself)."""
        deadline = None if timeout is None else self.engine.core.now() + timeout
        while not self._stop.is_set():
            budget = None
            if deadline is not None:
                left = max(deadline - self.engine.core.now(), timedelta(0))
                budget = min(self.tick_budget, left)
            self.tick(budget)
            inst = self.engine.get_instance(instance_id)
            if on_progress is not None:
                on_progress(inst)
            if inst.ended:
                return Settled(inst, ())
            if deadline is not None and self.engine.core.now() >= deadline:
                return Settled(inst, ("timeout", *_waiting_on(inst)))
            if self.dispatcher.queue:
                continue
            if self.engine.next_wakeup() is None or (
                deadline is not None and self.engine.core.now() >= deadline
            ):
                return Settled(inst, _waiting_on(inst))
            self._sleep_until_wakeup(
                self.idle_poll
                if deadline is None
                else min(self.idle_poll * 20, max(deadline - self.engine.core.now(), timedelta(0)))
            )
        return Settled(self.engine.get_instance(instance_id), ("interrupted",))

    def serve(self) -> None:
        """Run until :meth:`stop` is called (``bpm dev``)."""
        while not self._stop.is_set():
            if self.tick() == 0:
                self._sleep_until_wakeup(self.idle_poll)

    def stop(self) -> None:
        self._stop.set()


def _waiting_on(inst: Instance) -> tuple[str, ...]:
    out = []
    for tok in inst.tokens:
        if tok.state.value in ("waiting", "failed", "ready", "executing"):
            reason = tok.blocked_kind.value if tok.blocked_kind else tok.state.value
            out.append(f"{tok.node_id} ({reason})")
    return tuple(out)
