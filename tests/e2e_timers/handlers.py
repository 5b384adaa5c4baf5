"""Handlers the timer e2e workers load (``BPM_HANDLERS=tests.e2e_timers.handlers``).

Each run is counted in Redis under the instance's ``tag`` variable and its own id, so a
test can prove a step ran exactly once per instance.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from bpm import RetryPolicy, TaskContext, service_task
from tests.e2e.handlers import client


def runs_key(tag: str, instance_id: str, node_id: str) -> str:
    return f"bpm-e2e:{tag}:runs:{instance_id}:{node_id}"


@service_task("after-timer")
def after_timer(ctx: TaskContext) -> Mapping[str, Any]:
    client().incr(runs_key(str(ctx.variables["tag"]), ctx.instance_id, ctx.node_id))
    return {"ran": True}


@service_task("fails-once", retry=RetryPolicy.fixed(2, timedelta(seconds=2)))
def fails_once(ctx: TaskContext) -> Mapping[str, Any]:
    client().incr(runs_key(str(ctx.variables["tag"]), ctx.instance_id, ctx.node_id))
    if ctx.attempt == 1:
        raise RuntimeError("first attempt fails; the retry waits on a persisted timer")
    return {"recovered_at_attempt": ctx.attempt}
