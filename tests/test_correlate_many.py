"""Messages correlated together: one transaction, each message's answer its own, and the
same outcome as one call at a time (both backends; time moves by ``now=``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bpm import Engine, InstanceState
from bpm.builder import Process
from bpm.engine import Correlation, EngineConfig, Message
from bpm.errors import InvalidOperation, MessageCorrelationError, VariableError
from tests.engine_helpers import table_dump

T0 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)
S = timedelta(seconds=1)
KB = 1024


@pytest.fixture
def config() -> EngineConfig:
    return EngineConfig(max_variable_bytes=4 * KB, max_update_bytes=10 * KB)


def keyed() -> Any:
    return (
        Process("pay")
        .start("s")
        .receive_message("paid", "payment", correlation_key="order")
        .end("e")
        .sequence("s", "paid", "e")
        .build()
    )


def two_in_a_row() -> Any:
    return (
        Process("steps")
        .start("s")
        .receive_message("a", "first", correlation_key="order")
        .receive_message("b", "second", correlation_key="order")
        .end("e")
        .sequence("s", "a", "b", "e")
        .build()
    )


def _start(engine: Engine, key: str, orders: list[str]) -> list[str]:
    return [engine.start(key, {"order": o}, now=T0).id for o in orders]


def test_messages_to_many_instances_commit_in_one_transaction(engine: Engine) -> None:
    engine.deploy(keyed())
    ids = _start(engine, "pay", [f"o{i}" for i in range(20)])
    commits = engine.stats.commits

    out = engine.correlate_many(
        [Message("payment", {"n": i}, correlation_key=f"o{i}") for i in range(20)], now=T0 + S
    )

    assert engine.stats.commits == commits + 1
    assert out == [[_execution(iid)] for iid in ids]
    for i, iid in enumerate(ids):
        inst = engine.get_instance(iid)
        assert inst.state is InstanceState.COMPLETED
        assert inst.variables == {"order": f"o{i}", "n": i}


def _execution(instance_id: str) -> Correlation:
    return Correlation("execution", instance_id, "paid")


def test_refused_messages_stay_apart_and_change_nothing(engine: Engine) -> None:
    engine.deploy(keyed())
    ids = _start(engine, "pay", ["o1", "o2", "twin", "twin"])
    batch = [
        Message("payment", {"ok": 1}, correlation_key="o1"),
        Message("", correlation_key="o2"),  # no name
        Message("payment", correlation_key="o2", ttl=-1),  # a negative time to live
        Message("payment", correlation_key="nobody"),  # nothing waits, no ttl
        Message("payment", correlation_key="twin"),  # two instances, not all
        Message("payment", {"big": "x" * (5 * KB)}, correlation_key="o2"),  # a value too big
    ]
    before = table_dump(engine)

    out = engine.correlate_many(batch, now=T0 + S)

    assert out[0] == [_execution(ids[0])]
    assert isinstance(out[1], InvalidOperation) and "needs a name" in str(out[1])
    assert isinstance(out[2], InvalidOperation) and "must be positive" in str(out[2])
    assert isinstance(out[3], MessageCorrelationError) and "'nobody'" in str(out[3])
    assert isinstance(out[4], MessageCorrelationError) and "matches 2" in str(out[4])
    assert isinstance(out[5], VariableError)
    assert engine.get_instance(ids[0]).state is InstanceState.COMPLETED
    after = table_dump(engine)
    # the refused ones wrote nothing: only o1's rows differ (and nothing was buffered)
    assert after["message_buffer"] == before["message_buffer"] == []
    for iid in ids[1:]:
        inst = engine.get_instance(iid)
        assert inst.state is InstanceState.ACTIVE and "big" not in inst.variables
    assert engine.correlate_many([]) == []


def test_two_messages_for_one_wait_deliver_once(engine: Engine) -> None:
    engine.deploy(keyed())
    (iid,) = _start(engine, "pay", ["o1"])

    out = engine.correlate_many(
        [
            Message("payment", {"by": "first"}, correlation_key="o1"),
            Message("payment", {"by": "second"}, correlation_key="o1"),
            Message("payment", {"by": "third"}, correlation_key="o1", ttl=60),
        ],
        now=T0 + S,
    )

    assert out[0] == [_execution(iid)]
    assert isinstance(out[1], MessageCorrelationError)
    assert isinstance(out[2], list) and out[2][0].kind == "buffered"
    assert engine.get_instance(iid).variables["by"] == "first"


def test_a_wait_opened_by_an_earlier_message_of_the_batch_takes_the_later_one(
    engine: Engine,
) -> None:
    engine.deploy(two_in_a_row())
    (iid,) = _start(engine, "steps", ["o1"])

    out = engine.correlate_many(
        [Message("first", correlation_key="o1"), Message("second", correlation_key="o1")],
        now=T0 + S,
    )

    assert out == [[Correlation("execution", iid, "a")], [Correlation("execution", iid, "b")]]
    assert engine.get_instance(iid).state is InstanceState.COMPLETED


def test_a_message_start_event_in_a_batch(engine: Engine) -> None:
    engine.deploy(
        Process("placed").message_start("s", "order-placed").end("e").sequence("s", "e").build()
    )
    engine.deploy(keyed())
    (iid,) = _start(engine, "pay", ["o1"])

    out = engine.correlate_many(
        [Message("order-placed", {"n": 1}), Message("payment", correlation_key="o1")], now=T0
    )

    started = out[0]
    assert isinstance(started, list) and started[0].kind == "start"
    assert started[0].instance_id is not None
    assert engine.get_instance(started[0].instance_id).variables == {"n": 1}
    assert out[1] == [_execution(iid)]


def test_a_batch_that_fails_on_the_way_runs_each_message_alone(engine: Engine) -> None:
    """Three values under the per-value limit whose sum exceeds the update limit: the
    write fails inside the walk, after the first message was delivered; the batch rolls
    back and each message meets its own fate alone."""
    engine.deploy(keyed())
    ids = _start(engine, "pay", ["o1", "o2"])
    value = "x" * (3 * KB + 800)
    big = {"a": value, "b": value, "c": value}

    out = engine.correlate_many(
        [
            Message("payment", {"ok": 1}, correlation_key="o1"),
            Message("payment", big, correlation_key="o2"),
        ],
        now=T0 + S,
    )

    assert out[0] == [_execution(ids[0])]
    assert isinstance(out[1], VariableError), out[1]
    assert engine.get_instance(ids[0]).state is InstanceState.COMPLETED
    second = engine.get_instance(ids[1])
    assert second.state is InstanceState.ACTIVE and "a" not in second.variables


def test_business_keys_variables_and_instance_ids_narrow_each_message(engine: Engine) -> None:
    engine.deploy(
        Process("plain")
        .start("s")
        .receive_message("paid", "payment")
        .end("e")
        .sequence("s", "paid", "e")
        .build()
    )
    a = engine.start("plain", {"customer": "c1"}, business_key="b1", now=T0).id
    b = engine.start("plain", {"customer": "c2"}, business_key="b2", now=T0).id
    c = engine.start("plain", {"customer": "c3"}, business_key="b3", now=T0).id
    d = engine.start("plain", {"customer": "c4"}, business_key="b4", now=T0).id

    out = engine.correlate_many(
        [
            Message("payment", business_key="b2"),
            Message("payment", correlation_keys={"customer": "c3"}),
            Message("payment", instance_id=a),
            Message("payment", business_key="b4", correlation_keys={"customer": "c9"}),
        ],
        now=T0 + S,
    )

    assert [r[0].instance_id if isinstance(r, list) else None for r in out[:3]] == [b, c, a]
    assert [r[0].node_id if isinstance(r, list) else None for r in out[:3]] == ["paid"] * 3
    assert isinstance(out[3], MessageCorrelationError)  # b4's customer is c4, not c9
    assert engine.get_instance(d).state is InstanceState.ACTIVE
    for iid in (a, b, c):
        assert engine.get_instance(iid).state is InstanceState.COMPLETED
