"""A batch type for the fault tests (imported by the workers through ``BPM_HANDLERS``):
``test-slow-mark`` sets ``marked`` on each instance after ``pause`` seconds, and counts
every application it started in the ledger (those a killed worker never committed too),
so a test sees that chunks ran again while the database shows each item applied once."""

from __future__ import annotations

import time

from bpm.engine.batch_types import BatchItem, BatchType, register
from tests.e2e.handlers import client

SLOW_MARK = "test-slow-mark"


def tries_key(tag: str) -> str:
    return f"bpm-e2e:{tag}:batch-tries"


def slow_mark(item: BatchItem) -> None:
    client().incr(tries_key(str(item.params["tag"])))
    time.sleep(float(item.params.get("pause", 0.02)))
    item.engine.set_variables(item.item, {"marked": item.batch_id}, by=item.created_by)


register(BatchType(SLOW_MARK, slow_mark, "TestSlowMark"))
