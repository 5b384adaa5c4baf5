"""Camunda 7's user-task attribute tests, ported (issue 21, item 2): TaskDueDateExtensionsTest,
TaskFollowUpDateExtensionsTest, TaskPriorityExtensionsTest and
TaskAssignmentExtensionsTest. Each test deploys the original's BPMN file unchanged
(``models/camunda``, Apache-2.0, see PROVENANCE) and asserts what the original asserts on
the created task, on SQLite and PostgreSQL. A date without a zone is read as UTC (Camunda:
the JVM's zone).

Originals: camunda/camunda-bpm-platform,
engine/src/test/java/org/camunda/bpm/engine/test/bpmn/usertask/*.java
(left out: see LEFT_OUT.md).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bpm.handlers import TaskContext
from bpm.testing import BpmTest
from tests.conformance.scopes_kit import complete_task, deploy, ended, open_tasks


@pytest.mark.parametrize(
    ("method", "model", "key", "field", "value", "expected"),
    [
        (
            "testDueDateExtension",
            "TaskDueDateExtensionsTest.testDueDateExtension",
            "dueDateExtension",
            "due_at",
            "1986-07-06T12:10:00Z",
            datetime(1986, 7, 6, 12, 10, tzinfo=UTC),
        ),
        (
            "testDueDateStringExtension",
            "TaskDueDateExtensionsTest.testDueDateStringExtension",
            "dueDateExtension",
            "due_at",
            "1986-07-06T12:10:00",
            datetime(1986, 7, 6, 12, 10, tzinfo=UTC),
        ),
        (
            "testUserTaskFollowUpDateExtension",
            "TaskFollowUpDateExtensionsTest.testUserTaskFollowUpDate",
            "process",
            "follow_up_at",
            "2015-01-01T12:10:00Z",
            datetime(2015, 1, 1, 12, 10, tzinfo=UTC),
        ),
        (
            "testUserTaskFollowUpDateStringExtension",
            "TaskFollowUpDateExtensionsTest.testUserTaskFollowUpDate",
            "process",
            "follow_up_at",
            "2015-01-01T12:10:00",
            datetime(2015, 1, 1, 12, 10, tzinfo=UTC),
        ),
    ],
)
def test_date_extension(
    kit: BpmTest, method: str, model: str, key: str, field: str, value: str, expected: datetime
) -> None:
    # TaskDueDateExtensionsTest.testDueDate{,String}Extension,
    # TaskFollowUpDateExtensionsTest.testUserTaskFollowUpDate{,String}Extension: the Date
    # variable arrives as its ISO text (a JSON variable), the string one as written
    deploy(kit, f"{model}.bpmn20.xml")
    pi = kit.start(key, {"dateVariable": value})
    (task,) = open_tasks(kit, pi.id)
    assert getattr(task, field) == expected


@pytest.mark.parametrize(
    ("method", "model", "key", "field"),
    [
        (
            "testRelativeDueDate",
            "TaskDueDateExtensionsTest.testRelativeDueDate",
            "dueDateExtension",
            "due_at",
        ),
        (
            "testUserTaskRelativeFollowUpDate",
            "TaskFollowUpDateExtensionsTest.testUserTaskFollowUpDate",
            "process",
            "follow_up_at",
        ),
    ],
)
def test_relative_date(kit: BpmTest, method: str, model: str, key: str, field: str) -> None:
    # TaskDueDateExtensionsTest.testRelativeDueDate,
    # TaskFollowUpDateExtensionsTest.testUserTaskRelativeFollowUpDate: P2DT2H30M after creation
    deploy(kit, f"{model}.bpmn20.xml")
    pi = kit.start(key, {"dateVariable": "P2DT2H30M"})
    (task,) = open_tasks(kit, pi.id)
    assert getattr(task, field) - task.created_at == timedelta(days=2, hours=2, minutes=30)


def test_priority_extension(kit: BpmTest) -> None:
    # TaskPriorityExtensionsTest.testPriorityExtension: 25, then 75
    deploy(kit, "TaskPriorityExtensionsTest.testPriorityExtension.bpmn20.xml")
    for priority in (25, 75):
        pi = kit.start("taskPriorityExtension", {"taskPriority": priority})
        (task,) = open_tasks(kit, pi.id)
        assert task.priority == priority


def test_priority_extension_string(kit: BpmTest) -> None:
    # TaskPriorityExtensionsTest.testPriorityExtensionString
    deploy(kit, "TaskPriorityExtensionsTest.testPriorityExtensionString.bpmn20.xml")
    pi = kit.start("taskPriorityExtensionString")
    (task,) = open_tasks(kit, pi.id)
    assert task.priority == 42


def test_assignee_extension(kit: BpmTest) -> None:
    # TaskAssignmentExtensionsTest.testAssigneeExtension
    deploy(kit, "TaskAssignmentExtensionsTest.testAssigneeExtension.bpmn20.xml")
    kit.start("assigneeExtension")
    (task,) = kit.engine.user_tasks(assignee="kermit")
    assert task.name == "my task"


def candidates_of(kit: BpmTest, user: str) -> list[str]:
    """``taskCandidateUser(user)`` for users named as candidates (no groups involved)."""
    return [t.id for t in open_tasks(kit) if user in t.candidate_users]


def test_candidate_users_extension(kit: BpmTest) -> None:
    # TaskAssignmentExtensionsTest.testCandidateUsersExtension
    deploy(kit, "TaskAssignmentExtensionsTest.testCandidateUsersExtension.bpmn20.xml")
    kit.start("candidateUsersExtension")
    assert len(candidates_of(kit, "kermit")) == 1
    assert len(candidates_of(kit, "gonzo")) == 1


def test_mixed_candidate_user_definition(kit: BpmTest) -> None:
    # TaskAssignmentExtensionsTest.testMixedCandidateUserDefinition: camunda:candidateUsers
    # and potentialOwner user(...) together
    deploy(kit, "TaskAssignmentExtensionsTest.testMixedCandidateUserDefinition.bpmn20.xml")
    kit.start("mixedCandidateUser")
    for user in ("kermit", "fozzie", "gonzo"):
        assert len(candidates_of(kit, user)) == 1
    assert candidates_of(kit, "mispiggy") == []


# -- UserTaskTest ----------------------------------------------------------------------------

MEMBERS = {"fozzie": ("accountancy",), "kermit": ("management",)}
"""UserTaskTest.setUp's identity service: who is in which group."""


