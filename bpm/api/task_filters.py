"""Camunda's task filters (``/task`` and ``/history/task``) -> :class:`TaskQuery`.

The same names work as query parameters (GET) and in a JSON body (POST). Filters this
engine cannot evaluate (task and process variables, OR queries, delegation, case
instances...) answer 400 when given a value (see :meth:`Params.refuse`).
"""

from __future__ import annotations

from dataclasses import replace

from bpm.api.camunda_params import Params
from bpm.api.sort_keys import HISTORIC_SORT_KEYS, TASK_SORT_KEYS
from bpm.engine.queries import TaskQuery
from bpm.runtime.states import UserTaskState

_UNSUPPORTED = (
    "taskVariables", "processVariables", "caseInstanceVariables", "orQueries",
    "delegationState", "caseInstanceId",
    "caseInstanceBusinessKey", "caseDefinitionId", "caseDefinitionKey", "caseExecutionId",
    "parentTaskId", "activityInstanceIdIn", "processDefinitionName",
    "processDefinitionNameLike", "assigneeExpression", "ownerExpression",
    "candidateUserExpression", "candidateGroupExpression", "candidateGroupsExpression",
    "dueDateExpression", "dueBeforeExpression", "dueAfterExpression",
    "followUpDateExpression", "followUpBeforeExpression", "followUpAfterExpression",
    "createdOnExpression", "createdBeforeExpression", "createdAfterExpression",
    "followUpBeforeOrNotExistent", "followUpBeforeOrNotExistentExpression",
    "withCommentAttachmentInfo", "taskVariablesIgnoreCase", "variableNamesIgnoreCase",
    "variableValuesIgnoreCase", "nameNotEqual", "nameNotLike", "assigneeNotIn",
    "processDefinitionKeyNotIn", "keyNotIn", "candidateGroupLike",
)  # fmt: skip
_UNSUPPORTED_HISTORIC = (
    "taskParentTaskId", "caseDefinitionId", "caseDefinitionKey", "caseDefinitionName",
    "caseInstanceId", "caseExecutionId", "activityInstanceIdIn", "taskDeleteReason",
    "taskDeleteReasonLike", "taskVariables",
    "processVariables", "taskInvolvedUser", "taskInvolvedGroup", "taskHadCandidateUser",
    "taskHadCandidateGroup", "orQueries", "processDefinitionName",
    "variableNamesIgnoreCase", "variableValuesIgnoreCase", "taskFollowUpDate",
    "taskDueDate",
)  # fmt: skip


def _without_candidates(q: TaskQuery, *, groups: bool, users: bool) -> TaskQuery:
    """``withoutCandidateGroups`` / ``withoutCandidateUsers``."""
    if (groups and q.with_candidate_groups) or (users and q.with_candidate_users):
        return replace(q, task_ids=())  # both: nothing matches (Camunda ANDs them too)
    if groups:
        q = replace(q, with_candidate_groups=False)
    if users:
        q = replace(q, with_candidate_users=False)
    return q


def _one_or_many(p: Params, one: str, many: str) -> tuple[str, ...] | None:
    single = p.text(one)
    several = p.texts(many)
    if single is not None and several is not None:
        return tuple(x for x in several if x == single)
    if single is not None:
        return (single,)
    return several


