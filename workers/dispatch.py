"""Publishing Ready tokens to Celery: the broker half of :class:`bpm.dispatch.Dispatcher`."""

from __future__ import annotations

from collections.abc import Sequence

from celery import Celery

RUN_TOKEN = "bpm.run_token"


class CeleryDispatcher:
    """Publishes one ``run_token(token_id)`` message per Ready token.

    The engine calls :meth:`dispatch` only after its transaction committed, so a worker never
    receives a token it cannot see yet. All messages of one call share one producer (one
    broker connection checkout); with the Redis transport each message is still its own
    ``LPUSH``, which is why the engine keeps one Ready step for itself (synchronous
    continuation) and publishes only the others.

    A publish that fails raises; the engine logs it and the ``redispatch_stale_ready`` sweeper
    publishes the token again later. Duplicates are harmless: only one claim can win.
    """

    def __init__(
        self, app: Celery, *, queue: str | None = None, task_name: str = RUN_TOKEN
    ) -> None:
        self.app = app
        self.queue = queue
        self.task_name = task_name

    def dispatch(self, token_ids: Sequence[str]) -> None:
        if not token_ids:
            return
        queue = self.queue or self.app.conf.task_default_queue
        with self.app.producer_or_acquire() as producer:
            for token_id in token_ids:
                self.app.send_task(self.task_name, args=(token_id,), queue=queue, producer=producer)
