"""A Celery worker's log says what failed: every failed attempt, the incident it ends in
and a missing handler, at WARNING or above, with the node, the instance and the reason
(Celery itself logs ``Task bpm.run_token[...] succeeded: 1`` for each of them)."""

from __future__ import annotations

import re

import pytest

from bpm import Engine
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from tests.e2e.conftest import StartWorkers
from tests.e2e.processes import order_model
from tests.support import eventually

pytestmark = pytest.mark.slow


def lost_handler_model() -> ProcessModel:
    nodes: list[n.Node] = [
        n.StartEvent("start"),
        n.ServiceTask("lookup", handler="no-such-handler"),
        n.EndEvent("end"),
    ]
    flows = (n.Flow("f1", "start", "lookup"), n.Flow("f2", "lookup", "end"))
    return ProcessModel(key="lost-handler", nodes={x.id: x for x in nodes}, flows=flows)


def lines(log: str, level: str, needle: str) -> list[str]:
    """The worker's log lines at ``level`` (Celery's ``[time: LEVEL/process]``) that hold
    ``needle``."""
    found = re.compile(rf"^\[[^]]*: {level}/[^]]*\] (.*)$", re.M).findall(log)
    return [line for line in found if needle in line]


def test_failed_attempts_incidents_and_missing_handlers_are_warnings_in_the_worker_log(
    celery_engine: Engine, start_workers: StartWorkers, tag: str
) -> None:
    [worker] = start_workers(1)  # BPM_LOG_FORMAT unset: Celery's text log
    celery_engine.deploy(order_model())
    celery_engine.deploy(lost_handler_model())
    broken = celery_engine.start(
        "order", {"amount": 120, "tag": tag, "fail_at": "reserve-stock", "fail_attempts": 9}
    ).id
    lost = celery_engine.start("lost-handler").id
    [broken_incident] = eventually(
        lambda: celery_engine.incidents(broken), what="the incident of the failing step"
    )
    [lost_incident] = eventually(
        lambda: celery_engine.incidents(lost), what="the incident of the missing handler"
    )

    def logged() -> bool:
        log = worker.log()
        return broken_incident.id in log and lost_incident.id in log

    eventually(logged, what="both incidents in the worker's log")
    log = worker.log()

    retried = lines(log, "WARNING", f"step reserve-stock of instance {broken} failed")
    assert retried == [
        f"step reserve-stock of instance {broken} failed (attempt {i}), it runs again: "
        f"RuntimeError: reserve-stock failed on purpose (attempt {i})"
        for i in (1, 2)
    ]
    [incident] = lines(log, "ERROR", f"incident {broken_incident.id}:")
    assert incident == (
        f"incident {broken_incident.id}: step reserve-stock of instance {broken} failed "
        "(attempt 3, the last): RuntimeError: reserve-stock failed on purpose (attempt 3); "
        f"fix the cause, then retry it (bpm retry {broken_incident.id}, or the cockpit)"
    )

    missing = lines(log, "WARNING", f"step lookup of instance {lost} failed")
    assert len(missing) == 2
    assert all("no handler named 'no-such-handler' is registered" in x for x in missing)
    assert all("import the module that defines it (BPM_HANDLERS" in x for x in missing)
    [incident] = lines(log, "ERROR", f"incident {lost_incident.id}:")
    assert f"step lookup of instance {lost} failed (attempt 3, the last)" in incident
    assert "HandlerNotFound: no handler named 'no-such-handler'" in incident
    # Completed steps stay out of a text log at INFO: Celery logs each task already.
    assert not lines(log, "INFO", "completed (attempt")
    assert not lines(log, "DEBUG", "completed (attempt")