def candidate_tasks(kit: BpmTest, user: str) -> list[str]:
    """``taskCandidateUser(user)``: open tasks naming the user, or one of their groups."""
    groups = MEMBERS.get(user, ())
    return [
        t.id
        for t in open_tasks(kit)
        if user in t.candidate_users or any(g in t.candidate_groups for g in groups)
    ]


def test_query_sorting_with_parameter(kit: BpmTest) -> None:
    # UserTaskTest.testQuerySortingWithParameter
    deploy(kit, "UserTaskTest.testQuerySortingWithParameter.bpmn20.xml")
    pi = kit.start("oneTaskProcess")
    assert len(open_tasks(kit, pi.id)) == 1


def test_complete_after_parallel_gateway(kit: BpmTest) -> None:
    # UserTaskTest.testCompleteAfterParallelGateway: the create listener (field injection
    # expression="some expression value") sets the task-local validationRule
    def create_listener(ctx: TaskContext) -> None:
        ctx.set_local("validationRule", "some expression value")

    kit.handler(
        "org.camunda.bpm.engine.test.bpmn.usertask.UserTaskTestCreateTaskListener", create_listener
    )
    deploy(kit, "UserTaskTest.testCompleteAfterParallelGateway.bpmn20.xml")
    kit.start("ForkProcess")
    assert len(open_tasks(kit)) == 2
    (task,) = [t for t in open_tasks(kit) if t.node_id == "SimpleUser"]
    complete_task(kit, task)


def test_complex_scenario_with_subprocesses_and_parallel_gateways(kit: BpmTest) -> None:
    # UserTaskTest.testComplexScenarioWithSubprocessesAndParallelGateways;
    # camunda:expression="${true}" runs as the inline handler "true"
    kit.handler("true", lambda ctx: None)
    deploy(kit, "UserTaskTest.testComplexScenarioWithSubprocessesAndParallelGateways.bpmn")
    kit.start("processWithSubProcessesAndParallelGateways")
    assert len(open_tasks(kit)) == 13


def test_simple_process(kit: BpmTest) -> None:
    # UserTaskTest.testSimpleProcess: candidates by group, a claim, the next group's task
    deploy(kit, "UserTaskTest.testSimpleProcess.bpmn20.xml")
    pi = kit.start("financialReport")
    (task_id,) = candidate_tasks(kit, "fozzie")
    (task,) = [t for t in open_tasks(kit) if t.id == task_id]
    assert task.name == "Write monthly financial report"
    kit.engine.claim_user_task(task.id, "fozzie")
    assert len(kit.engine.user_tasks(assignee="fozzie")) == 1
    complete_task(kit, task)
    assert candidate_tasks(kit, "fozzie") == []
    (task_id,) = candidate_tasks(kit, "kermit")
    (task,) = [t for t in open_tasks(kit) if t.id == task_id]
    assert task.name == "Verify monthly financial report"
    complete_task(kit, task)
    assert ended(kit, pi.id)