def task_query(p: Params) -> TaskQuery:
    """The filter of ``/task`` (open tasks)."""
    p.refuse(_UNSUPPORTED)
    assigned = p.flag("assigned")
    # assigned and unassigned both true: nothing matches (Camunda ANDs them), not a 400
    contradictory = bool(assigned) and p.true("unassigned")
    if p.true("unassigned"):
        assigned = False
    groups = p.texts("candidateGroups")
    group = p.text("candidateGroup")
    if group is not None:
        groups = (*(groups or ()), group)
    suspended = None
    if p.true("active"):
        suspended = False
    if p.true("suspended"):
        suspended = True
    q = TaskQuery(
        states=(UserTaskState.OPEN,),
        task_ids=() if contradictory else _one_or_many(p, "taskId", "taskIdIn"),
        instance_ids=_one_or_many(p, "processInstanceId", "processInstanceIdIn"),
        business_keys=_one_or_many(p, "processInstanceBusinessKey", "processInstanceBusinessKeyIn"),
        business_key_like=p.text("processInstanceBusinessKeyLike"),
        definition_id=p.text("processDefinitionId"),
        definition_keys=_one_or_many(p, "processDefinitionKey", "processDefinitionKeyIn"),
        execution_id=p.text("executionId"),
        node_ids=_one_or_many(p, "taskDefinitionKey", "taskDefinitionKeyIn"),
        node_like=p.text("taskDefinitionKeyLike"),
        assignees=_one_or_many(p, "assignee", "assigneeIn"),
        assignee_like=p.text("assigneeLike"),
        assigned=assigned,
        owner=p.text("owner"),
        candidate_groups=groups,
        candidate_user=p.text("candidateUser"),
        involved_user=p.text("involvedUser"),
        include_assigned=p.true("includeAssignedTasks"),
        with_candidate_groups=True if p.true("withCandidateGroups") else None,
        with_candidate_users=True if p.true("withCandidateUsers") else None,
        name=p.text("name"),
        name_like=p.text("nameLike"),
        description=p.text("description"),
        description_like=p.text("descriptionLike"),
        priority=p.integer("priority"),
        min_priority=p.integer("minPriority"),
        max_priority=p.integer("maxPriority"),
        due_before=p.date("dueBefore"),
        due_after=p.date("dueAfter"),
        due_on=p.date("dueDate"),
        without_due_date=p.true("withoutDueDate"),
        follow_up_before=p.date("followUpBefore"),
        follow_up_after=p.date("followUpAfter"),
        created_before=p.date("createdBefore"),
        created_after=p.date("createdAfter"),
        created_on=p.date("createdOn"),
        suspended=suspended,
        tenant_ids=p.texts("tenantIdIn"),
        without_tenant=p.true("withoutTenantId"),
        sorting=p.sorting(TASK_SORT_KEYS),
    )
    return _without_candidates(
        q, groups=p.true("withoutCandidateGroups"), users=p.true("withoutCandidateUsers")
    )


def historic_task_query(p: Params) -> TaskQuery:
    """The filter of ``/history/task`` (tasks of every state)."""
    p.refuse(_UNSUPPORTED_HISTORIC)
    states: tuple[UserTaskState, ...] = ()
    if p.true("finished"):
        states = (UserTaskState.COMPLETED, UserTaskState.CANCELLED)
    # finished and unfinished both true: nothing matches (Camunda ANDs them), not a 400
    contradictory = bool(states) and p.true("unfinished")
    if p.true("unfinished"):
        states = (UserTaskState.OPEN,)
    assigned = True if p.true("assigned") else None
    if p.true("unassigned"):
        assigned = False
    instance_finished = None
    if p.true("processFinished"):
        instance_finished = True
    if p.true("processUnfinished"):
        instance_finished = False
    q = TaskQuery(
        states=states,
        task_ids=() if contradictory else _one_or_many(p, "taskId", "taskIdIn"),
        instance_ids=_one_or_many(p, "processInstanceId", "processInstanceIdIn"),
        business_keys=_one_or_many(p, "processInstanceBusinessKey", "processInstanceBusinessKeyIn"),
        business_key_like=p.text("processInstanceBusinessKeyLike"),
        definition_id=p.text("processDefinitionId"),
        definition_keys=_one_or_many(p, "processDefinitionKey", "processDefinitionKeyIn"),
        execution_id=p.text("executionId"),
        node_ids=_one_or_many(p, "taskDefinitionKey", "taskDefinitionKeyIn"),
        assignees=_one_or_many(p, "taskAssignee", "taskAssigneeIn"),
        assignee_like=p.text("taskAssigneeLike"),
        assigned=assigned,
        owner=p.text("taskOwner"),
        owner_like=p.text("taskOwnerLike"),
        name=p.text("taskName"),
        name_like=p.text("taskNameLike"),
        description=p.text("taskDescription"),
        description_like=p.text("taskDescriptionLike"),
        priority=p.integer("taskPriority"),
        due_before=p.date("taskDueDateBefore"),
        due_after=p.date("taskDueDateAfter"),
        without_due_date=p.true("withoutTaskDueDate"),
        follow_up_before=p.date("taskFollowUpDateBefore"),
        follow_up_after=p.date("taskFollowUpDateAfter"),
        created_before=p.date("startedBefore"),
        created_after=p.date("startedAfter"),
        finished_before=p.date("finishedBefore"),
        finished_after=p.date("finishedAfter"),
        with_candidate_groups=True if p.true("withCandidateGroups") else None,
        instance_finished=instance_finished,
        tenant_ids=p.texts("tenantIdIn"),
        without_tenant=p.true("withoutTenantId"),
        sorting=p.sorting(HISTORIC_SORT_KEYS),
    )
    return _without_candidates(q, groups=p.true("withoutCandidateGroups"), users=False)
