"""Completes that arrive together are committed together.

The API serves many workers at once; each complete is a small transaction on one instance.
:class:`CompletionBatcher` queues them and hands whatever is queued to ONE engine call
(:meth:`Engine.complete_external_tasks`, one transaction), while the next arrivals queue
for the following one. A complete that arrives alone goes out alone, at once: batching
adds no latency when the API is idle. Each request still gets its own answer: a refused
complete (lost lock, unknown task) fails only its own request.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import nullcontext
from dataclasses import dataclass

from starlette.concurrency import run_in_threadpool

from bpm import tracing
from bpm.engine import Engine
from bpm.engine.external_reports import Completion

log = logging.getLogger("bpm.api")


@dataclass
class _Waiting:
    completion: Completion
    future: asyncio.Future[None]


class CompletionBatcher:
    """Commits the completes queued at the same moment in one transaction each round."""

    def __init__(self, engine: Engine, *, max_batch: int = 64) -> None:
        self.engine = engine
        self.max_batch = max_batch
        self._queue: list[_Waiting] = []
        self._draining: asyncio.Task[None] | None = None
        self.batches = 0  # how many engine calls (for tests and metrics)

    async def complete(self, completion: Completion) -> None:
        """Complete one task; raises what the engine refused for this task."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append(_Waiting(completion, future))
        if self._draining is None or self._draining.done():
            self._draining = asyncio.create_task(self._drain())
        await future

    async def _drain(self) -> None:
        while self._queue:
            batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch :]
            self.batches += 1
            try:
                results = await run_in_threadpool(
                    self.engine.complete_external_tasks, [w.completion for w in batch]
                )
            except Exception:  # the batch as a whole failed: each goes alone, says its own
                log.warning("a batch of %d completes failed; completing one by one", len(batch))
                await asyncio.gather(*(self._alone(w) for w in batch))
                continue
            for waiting, result in zip(batch, results, strict=True):
                if waiting.future.done():
                    continue
                if result is None:
                    waiting.future.set_result(None)
                else:
                    waiting.future.set_exception(result)

    async def _alone(self, waiting: _Waiting) -> None:
        c = waiting.completion

        def alone() -> None:
            tracer = tracing.tracer()
            with tracer.resume(c.trace) if tracer is not None else nullcontext():
                self.engine.complete_external_task(
                    c.task_id, c.worker_id, c.variables, c.local_variables, topics=c.topics
                )

        try:
            await run_in_threadpool(alone)
        except Exception as exc:
            if not waiting.future.done():
                waiting.future.set_exception(exc)
            return
        if not waiting.future.done():
            waiting.future.set_result(None)
