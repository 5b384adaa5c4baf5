"""Camunda 7's TerminateEndEventTest, ported in part (issue 21, item 2): each test deploys
the original's BPMN file unchanged (``models/camunda``, Apache-2.0, see PROVENANCE) and
asserts what the original asserts, on SQLite and PostgreSQL (the terminate end events in a
called process are in tests/test_semantics_21.py).

Original: camunda/camunda-bpm-platform, engine/src/test/java/org/camunda/bpm/engine/test/
bpmn/event/end/TerminateEndEventTest.java. The originals also count executions (Camunda's
execution tree, no equivalent here): the tasks and instance states are asserted.
"""

from __future__ import annotations

import pytest

from bpm.store.history_queries import InstanceQuery
from bpm.testing import BpmTest, assert_that
from tests.conformance.conftest import MODELS, complete_one


def deploy(kit: BpmTest, *methods: str) -> None:
    kit.deploy(*(MODELS / f"TerminateEndEventTest.{m}.bpmn" for m in methods))


@pytest.mark.parametrize(
    ("methods", "task"),
    [
        (("testProcessTerminate",), "preTerminateTask"),
        (("testTerminateWithSubProcess",), "preTerminateEnd"),
        (("testTerminateWithCallActivity", "subProcessNoTerminate"), "preTerminateEnd"),
        (("testTerminateInSubProcess",), "preNormalEnd"),
        (("testTerminateInSubProcessConcurrent",), "preNormalEnd"),
    ],
)
def test_terminate_ends_the_instance(kit: BpmTest, methods: tuple[str, ...], task: str) -> None:
    # TerminateEndEventTest.{testProcessTerminate, testTerminateWithSubProcess,
    # testTerminateWithCallActivity, testTerminateInSubProcess,
    # testTerminateInSubProcessConcurrent}: completing the task leads to the end
    deploy(kit, *methods)
    inst = kit.start("terminateEndEventExample")
    assert [t.node_id for t in kit.engine.user_tasks(inst.id, node_id=task)] == [task]
    complete_one(kit, task)
    assert kit.instance(inst).state.value in ("completed", "terminated")
    assert kit.engine.instances("active") == []


@pytest.mark.parametrize(
    "method", ["testTerminateInSubProcess", "testTerminateInSubProcessConcurrent"]
)
def test_terminate_in_sub_process_does_not_end_the_instance_in_history(
    kit: BpmTest, method: str
) -> None:
    # TerminateEndEventTest.testTerminateInSubProcess{,Concurrent}ShouldNotEndProcessInstanceInHistory  # noqa: E501
    # (CAM-4067): a terminate end event inside a sub-process ends the sub-process only
    deploy(kit, method)
    inst = kit.start("terminateEndEventExample")
    assert_that(inst).is_active()
    (hpi,) = kit.engine.queries.historic_instances(InstanceQuery(instance_ids=(inst.id,)))
    assert hpi.state == "ACTIVE"
    assert hpi.instance.ended_at is None
    assert hpi.delete_reason is None
