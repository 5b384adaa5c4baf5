"""A report on an expired lock is refused every time (issue 18 item 6).

The lock's expiry, read on the database clock at the call, decides: not whether the
reclaimer (or a fetch of the topic, which counts lost locks first) ran in between. A
complete, failure, BPMN error or lock extension that comes after the lock expired answers
400 (``LeaseLost``) and changes nothing, exactly as when another worker took the task.
Time is injected: the lock expires on the injected clock and no reclaimer runs.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from bpm import Engine
from bpm.builder import Process
from bpm.errors import LeaseLost
from bpm.runtime.external import FetchRequest, TopicRequest
from bpm.runtime.states import TaskState
from tests.engine_helpers import table_dump

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
LOCK_MS = 1000

Report = Callable[[Engine, str, datetime], None]
REPORTS: dict[str, Report] = {
    "complete": lambda e, t, at: e.complete_external_task(t, "w1", {"late": True}, now=at),
    "failure": lambda e, t, at: e.fail_external_task(t, "w1", "late", retries=0, now=at),
    "bpmnError": lambda e, t, at: e.external_task_bpmn_error(t, "w1", "E", now=at),
    "extendLock": lambda e, t, at: e.extend_external_task_lock(t, "w1", 60_000, now=at),
}


def _deploy(engine: Engine) -> None:
    engine.deploy(
        Process("late")
        .start("start")
        .service_task("call", topic="calls")
        .end("end")
        .sequence("start", "call", "end")
        .build()
    )


def _locked(engine: Engine, at: datetime, trial: int = 0) -> str:
    """A new instance's task, locked by ``w1`` at ``at`` (earlier trials' tasks are left
    alone: the fetch asks for this instance's business key)."""
    engine.start("late", business_key=f"trial-{trial}", now=at)
    req = FetchRequest("w1", 1, (TopicRequest("calls", LOCK_MS, business_key=f"trial-{trial}"),))
    [task] = engine.fetch_and_lock(req, now=at)
    return task.id


# Just after the expiry, well after it, and with a fetch that matched nothing between
# (another topic: it counts nobody's lost locks) or one of the same topic that found
# nothing else to take (it counts this lost lock first).
LATENESS_MS = [1, 2, 5, 50, 999, 1000, 60_000, 3_600_000]


@pytest.mark.parametrize("report", sorted(REPORTS))
@pytest.mark.parametrize("between", ["nothing", "fetch-other-topic", "fetch-same-topic"])
def test_a_report_on_an_expired_lock_is_refused_every_time(
    engine: Engine, report: str, between: str
) -> None:
    _deploy(engine)
    for trial, late in enumerate(LATENESS_MS):
        t0 = T0 + timedelta(hours=2 * trial)
        task_id = _locked(engine, t0, trial)
        at = t0 + timedelta(milliseconds=LOCK_MS + late)
        if between != "nothing":
            topic = "calls" if between == "fetch-same-topic" else "elsewhere"
            req = FetchRequest("w2", 1, (TopicRequest(topic, LOCK_MS, business_key="none"),))
            assert engine.fetch_and_lock(req, now=at) == []
        before = table_dump(engine)
        with pytest.raises(LeaseLost):
            REPORTS[report](engine, task_id, at)
        assert table_dump(engine) == before, (report, late)
        # the task stays open for the next worker (its lost lock counted or to be counted)
        assert engine.external_task(task_id).state in (TaskState.LOCKED, TaskState.READY)


@pytest.mark.parametrize("report", sorted(REPORTS))
def test_a_report_at_the_last_moment_of_the_lock_is_taken(engine: Engine, report: str) -> None:
    """The lock holds up to and including its expiry instant (``lock_expires_at >= now``)."""
    _deploy(engine)
    task_id = _locked(engine, T0)
    at = T0 + timedelta(milliseconds=LOCK_MS)
    REPORTS[report](engine, task_id, at)
    if report == "complete":
        [inst] = engine.instances()
        assert inst.state.value == "completed"
    elif report == "extendLock":
        task = engine.external_task(task_id)
        assert task.lock_expires_at == at + timedelta(milliseconds=60_000)
    else:  # retries 0, or an uncaught BPMN error: an incident
        assert engine.external_task(task_id).state is TaskState.FAILED
        assert len(engine.incidents()) == 1
