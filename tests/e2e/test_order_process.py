"""The reference order process, run by real Celery worker processes."""

from __future__ import annotations

import pytest
import redis

from bpm import Engine
from tests.e2e.checks import assert_trail_consistent, events, wait_ended
from tests.e2e.conftest import StartWorkers
from tests.e2e.handlers import runs_key
from tests.e2e.processes import STEPS, order_model

pytestmark = pytest.mark.slow


def test_order_process_runs_to_completion_through_workers(
    celery_engine: Engine, start_workers: StartWorkers, rds: redis.Redis, tag: str
) -> None:
    start_workers(2)
    celery_engine.deploy(order_model())
    inst = celery_engine.start("order", {"amount": 120, "tag": tag})

    done = wait_ended(celery_engine, inst.id)

    # Every handler ran once and merged its variable.
    assert {name: done.variables[name.replace("-", "_")] for name in STEPS} == dict.fromkeys(
        STEPS, 1
    )
    assert [rds.get(runs_key(tag, s)) for s in STEPS] == ["1"] * len(STEPS)

    history = assert_trail_consistent(celery_engine, done)
    types = [(e.type, e.node_id) for e in history]
    # Token trail of the path, in order (the two branches may interleave between them).
    assert types[:8] == [
        ("instance_started", None),
        ("token_created", "start"),
        ("token_ready", "start"),
        ("token_completed", "start"),
        ("token_created", "validate"),
        ("token_ready", "validate"),
        ("token_executing", "validate"),
        ("variables_updated", "validate"),
    ]
    assert types[-9:] == [
        ("token_created", "ship"),
        ("token_ready", "ship"),
        ("token_executing", "ship"),
        ("variables_updated", "ship"),
        ("token_completed", "ship"),
        ("token_created", "end"),
        ("token_ready", "end"),
        ("token_completed", "end"),
        ("instance_completed", None),
    ], types

    def pos(type_: str, node: str) -> int:
        return types.index((type_, node))

    assert pos("token_completed", "validate") < pos("token_completed", "big_enough")
    assert pos("token_completed", "big_enough") < pos("token_completed", "fork")
    for branch in ("reserve-stock", "charge-payment"):
        assert pos("token_completed", "fork") < pos("token_created", branch)
        assert pos("token_completed", branch) < pos("join_fired", "join")
    assert pos("join_fired", "join") < pos("token_created", "ship")
    # One token per service task, each completed exactly once, on its first attempt.
    for node in STEPS:
        assert types.count(("token_completed", node)) == 1
        assert types.count(("token_executing", node)) == 1
    assert not events(history, "attempt_failed")
    assert len(events(history, "join_fired")) == 1
    # The join completed both branch tokens waiting there.
    join_waits = [e for e in history if e.node_id == "join" and e.to_state == "waiting"]
    assert len(join_waits) == 2


def test_small_orders_take_the_default_flow(
    celery_engine: Engine, start_workers: StartWorkers, rds: redis.Redis, tag: str
) -> None:
    start_workers(1)
    celery_engine.deploy(order_model())
    inst = celery_engine.start("order", {"amount": 50, "tag": tag})
    done = wait_ended(celery_engine, inst.id)
    history = assert_trail_consistent(celery_engine, done)
    assert ("token_completed", "rejected") in [(e.type, e.node_id) for e in history]
    assert [rds.get(runs_key(tag, s)) for s in STEPS] == ["1", None, None, None]
