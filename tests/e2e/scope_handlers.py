"""The handler of the scope chaos test (``BPM_HANDLERS=tests.e2e.scope_handlers``).

Every run is counted in Redis per instance and item, and the pid of the process running
it is kept in a set while it runs, so the test can kill exactly a process in mid-handler.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

from bpm import RetryPolicy, TaskContext, service_task
from tests.e2e.handlers import client

CHAOS_STEP = "chaos-step"


def runs_key(tag: str) -> str:
    return f"bpm-e2e:{tag}:chaos-runs"


def running_key(tag: str) -> str:
    return f"bpm-e2e:{tag}:chaos-running"


# Many attempts: a step may be killed mid-handler again and again; it must never give up.
@service_task(CHAOS_STEP, retry=RetryPolicy.fixed(100, 0))
def chaos_step(ctx: TaskContext) -> Mapping[str, Any]:
    tag = str(ctx.variables["tag"])
    item = int(ctx.variables["item"])
    r = client()
    r.hincrby(runs_key(tag), f"{ctx.instance_id}:{item}", 1)
    pid = str(os.getpid())
    r.sadd(running_key(tag), pid)
    try:
        time.sleep(float(ctx.variables.get("pause", 0.05)))
    finally:
        r.srem(running_key(tag), pid)
    return {"r": item * 2}
