"""Handlers the e2e workers load (``BPM_HANDLERS=tests.e2e.handlers``).

They record every run in Redis under the instance's ``tag`` variable, so a test can count
how often a handler really ran, and can be told through variables to block (``block_at``:
node id; blocks attempts up to ``block_attempts`` until the test pushes to the release key)
or to be slow (``slow_at``: node id, ``slow_seconds``), or to fail (``fail_at``: node id;
raises on attempts up to ``fail_attempts``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

import redis

from bpm import TaskContext, service_task
from tests.e2e.processes import STEPS

REDIS_URL = os.environ.get("BPM_TEST_REDIS_URL", "redis://127.0.0.1:6379/9")
_client: redis.Redis | None = None


def client() -> redis.Redis:
    global _client
    if _client is None:
        _client = redis.Redis.from_url(REDIS_URL)
    return _client


def runs_key(tag: str, node_id: str) -> str:
    return f"bpm-e2e:{tag}:runs:{node_id}"


def pid_key(tag: str, node_id: str) -> str:
    return f"bpm-e2e:{tag}:pid:{node_id}"


def release_key(tag: str, node_id: str) -> str:
    return f"bpm-e2e:{tag}:release:{node_id}"


def step(ctx: TaskContext) -> Mapping[str, Any]:
    """Count the run, then block or sleep if the variables ask for it."""
    tag = ctx.variables.get("tag")
    if tag:
        r = client()
        r.incr(runs_key(tag, ctx.node_id))
        if ctx.variables.get("block_at") == ctx.node_id and ctx.attempt <= int(
            ctx.variables.get("block_attempts", 1)
        ):
            r.set(pid_key(tag, ctx.node_id), os.getpid())
            # Blocks until the test releases it (or kills this process), for at most a
            # minute. In short waits: a worker process may set a default socket timeout
            # (then one long BLPOP fails with a read timeout, and the handler with it).
            until = time.monotonic() + 60
            while time.monotonic() < until:
                if r.blpop([release_key(tag, ctx.node_id)], timeout=1) is not None:
                    break
    if ctx.variables.get("slow_at") == ctx.node_id:
        time.sleep(float(ctx.variables.get("slow_seconds", 0.5)))
    if ctx.variables.get("fail_at") == ctx.node_id and ctx.attempt <= int(
        ctx.variables.get("fail_attempts", 1)
    ):
        raise RuntimeError(f"{ctx.node_id} failed on purpose (attempt {ctx.attempt})")
    return {ctx.node_id.replace("-", "_"): ctx.attempt}


for _name in STEPS:
    service_task(_name)(step)
