"""An external task's lock that runs out is a failed attempt (issue 13 item 1).

A worker that stopped heartbeating (``extendLock``) loses its lock on the lock's own
schedule; the lost attempt counts, so a task that kills its worker every time ends in an
incident instead of being fetched for ever. Runs on PostgreSQL and SQLite.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from bpm import Engine
from bpm.builder import Process
from bpm.errors import LeaseLost
from bpm.runtime.external import FetchRequest, TopicRequest
from bpm.runtime.states import TaskState

LOCK_MS = 1000


def deploy(engine: Engine, key: str, retry: str | None = None) -> None:
    engine.deploy(
        Process(key)
        .start("start")
        .service_task("call", topic="calls", retry=retry)
        .end("end")
        .sequence("start", "call", "end")
        .build()
    )


def fetch(engine: Engine, worker: str, now: object) -> list[str]:
    req = FetchRequest(worker, 10, (TopicRequest("calls", LOCK_MS),))
    return [t.id for t in engine.fetch_and_lock(req, now=now)]  # type: ignore[arg-type]


def test_a_task_that_loses_its_worker_every_time_ends_in_an_incident(engine: Engine) -> None:
    deploy(engine, "lost")
    inst = engine.start("lost")
    now = engine.core.now()
    seen: list[tuple[int | None, int]] = []
    for attempt in range(3):  # the default policy: 3 attempts
        [task_id] = fetch(engine, f"w{attempt}", now)
        # The worker dies: no complete, no extendLock. The lock runs out on its own.
        now += timedelta(milliseconds=LOCK_MS + 1)
        assert engine.reclaim_expired_external_locks(now=now) == 1
        assert engine.reclaim_expired_external_locks(now=now) == 0  # counted once
        if attempt < 2:
            task = engine.external_task(task_id)
            seen.append((task.retries, task.attempt))
            assert task.state is TaskState.READY and task.lock_owner is None
    assert seen == [(2, 1), (1, 2)]
    assert fetch(engine, "w9", now) == []  # no attempt left: nobody gets it again
    [incident] = engine.incidents(inst.id)
    assert incident.external_task_id == task_id
    assert "worker lost" in (incident.message or "")
    history = engine.history(inst.id)
    expired = [e for e in history if e.type == "external_task_lock_expired"]
    assert [e.payload["worker"] for e in expired] == ["w0", "w1", "w2"]
    failed = [e for e in history if e.type == "attempt_failed"]
    assert [e.payload["attempt"] for e in failed] == [1, 2, 3]
    assert all("worker lost" in e.payload["error"] for e in failed)


def test_the_models_retry_policy_counts_lost_locks(engine: Engine) -> None:
    deploy(engine, "once", retry="none()")
    inst = engine.start("once")
    now = engine.core.now()
    fetch(engine, "w1", now)
    now += timedelta(seconds=2)
    assert engine.reclaim_expired_external_locks(now=now) == 1
    assert len(engine.incidents(inst.id)) == 1


def test_a_fetch_counts_an_expired_lock_before_it_takes_the_task(engine: Engine) -> None:
    """No reclaimer ran: the next fetch of the topic counts the lost attempt itself."""
    deploy(engine, "fetched")
    inst = engine.start("fetched")
    now = engine.core.now()
    [task_id] = fetch(engine, "w1", now)
    assert fetch(engine, "w2", now) == []  # locked, not expired: nobody else gets it
    later = now + timedelta(milliseconds=LOCK_MS + 1)
    assert fetch(engine, "w2", later) == [task_id]
    task = engine.external_task(task_id)
    assert task.lock_owner == "w2" and task.retries == 2 and task.attempt == 1
    history = [e.type for e in engine.history(inst.id)]
    assert history.count("external_task_lock_expired") == 1
    # The worker that lost the lock can neither complete nor fail it any more, and its
    # refused report changes nothing.
    before = engine.history(inst.id)
    with pytest.raises(LeaseLost):
        engine.complete_external_task(task_id, "w1", {"late": True}, now=later)
    with pytest.raises(LeaseLost):
        engine.fail_external_task(task_id, "w1", "late failure", now=later)
    assert engine.history(inst.id) == before
    assert "late" not in engine.get_instance(inst.id).variables
    engine.complete_external_task(task_id, "w2", {"done": True}, now=later)
    assert engine.get_instance(inst.id).ended


def test_a_live_lock_is_not_counted(engine: Engine) -> None:
    deploy(engine, "live")
    inst = engine.start("live")
    now = engine.core.now()
    [task_id] = fetch(engine, "w1", now)
    assert engine.reclaim_expired_external_locks(now=now + timedelta(milliseconds=500)) == 0
    task = engine.external_task(task_id)
    assert task.state is TaskState.LOCKED and task.retries is None and task.attempt == 0
    assert "external_task_lock_expired" not in [e.type for e in engine.history(inst.id)]
