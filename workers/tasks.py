"""The one worker task: run a Ready inline step (and the inline steps after it)."""

from __future__ import annotations

from celery import Task, shared_task

from bpm.contrib.celery import RUN_TOKEN
from workers.runtime import engine_for
from workers.unreachable import backing_off


@shared_task(name=RUN_TOKEN, bind=True)
def run_token(self: Task, token_id: str) -> int:  # type: ignore[type-arg]
    """Claim, run and finish ``token_id``; returns how many steps ran (0: claim lost).

    Thin on purpose: a duplicated or redelivered message loses the claim and does nothing,
    so the task is idempotent without any bookkeeping here. A worker that cannot reach the
    database puts the message back for another worker (:mod:`workers.unreachable`).
    """
    with backing_off(self, publish_again=True):
        ran = engine_for(self.app).run_token(token_id)
    return ran
