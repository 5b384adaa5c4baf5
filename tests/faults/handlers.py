"""Handlers of the fault tests, beside those of :mod:`tests.e2e.handlers`.

``heartbeat``: runs for ``run_seconds`` and extends its lease every ``beat_every`` seconds
(records each extension's answer in the ledger), as a long handler should.
``effect-once``: a side effect made once by ``ctx.idempotency_key``, however often it runs.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

from bpm import TaskContext, service_task
from tests.e2e.handlers import client, pid_key, release_key, runs_key


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


def effects_key(tag: str) -> str:
    return f"bpm-e2e:{tag}:effects"


def seen_key(tag: str) -> str:
    return f"bpm-e2e:{tag}:seen"


@service_task("effect-once")
def effect_once(ctx: TaskContext) -> Mapping[str, Any]:
    """A handler with a side effect made idempotent by ``ctx.idempotency_key`` (the effect
    is counted only the first time a key is seen, as a payment provider would). With
    ``block`` set, its first run blocks, after the effect, until the test releases it
    (``release_key``)."""
    tag = str(ctx.variables.get("tag", ""))
    r = client()
    runs = r.incr(runs_key(tag, ctx.node_id))
    r.rpush(seen_key(tag), f"{ctx.attempt}|{ctx.idempotency_key}")
    if r.set(f"bpm-e2e:{tag}:done:{ctx.idempotency_key}", 1, nx=True):
        r.incr(effects_key(tag))
    if runs == 1 and ctx.variables.get("block"):
        r.set(pid_key(tag, ctx.node_id), os.getpid())
        until = time.monotonic() + 60
        while time.monotonic() < until:  # short waits: see tests.e2e.handlers.step
            if r.blpop([release_key(tag, ctx.node_id)], timeout=1) is not None:
                break
    return {"charged": True}
