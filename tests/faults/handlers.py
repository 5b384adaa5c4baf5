"""Handlers of the fault tests, beside those of :mod:`tests.e2e.handlers`.

``heartbeat``: runs for ``run_seconds`` and extends its lease every ``beat_every`` seconds
(records each extension's answer in the ledger), as a long handler should.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from bpm import TaskContext, service_task
from tests.e2e.handlers import client, runs_key


def heartbeats_key(tag: str) -> str:
    return f"bpm-e2e:{tag}:heartbeats"


@service_task("heartbeat")
def heartbeat(ctx: TaskContext) -> Mapping[str, Any]:
    tag = str(ctx.variables.get("tag", ""))
    r = client()
    r.incr(runs_key(tag, ctx.node_id))
    until = time.monotonic() + float(ctx.variables.get("run_seconds", 4))
    every = float(ctx.variables.get("beat_every", 0.5))
    while time.monotonic() < until:
        time.sleep(every)
        try:
            held = ctx.extend_lease()
        except Exception as exc:  # the database may be out of reach: keep trying
            r.rpush(heartbeats_key(tag), f"{ctx.attempt}:error:{type(exc).__name__}")
        else:
            r.rpush(heartbeats_key(tag), f"{ctx.attempt}:{'held' if held else 'lost'}")
    return {"beat_attempt": ctx.attempt}
