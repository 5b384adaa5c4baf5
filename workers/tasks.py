"""The one worker task: run a Ready inline step (and the inline steps after it)."""

from __future__ import annotations

from workers.app import app, get_engine
from workers.dispatch import RUN_TOKEN


@app.task(name=RUN_TOKEN)
def run_token(token_id: str) -> int:
    """Claim, run and finish ``token_id``; returns how many steps ran (0: claim lost).

    Thin on purpose: a duplicated or redelivered message loses the claim and does nothing,
    so the task is idempotent without any bookkeeping here.
    """
    return get_engine().run_token(token_id)
