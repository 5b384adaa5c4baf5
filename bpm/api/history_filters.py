"""Camunda's filters of ``/history/process-instance``, ``/history/activity-instance`` and
``/history/incident`` -> the engine's queries. Filters this engine cannot evaluate answer
400 when given a value (see :meth:`Params.refuse`)."""

from __future__ import annotations

from bpm.api.camunda_params import Params
from bpm.engine.queries import ActivityQuery, IncidentQuery, InstanceQuery
from bpm.runtime.states import IncidentState, InstanceState
from bpm.store.history_queries import INCIDENT_SORTS, INSTANCE_SORTS

INSTANCE_FILTERS = (
    ("processInstanceId", "string"), ("processInstanceIds", "list"),
    ("processDefinitionId", "string"), ("processDefinitionKey", "string"),
    ("processDefinitionKeyIn", "list"), ("processDefinitionKeyNotIn", "list"),
    ("processInstanceBusinessKey", "string"), ("processInstanceBusinessKeyIn", "list"),
    ("processInstanceBusinessKeyLike", "string"), ("businessKey", "string"),
    ("finished", "boolean"), ("unfinished", "boolean"), ("active", "boolean"),
    ("suspended", "boolean"), ("completed", "boolean"), ("externallyTerminated", "boolean"),
    ("internallyTerminated", "boolean"), ("withIncidents", "boolean"),
    ("startedBefore", "date"), ("startedAfter", "date"), ("finishedBefore", "date"),
    ("finishedAfter", "date"),
)  # fmt: skip
#: Camunda sort keys of /history/activity-instance this engine orders by.
ACTIVITY_SORTS = ("startTime", "occurrence")
ACTIVITY_FILTERS = (
    ("processInstanceId", "string"), ("activityId", "string"), ("activityType", "string"),
    ("activityInstanceId", "string"), ("executionId", "string"), ("finished", "boolean"),
    ("unfinished", "boolean"), ("canceled", "boolean"),
)  # fmt: skip
INCIDENT_FILTERS = (
    ("incidentId", "string"), ("incidentType", "string"), ("incidentMessageLike", "string"),
    ("processDefinitionId", "string"), ("processDefinitionKey", "string"),
    ("processDefinitionKeyIn", "list"), ("processInstanceId", "string"),
    ("activityId", "string"), ("failedActivityId", "string"), ("open", "boolean"),
    ("resolved", "boolean"), ("deleted", "boolean"), ("createTimeBefore", "date"),
    ("createTimeAfter", "date"),
)  # fmt: skip

_INSTANCE_UNSUPPORTED = (
    "superProcessInstanceId", "subProcessInstanceId", "superCaseInstanceId",
    "subCaseInstanceId", "caseInstanceId", "tenantIdIn", "withoutTenantId", "variables",
    "executedActivityIdIn", "activeActivityIdIn", "executedActivityAfter",
    "executedActivityBefore", "executedJobAfter", "executedJobBefore", "startedBy",
    "incidentType", "incidentStatus", "incidentMessage", "incidentMessageLike",
    "withRootIncidents", "processDefinitionName", "processDefinitionNameLike", "orQueries",
    "variableNamesIgnoreCase", "variableValuesIgnoreCase",
)  # fmt: skip
_ACTIVITY_UNSUPPORTED = (
    "processDefinitionId", "activityName", "taskAssignee", "completeScope", "tenantIdIn",
    "withoutTenantId", "startedBefore", "startedAfter", "finishedBefore", "finishedAfter",
)  # fmt: skip
_INCIDENT_UNSUPPORTED = (
    "incidentMessage", "causeIncidentId", "rootCauseIncidentId", "configuration",
    "historyConfiguration", "tenantIdIn", "withoutTenantId", "jobDefinitionIdIn",
    "endTimeBefore", "endTimeAfter",
)  # fmt: skip

_FINISHED = (
    InstanceState.COMPLETED,
    InstanceState.TERMINATED,
    InstanceState.FAILED,
    InstanceState.COMPENSATED,
)
_RUNNING = (InstanceState.ACTIVE, InstanceState.SUSPENDED, InstanceState.COMPENSATING)
_STATE_FLAGS = {
    "finished": _FINISHED,
    "unfinished": _RUNNING,
    "active": (InstanceState.ACTIVE, InstanceState.COMPENSATING),
    "suspended": (InstanceState.SUSPENDED,),
    "completed": (InstanceState.COMPLETED,),
    "externallyTerminated": (InstanceState.TERMINATED,),
    "internallyTerminated": (InstanceState.FAILED, InstanceState.COMPENSATED),
}


