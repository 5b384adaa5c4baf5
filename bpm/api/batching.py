"""Calls that arrive together are committed together (group commit).

The API serves many clients at once; each external-task complete and each message
correlation is a small transaction on one instance. A :class:`GroupCommit` queues them and
hands whatever is queued to ONE engine call (one transaction:
:meth:`Engine.complete_external_tasks`, :meth:`Engine.correlate_many`), while the next
arrivals queue for the following one. A call that arrives alone goes out alone, at once:
batching adds no latency when the API is idle. Each request still gets its own answer: a
refused call (lost lock, unknown task, no matching wait) fails only its own request.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Generic, TypeVar

from starlette.concurrency import run_in_threadpool

from bpm import tracing
from bpm.engine import Correlation, Engine, Message
from bpm.engine.external_reports import Completion
from bpm.errors import BpmError

log = logging.getLogger("bpm.api")

T = TypeVar("T")
R = TypeVar("R")


@dataclass
class _Waiting(Generic[T, R]):
    call: T
    future: asyncio.Future[R]


class GroupCommit(Generic[T, R]):
    """Commits the calls queued at the same moment in one transaction each round.

    ``many`` commits a batch and answers, per call, its result or the error that refused
    it alone; ``alone`` runs one call (used when a batch fails as a whole, so that each
    call says its own error)."""

    def __init__(
        self,
        many: Callable[[list[T]], Sequence[R | BpmError]],
        alone: Callable[[T], R],
        *,
        max_batch: int = 64,
        what: str = "calls",
    ) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, got {max_batch}")
        self._many = many
        self._one = alone
        self.max_batch = max_batch
        self.what = what
        self._queue: list[_Waiting[T, R]] = []
        self._draining: asyncio.Task[None] | None = None
        self.batches = 0  # how many engine calls (for tests and metrics)

    async def submit(self, call: T) -> R:
        """Commit one call (with whatever arrives with it); raises what refused it."""
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._queue.append(_Waiting(call, future))
        if self._draining is None or self._draining.done():
            self._draining = asyncio.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        while self._queue:
            batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch :]
            self.batches += 1
            try:
                results = await run_in_threadpool(self._many, [w.call for w in batch])
            except Exception:  # the batch as a whole failed: each goes alone, says its own
                log.warning("a batch of %d %s failed; one by one", len(batch), self.what)
                await asyncio.gather(*(self._alone(w) for w in batch))
                continue
            for waiting, result in zip(batch, results, strict=True):
                if waiting.future.done():
                    continue
                if isinstance(result, BaseException):
                    waiting.future.set_exception(result)
                else:
                    waiting.future.set_result(result)

    async def _alone(self, waiting: _Waiting[T, R]) -> None:
        try:
            result = await run_in_threadpool(self._one, waiting.call)
        except Exception as exc:
            if not waiting.future.done():
                waiting.future.set_exception(exc)
            return
        if not waiting.future.done():
            waiting.future.set_result(result)


class CompletionBatcher(GroupCommit[Completion, None]):
    """External-task completes (``POST /external-task/{id}/complete``)."""

    def __init__(self, engine: Engine, *, max_batch: int = 64) -> None:
        self.engine = engine
        super().__init__(
            engine.complete_external_tasks,
            self._complete_alone,
            max_batch=max_batch,
            what="completes",
        )

    async def complete(self, completion: Completion) -> None:
        """Complete one task; raises what the engine refused for this task."""
        await self.submit(completion)

    def _complete_alone(self, c: Completion) -> None:
        tracer = tracing.tracer()
        with tracer.resume(c.trace) if tracer is not None else nullcontext():
            self.engine.complete_external_task(
                c.task_id, c.worker_id, c.variables, c.local_variables, topics=c.topics
            )


class MessageBatcher(GroupCommit[Message, list[Correlation]]):
    """Message correlations (``POST /message``)."""

    def __init__(self, engine: Engine, *, max_batch: int = 64) -> None:
        self.engine = engine
        super().__init__(
            engine.correlate_many, self._correlate_alone, max_batch=max_batch, what="messages"
        )

    async def correlate(self, message: Message) -> list[Correlation]:
        """Correlate one message; raises what refused it."""
        return await self.submit(message)

    def _correlate_alone(self, m: Message) -> list[Correlation]:
        return self.engine.correlate(
            m.name,
            dict(m.variables) if m.variables is not None else None,
            business_key=m.business_key,
            correlation_key=m.correlation_key,
            correlation_keys=dict(m.correlation_keys) if m.correlation_keys is not None else None,
            instance_id=m.instance_id,
            all=m.all,
            ttl=m.ttl,
        )
