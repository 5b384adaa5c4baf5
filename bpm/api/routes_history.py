"""Camunda 7's history reads, on the engine's own history (no second log):
``/history/process-instance``, ``/history/activity-instance``, ``/history/incident``,
``/history/variable-instance`` and ``/history/task``, each with ``/count``; paged in SQL
(``firstResult``/``maxResults``, at most ``MAX_RESULTS`` rows a page)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from bpm.api import openapi as oa
from bpm.api import schemas as s
from bpm.api.auth import Principal, principal
from bpm.api.camunda_params import Params, page
from bpm.api.data_age import DataAgeRoute
from bpm.api.errors import ApiError
from bpm.api.history_filters import (
    ACTIVITY_FILTERS,
    ACTIVITY_SORTS,
    INCIDENT_FILTERS,
    INSTANCE_FILTERS,
    activity_query,
    incident_query,
    instance_query,
)
from bpm.api.routes_variables import (
    VARIABLE_FILTERS,
    deserialize_values,
    historic_variable_dto,
    variable_query,
)
from bpm.api.routes_variables import raw as _raw
from bpm.api.sort_keys import HISTORIC_SORT_KEYS
from bpm.api.task_filters import historic_task_query
from bpm.api.variables import format_date
from bpm.engine import Engine
from bpm.engine.queries import ActivityView, HistoricInstance, IncidentRow, TaskRow
from bpm.errors import NotFound
from bpm.runtime.states import IncidentState, UserTaskState
from bpm.store.history_queries import INCIDENT_SORTS, INSTANCE_SORTS
from bpm.store.variable_queries import VARIABLE_SORTS

router = APIRouter(route_class=DataAgeRoute)
Who = Annotated[Principal, Depends(principal)]
COUNT: dict[str, Any] = {"response_model": s.CountDto, "responses": oa.errors(400)}


def _engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


def _ms(start: datetime, end: datetime | None) -> int | None:
    return None if end is None else int((end - start).total_seconds() * 1000)


def _date(value: datetime) -> str:
    return format_date(value) or ""


def _list_of(model: Any) -> dict[str, Any]:
    return {"response_model": list[model], "responses": oa.errors(400)}


# -- process instances ----------------------------------------------------------------------


def instance_dto(h: HistoricInstance) -> s.HistoricProcessInstanceDto:
    inst = h.instance
    return s.HistoricProcessInstanceDto(
        id=inst.id,
        businessKey=inst.business_key,
        processDefinitionId=inst.definition_id,
        processDefinitionKey=inst.definition_key,
        processDefinitionName=h.definition_name,
        processDefinitionVersion=h.definition_version,
        startTime=_date(inst.created_at),
        endTime=format_date(inst.ended_at),
        durationInMillis=_ms(inst.created_at, inst.ended_at),
        deleteReason=h.delete_reason,
        rootProcessInstanceId=inst.id,
        state=h.state,
        tenantId=h.tenant_id,
    )


async def _instances(request: Request, who: Principal, p: Params) -> Response:
    who.check_unrestricted("read history")
    at = page(request.query_params)
    q = instance_query(p)
    found = await run_in_threadpool(
        lambda: _engine(request).history_queries.historic_instances(
            q, offset=at.offset, limit=at.limit
        )
    )
    return JSONResponse([instance_dto(h).dump() for h in found])


async def _count_instances(request: Request, who: Principal, p: Params) -> Response:
    who.check_unrestricted("read history")
    q = instance_query(p)
    n = await run_in_threadpool(
        lambda: _engine(request).history_queries.count_historic_instances(q)
    )
    return JSONResponse({"count": n})


InstanceFilter = Annotated[s.HistoricProcessInstanceQueryDto | None, Body()]


@router.get(
    "/history/process-instance",
    **_list_of(s.HistoricProcessInstanceDto),
    openapi_extra=oa.query(INSTANCE_FILTERS, oa.PAGING, oa.sorting(INSTANCE_SORTS)),
)
async def instances(request: Request, who: Who) -> Response:
    """Instances of every state, by start time unless sorted."""
    return await _instances(request, who, Params.of_query(request.query_params))


@router.post(
    "/history/process-instance",
    **_list_of(s.HistoricProcessInstanceDto),
    openapi_extra=oa.query(oa.PAGING),
)
async def instances_by_body(request: Request, who: Who, body: InstanceFilter = None) -> Response:
    return await _instances(request, who, Params.of_body(_raw(body)))


@router.get("/history/process-instance/count", **COUNT, openapi_extra=oa.query(INSTANCE_FILTERS))
async def count_instances(request: Request, who: Who) -> Response:
    return await _count_instances(request, who, Params.of_query(request.query_params))


@router.post("/history/process-instance/count", **COUNT)
async def count_instances_by_body(
    request: Request, who: Who, body: InstanceFilter = None
) -> Response:
    return await _count_instances(request, who, Params.of_body(_raw(body)))


@router.get(
    "/history/process-instance/{instance_id}",
    response_model=s.HistoricProcessInstanceDto,
    responses=oa.errors(404),
)
async def instance(instance_id: str, request: Request, who: Who) -> Response:
    who.check_unrestricted("read history")
    try:
        found = await run_in_threadpool(
            _engine(request).history_queries.historic_instance, instance_id
        )
    except NotFound:
        raise ApiError(
            404,
            "InvalidRequestException",
            f"Historic process instance with id {instance_id} does not exist",
        ) from None
    return JSONResponse(instance_dto(found).dump())


# -- activity instances ---------------------------------------------------------------------


def activity_dto(v: ActivityView) -> s.HistoricActivityInstanceDto:
    a = v.activity
    return s.HistoricActivityInstanceDto(
        id=a.id,
        parentActivityInstanceId=a.instance_id,
        activityId=a.node_id,
        activityName=v.activity_name,
        activityType=v.activity_type,
        processDefinitionKey=v.definition_key,
        processDefinitionId=v.definition_id,
        processInstanceId=a.instance_id,
        executionId=a.token_id,
        taskId=v.task_id,
        assignee=v.assignee,
        startTime=_date(a.started_at),
        endTime=format_date(a.ended_at),
        durationInMillis=_ms(a.started_at, a.ended_at),
        canceled=a.canceled,
        completeScope=v.activity_type.endswith("EndEvent") and not a.canceled,
        rootProcessInstanceId=a.instance_id,
    )


@router.get(
    "/history/activity-instance",
    **_list_of(s.HistoricActivityInstanceDto),
    openapi_extra=oa.query(ACTIVITY_FILTERS, oa.PAGING, oa.sorting(ACTIVITY_SORTS)),
)
async def activity_instances(request: Request, who: Who) -> Response:
    """One entry per visit of a token to a node, in history order (``sortOrder=desc``:
    newest first)."""
    who.check_unrestricted("read history")
    at = page(request.query_params)
    q = activity_query(Params.of_query(request.query_params))
    found = await run_in_threadpool(
        lambda: _engine(request).history_queries.activity_instances(
            q, offset=at.offset, limit=at.limit
        )
    )
    return JSONResponse([activity_dto(v).dump() for v in found])


@router.get("/history/activity-instance/count", **COUNT, openapi_extra=oa.query(ACTIVITY_FILTERS))
async def count_activity_instances(request: Request, who: Who) -> Response:
    who.check_unrestricted("read history")
    q = activity_query(Params.of_query(request.query_params))
    n = await run_in_threadpool(
        lambda: _engine(request).history_queries.count_activity_instances(q)
    )
    return JSONResponse({"count": n})


# -- incidents ------------------------------------------------------------------------------


def incident_dto(r: IncidentRow) -> s.HistoricIncidentDto:
    i = r.incident
    return s.HistoricIncidentDto(
        id=i.id,
        processDefinitionKey=r.definition_key,
        processDefinitionId=r.definition_id,
        processInstanceId=i.instance_id,
        executionId=i.token_id,
        rootProcessInstanceId=i.instance_id,
        createTime=_date(i.created_at),
        endTime=format_date(i.resolved_at),
        incidentType=i.type,
        activityId=i.node_id,
        failedActivityId=i.node_id,
        causeIncidentId=i.id,
        rootCauseIncidentId=i.id,
        configuration=i.external_task_id,
        incidentMessage=i.message,
        open=i.state is IncidentState.OPEN,
        deleted=i.state is IncidentState.DELETED,
        resolved=i.state is IncidentState.RESOLVED,
    )


@router.get(
    "/history/incident",
    **_list_of(s.HistoricIncidentDto),
    openapi_extra=oa.query(INCIDENT_FILTERS, oa.PAGING, oa.sorting(INCIDENT_SORTS)),
)
async def incidents(request: Request, who: Who) -> Response:
    """Incidents of every state (open, resolved, deleted), oldest first unless sorted."""
    who.check_unrestricted("read history")
    at = page(request.query_params)
    q = incident_query(Params.of_query(request.query_params))
    found = await run_in_threadpool(
        lambda: _engine(request).history_queries.incidents(q, offset=at.offset, limit=at.limit)
    )
    return JSONResponse([incident_dto(r).dump() for r in found])


@router.get("/history/incident/count", **COUNT, openapi_extra=oa.query(INCIDENT_FILTERS))
async def count_incidents(request: Request, who: Who) -> Response:
    who.check_unrestricted("read history")
    q = incident_query(Params.of_query(request.query_params))
    n = await run_in_threadpool(lambda: _engine(request).history_queries.count_incidents(q))
    return JSONResponse({"count": n})


# -- variables ------------------------------------------------------------------------------

HISTORIC_VARIABLE_FILTERS = (
    *VARIABLE_FILTERS,
    ("processInstanceId", "string"),
    ("processDefinitionKey", "string"),
)
VariableFilter = Annotated[s.VariableQueryDto | None, Body()]


async def _variables(request: Request, who: Principal, p: Params) -> Response:
    who.check_unrestricted("read history")
    at = page(request.query_params)
    q = variable_query(p, history=True)
    deserialize = deserialize_values(request)
    rows = await run_in_threadpool(
        lambda: _engine(request).history_queries.variables(q, offset=at.offset, limit=at.limit)
    )
    return JSONResponse([historic_variable_dto(r, deserialize).dump() for r in rows])


async def _count_variables(request: Request, who: Principal, p: Params) -> Response:
    who.check_unrestricted("read history")
    q = variable_query(p, history=True)
    n = await run_in_threadpool(lambda: _engine(request).history_queries.count_variables(q))
    return JSONResponse({"count": n})


@router.get(
    "/history/variable-instance",
    **_list_of(s.HistoricVariableInstanceDto),
    openapi_extra=oa.query(HISTORIC_VARIABLE_FILTERS, oa.PAGING, oa.sorting(VARIABLE_SORTS)),
)
async def variables(request: Request, who: Who) -> Response:
    """The variables of every instance, running or ended (their last values)."""
    return await _variables(request, who, Params.of_query(request.query_params))


@router.post(
    "/history/variable-instance",
    **_list_of(s.HistoricVariableInstanceDto),
    openapi_extra=oa.query(oa.PAGING, [("deserializeValues", "boolean")]),
)
async def variables_by_body(request: Request, who: Who, body: VariableFilter = None) -> Response:
    return await _variables(request, who, Params.of_body(_raw(body)))


@router.get(
    "/history/variable-instance/count",
    **COUNT,
    openapi_extra=oa.query(HISTORIC_VARIABLE_FILTERS),
)
async def count_variables(request: Request, who: Who) -> Response:
    return await _count_variables(request, who, Params.of_query(request.query_params))


@router.post("/history/variable-instance/count", **COUNT)
async def count_variables_by_body(
    request: Request, who: Who, body: VariableFilter = None
) -> Response:
    return await _count_variables(request, who, Params.of_body(_raw(body)))


# -- tasks ----------------------------------------------------------------------------------

HISTORIC_TASK_FILTERS = (
    ("taskId", "string"), ("processInstanceId", "string"), ("processInstanceIdIn", "list"),
    ("processInstanceBusinessKey", "string"), ("processDefinitionId", "string"),
    ("processDefinitionKey", "string"), ("executionId", "string"),
    ("taskDefinitionKey", "string"), ("taskDefinitionKeyIn", "list"),
    ("taskName", "string"), ("taskNameLike", "string"), ("taskAssignee", "string"),
    ("taskAssigneeLike", "string"), ("taskOwner", "string"), ("assigned", "boolean"),
    ("unassigned", "boolean"), ("finished", "boolean"), ("unfinished", "boolean"),
    ("processFinished", "boolean"), ("processUnfinished", "boolean"),
    ("taskDueDateBefore", "date"), ("taskDueDateAfter", "date"),
    ("startedBefore", "date"), ("startedAfter", "date"), ("finishedBefore", "date"),
    ("finishedAfter", "date"), ("taskPriority", "integer"), ("tenantIdIn", "list"),
    ("withoutTenantId", "boolean"),
)  # fmt: skip
TaskFilter = Annotated[s.HistoricTaskQueryDto | None, Body()]


def historic_task_dto(r: TaskRow) -> s.HistoricTaskDto:
    t = r.task
    ended = t.completed_at if t.state is not UserTaskState.OPEN else None
    reason = {UserTaskState.COMPLETED: "completed", UserTaskState.CANCELLED: "deleted"}
    return s.HistoricTaskDto(
        id=t.id,
        processDefinitionKey=r.definition_key,
        processDefinitionId=r.definition_id,
        processInstanceId=t.instance_id,
        executionId=t.token_id,
        activityInstanceId=f"{t.node_id}:{t.token_id}",
        name=t.name,
        description=t.description,
        deleteReason=reason.get(t.state),
        owner=t.owner,
        assignee=t.assignee,
        startTime=_date(t.created_at),
        endTime=format_date(ended),
        duration=_ms(t.created_at, ended),
        taskDefinitionKey=t.node_id,
        priority=t.priority,
        due=format_date(t.due_at),
        followUp=format_date(t.follow_up_at),
        rootProcessInstanceId=t.instance_id,
        tenantId=r.tenant_id,
    )


async def _tasks(request: Request, who: Principal, p: Params) -> Response:
    who.check_unrestricted("read history")
    at = page(request.query_params)
    q = historic_task_query(p)
    rows = await run_in_threadpool(
        lambda: _engine(request).history_queries.tasks(q, offset=at.offset, limit=at.limit)
    )
    return JSONResponse([historic_task_dto(r).dump() for r in rows])


async def _count_tasks(request: Request, who: Principal, p: Params) -> Response:
    who.check_unrestricted("read history")
    q = historic_task_query(p)
    n = await run_in_threadpool(lambda: _engine(request).history_queries.count_tasks(q))
    return JSONResponse({"count": n})


@router.get(
    "/history/task",
    **_list_of(s.HistoricTaskDto),
    openapi_extra=oa.query(HISTORIC_TASK_FILTERS, oa.PAGING, oa.sorting(HISTORIC_SORT_KEYS)),
)
async def tasks(request: Request, who: Who) -> Response:
    """User tasks of every state, oldest first unless sorted."""
    return await _tasks(request, who, Params.of_query(request.query_params))


@router.post("/history/task", **_list_of(s.HistoricTaskDto), openapi_extra=oa.query(oa.PAGING))
async def tasks_by_body(request: Request, who: Who, body: TaskFilter = None) -> Response:
    return await _tasks(request, who, Params.of_body(_raw(body)))


@router.get("/history/task/count", **COUNT, openapi_extra=oa.query(HISTORIC_TASK_FILTERS))
async def count_tasks(request: Request, who: Who) -> Response:
    return await _count_tasks(request, who, Params.of_query(request.query_params))


@router.post("/history/task/count", **COUNT)
async def count_tasks_by_body(request: Request, who: Who, body: TaskFilter = None) -> Response:
    return await _count_tasks(request, who, Params.of_body(_raw(body)))