def _ids(p: Params, one: str, many: str) -> tuple[str, ...] | None:
    single = p.text(one)
    several = p.texts(many)
    if single is not None and several is not None:
        return tuple(x for x in several if x == single)
    return (single,) if single is not None else several


def instance_query(p: Params) -> InstanceQuery:
    p.refuse(_INSTANCE_UNSUPPORTED)
    states: tuple[InstanceState, ...] | None = None
    for flag, wanted in _STATE_FLAGS.items():
        if p.true(flag):
            states = wanted if states is None else tuple(s for s in states if s in wanted)
    business_key = p.text("processInstanceBusinessKey")
    if business_key is None:
        business_key = p.text("businessKey")
    return InstanceQuery(
        instance_ids=_ids(p, "processInstanceId", "processInstanceIds"),
        definition_id=p.text("processDefinitionId"),
        definition_keys=_ids(p, "processDefinitionKey", "processDefinitionKeyIn"),
        definition_keys_not=p.texts("processDefinitionKeyNotIn"),
        business_key=business_key,
        business_keys=p.texts("processInstanceBusinessKeyIn"),
        business_key_like=p.text("processInstanceBusinessKeyLike"),
        states=states,
        started_before=p.date("startedBefore"),
        started_after=p.date("startedAfter"),
        finished_before=p.date("finishedBefore"),
        finished_after=p.date("finishedAfter"),
        with_incidents=p.flag("withIncidents"),
        sorting=p.sorting(INSTANCE_SORTS),
    )


def activity_query(p: Params) -> ActivityQuery:
    p.refuse(_ACTIVITY_UNSUPPORTED)
    finished = None
    if p.true("finished"):
        finished = True
    # finished and unfinished both true: nothing matches (Camunda ANDs them), not a 400
    contradictory = bool(finished) and p.true("unfinished")
    if p.true("unfinished"):
        finished = False
    canceled = True if p.true("canceled") else None
    nodes = _ids(p, "activityId", "activityIdIn")
    activity = p.text("activityInstanceId")
    if activity is not None:  # activityId:executionId
        node, _, _token = activity.partition(":")
        nodes = tuple(x for x in (nodes or (node,)) if x == node)
    sorting = p.sorting(ACTIVITY_SORTS)
    kind = p.text("activityType")
    return ActivityQuery(
        instance_ids=_ids(p, "processInstanceId", "processInstanceIdIn"),
        node_ids=() if contradictory else nodes,
        activity_types=(kind,) if kind is not None else None,
        finished=finished,
        canceled=canceled,
        descending=bool(sorting) and not sorting[0][1],
        execution_id=p.text("executionId") or (activity.partition(":")[2] if activity else None),
    )


def incident_query(p: Params) -> IncidentQuery:
    p.refuse(_INCIDENT_UNSUPPORTED)
    states: tuple[IncidentState, ...] | None = None
    for flag, state in (
        ("open", IncidentState.OPEN),
        ("resolved", IncidentState.RESOLVED),
        ("deleted", IncidentState.DELETED),
    ):
        if p.true(flag):
            states = (state,) if states is None else tuple(s for s in states if s is state)
    node = p.text("activityId")
    failed = p.text("failedActivityId")
    if node is not None and failed is not None and node != failed:
        states = ()
    kind = p.text("incidentType")
    return IncidentQuery(
        incident_id=p.text("incidentId"),
        instance_ids=_ids(p, "processInstanceId", "processInstanceIdIn"),
        types=(kind,) if kind is not None else None,
        node_id=node or failed,
        states=states,
        definition_id=p.text("processDefinitionId"),
        definition_keys=_ids(p, "processDefinitionKey", "processDefinitionKeyIn"),
        message_like=p.text("incidentMessageLike"),
        created_before=p.date("createTimeBefore"),
        created_after=p.date("createTimeAfter"),
        sorting=p.sorting(INCIDENT_SORTS),
    )
