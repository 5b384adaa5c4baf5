"""External tasks through the engine, on PostgreSQL AND SQLite (the embedded mode): fetch and
lock (variables, filters, priority, expired locks), complete, failure and retries, BPMN
error, lock extension, and refusals that change nothing (issue 13 item 7)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bpm import Engine
from bpm.builder import Process
from bpm.errors import Forbidden, InvalidOperation, LeaseLost
from bpm.runtime.external import FetchRequest, TopicRequest
from tests.engine_helpers import table_dump

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def one_task(key: str = "ext", topic: str = "work", priority: int = 0) -> Any:
    return (
        Process(key)
        .start("s")
        .service_task("t", topic=topic, priority=priority)
        .end("e")
        .sequence("s", "t")
        .sequence("t", "e")
        .build()
    )


def fetch(
    engine: Engine,
    worker: str = "w1",
    *,
    topic: str = "work",
    max_tasks: int = 10,
    lock_ms: int = 60_000,
    at: datetime = T0,
    **topic_filters: Any,
) -> list[Any]:
    req = FetchRequest(worker, max_tasks, (TopicRequest(topic, lock_ms, **topic_filters),))
    return engine.fetch_and_lock(req, now=at)


def test_fetch_locks_each_task_once_with_its_variables(engine: Engine) -> None:
    engine.deploy(one_task())
    ids = [engine.start("ext", {"n": i, "big": "x" * 10}, now=T0).id for i in range(3)]
    first = fetch(engine, max_tasks=2, variables=("n",))
    assert len(first) == 2
    assert all(set(t.variables) == {"n"} for t in first)  # only the names asked for
    until = T0 + timedelta(minutes=1)
    assert all(t.lock_owner == "w1" and t.lock_expires_at == until for t in first)
    [last] = fetch(engine, "w2")
    assert last.variables == {"n": ids.index(last.instance_id), "big": "x" * 10}
    assert fetch(engine, "w3") == []  # every task is locked now


def test_filters_priority_and_an_expired_lock(engine: Engine) -> None:
    engine.deploy(one_task("low", priority=1))
    engine.deploy(one_task("high", priority=9))
    engine.start("low", {"region": "eu"}, business_key="b-low", now=T0)
    engine.start("high", {"region": "us"}, business_key="b-high", now=T0)
    assert fetch(engine, business_key="nope") == []
    [by_var] = fetch(engine, process_variables={"region": "us"}, lock_ms=1000)
    assert by_var.definition_key == "high"
    req = FetchRequest("w2", 1, (TopicRequest("work", 1000),), use_priority=True)
    # the high-priority task is locked: the other one comes
    assert [t.definition_key for t in engine.fetch_and_lock(req, now=T0)] == ["low"]
    # a lock whose expiry passed is free again, before any reclaimer ran
    later = T0 + timedelta(seconds=2)
    again = engine.fetch_and_lock(req, now=later)
    assert [t.definition_key for t in again] == ["high"] and again[0].lock_owner == "w2"


def test_complete_merges_variables_and_ends_the_instance(engine: Engine) -> None:
    engine.deploy(one_task())
    iid = engine.start("ext", {"a": 1}, now=T0).id
    [task] = fetch(engine)
    engine.complete_external_task(task.id, "w1", {"b": 2}, now=T0)
    inst = engine.get_instance(iid)
    assert inst.state.value == "completed" and inst.variables == {"a": 1, "b": 2}
    before = table_dump(engine)
    engine.complete_external_task(task.id, "w1", {"b": 2}, now=T0)  # a repeat is a no-op
    assert table_dump(engine) == before


def test_failure_with_retries_comes_back_after_the_timeout_then_an_incident(
    engine: Engine,
) -> None:
    engine.deploy(one_task())
    iid = engine.start("ext", now=T0).id
    [task] = fetch(engine)
    engine.fail_external_task(task.id, "w1", "boom", retries=1, retry_timeout_ms=5000, now=T0)
    assert fetch(engine, at=T0 + timedelta(seconds=4)) == []  # backing off
    [again] = fetch(engine, at=T0 + timedelta(seconds=5))
    assert again.id == task.id and again.retries == 1
    engine.fail_external_task(task.id, "w1", "boom again", retries=0, now=T0)
    [incident] = engine.incidents(iid)
    assert incident.message == "boom again"
    assert fetch(engine, at=T0 + timedelta(hours=1)) == []


def test_bpmn_error_without_a_catcher_opens_an_incident(engine: Engine) -> None:
    engine.deploy(one_task())
    iid = engine.start("ext", now=T0).id
    [task] = fetch(engine)
    engine.external_task_bpmn_error(task.id, "w1", "NOPE", "no catcher", now=T0)
    assert engine.get_instance(iid).state.value == "active"
    assert [i.type for i in engine.incidents(iid)] == ["failedExternalTask"]
    assert fetch(engine, "w2", at=T0 + timedelta(hours=1)) == []


def test_extend_lock_moves_the_expiry(engine: Engine) -> None:
    engine.deploy(one_task())
    engine.start("ext", now=T0)
    [task] = fetch(engine, lock_ms=1000)
    engine.extend_external_task_lock(task.id, "w1", 10_000, now=T0 + timedelta(milliseconds=500))
    assert engine.external_task(task.id).lock_expires_at == T0 + timedelta(seconds=10.5)
    assert fetch(engine, "w2", at=T0 + timedelta(seconds=5)) == []


def test_refusals_change_nothing(engine: Engine) -> None:
    engine.deploy(one_task())
    engine.start("ext", {"a": 1}, now=T0)
    [task] = fetch(engine)
    before = table_dump(engine)
    with pytest.raises(LeaseLost, match="locked by worker 'w1'"):
        engine.complete_external_task(task.id, "intruder", {"a": 2}, now=T0)
    with pytest.raises(LeaseLost):
        engine.fail_external_task(task.id, "intruder", "x", retries=0, now=T0)
    with pytest.raises(LeaseLost):
        engine.extend_external_task_lock(task.id, "intruder", 5000, now=T0)
    with pytest.raises(Forbidden):
        engine.complete_external_task(task.id, "w1", topics={"other"}, now=T0)
    with pytest.raises(InvalidOperation, match="workerId is required"):
        fetch(engine, "")
    with pytest.raises(InvalidOperation, match="lockDuration"):
        fetch(engine, lock_ms=0)
    assert table_dump(engine) == before
