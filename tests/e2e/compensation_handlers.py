"""Handlers of the compensation e2e test (``BPM_HANDLERS=tests.e2e.compensation_handlers``).

Every handler counts its runs in Redis under the instance's ``tag``. The compensation
handlers apply their effect the way a payment API with idempotency keys does: an effect
is applied only the first time its key is seen (``HSETNX``), so a test can tell how often
an effect really happened, whatever number of runs it took. ``block_at`` (a node id)
makes that handler block on its first attempt *after* applying its effect, until the test
releases it or kills the worker: the crash a saga must survive.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from bpm import TaskContext, service_task
from tests.e2e.handlers import client, pid_key, release_key, runs_key

NAMES = ("reserve", "charge", "ship", "release", "refund")
UNDO = frozenset({"release", "refund"})


def effects_key(tag: str) -> str:
    """idempotency key -> node id of each effect applied."""
    return f"bpm-e2e:{tag}:effects"


def applied_key(tag: str) -> str:
    """node id -> how many effects it applied."""
    return f"bpm-e2e:{tag}:applied"


def _handler(name: str) -> Any:
    def run(ctx: TaskContext) -> Mapping[str, Any]:
        tag = str(ctx.variables["tag"])
        r = client()
        r.incr(runs_key(tag, ctx.node_id))
        if name == "ship":
            raise RuntimeError("no truck today")
        if name in UNDO and r.hsetnx(effects_key(tag), ctx.idempotency_key, ctx.node_id):
            r.hincrby(applied_key(tag), ctx.node_id, 1)
        if ctx.variables.get("block_at") == ctx.node_id and ctx.attempt == 1:
            r.set(pid_key(tag, ctx.node_id), os.getpid())
            r.blpop([release_key(tag, ctx.node_id)], timeout=60)  # or killed meanwhile
        return {name: ctx.attempt}

    return run


# Registered as ``saga-<name>``: the order process's handlers are called reserve, charge
# and ship too, and every test module's handlers share one registry.
for _name in NAMES:
    service_task(f"saga-{_name}")(_handler(_name))
