"""Process-instance endpoints of Camunda 7: reading, deleting and the variables of
running instances, and incidents. (Deployments: :mod:`bpm.api.routes_deployments`;
definitions and starts: :mod:`bpm.api.routes_definitions`.)"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from bpm.api import openapi as oa
from bpm.api import schemas as s
from bpm.api.auth import Principal, principal
from bpm.api.camunda_params import Params, page
from bpm.api.errors import ApiError
from bpm.api.variables import format_date, to_camunda
from bpm.engine import Engine, Incident
from bpm.engine.queries import IncidentQuery, InstanceQuery
from bpm.errors import NotFound
from bpm.runtime.records import Instance
from bpm.runtime.states import IncidentState, InstanceState

router = APIRouter()
Who = Annotated[Principal, Depends(principal)]
Id = Annotated[str | None, Query(max_length=300)]


def _engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


def _admin(who: Principal, what: str) -> None:
    who.check_unrestricted(what)


def instance_json(request: Request, inst: Instance, tenant_id: str | None = None) -> dict[str, Any]:
    """Camunda's ProcessInstanceDto; ``tenant_id``: the tenant of the instance's process
    definition (its deployment's), which Camunda gives the instance."""
    href = str(request.base_url).rstrip("/") + f"/engine-rest/process-instance/{inst.id}"
    return {
        "id": inst.id,
        "definitionId": inst.definition_id,
        "definitionKey": inst.definition_key,
        "businessKey": inst.business_key,
        "caseInstanceId": None,
        "ended": inst.ended,
        "suspended": inst.state is InstanceState.SUSPENDED,
        "tenantId": tenant_id,
        "links": [{"method": "GET", "href": href, "rel": "self"}],
    }


#: Camunda sort keys of /process-instance this engine orders by.
RUNNING_SORTS = ("instanceId",)


def _running_query(request: Request) -> InstanceQuery:
    """Running (active or suspended) instances, as Camunda's runtime query."""
    p = Params.of_query(request.query_params)
    states: tuple[InstanceState, ...] = (
        InstanceState.ACTIVE,
        InstanceState.SUSPENDED,
        InstanceState.COMPENSATING,  # Camunda's ACTIVE: its compensation handlers run
    )
    if p.true("active"):
        states = (InstanceState.ACTIVE, InstanceState.COMPENSATING)
    if p.true("suspended"):
        states = tuple(x for x in states if x is InstanceState.SUSPENDED)
    single = p.text("processInstanceId")
    key = p.text("processDefinitionKey")
    return InstanceQuery(
        instance_ids=(single,) if single is not None else p.texts("processInstanceIds"),
        definition_id=p.text("processDefinitionId"),
        definition_keys=(key,) if key is not None else p.texts("processDefinitionKeyIn"),
        business_key=p.text("businessKey"),
        business_key_like=p.text("businessKeyLike"),
        states=states,
        with_incidents=p.flag("withIncident"),
        tenant_ids=p.texts("tenantIdIn"),
        without_tenant=p.true("withoutTenantId"),
        sorting=p.sorting(RUNNING_SORTS),
    )


RUNNING_FILTERS = (
    ("processDefinitionKey", "string"), ("processDefinitionKeyIn", "list"),
    ("processDefinitionId", "string"), ("businessKey", "string"),
    ("businessKeyLike", "string"), ("processInstanceIds", "list"), ("active", "boolean"),
    ("suspended", "boolean"), ("withIncident", "boolean"), ("tenantIdIn", "list"),
    ("withoutTenantId", "boolean"),
)  # fmt: skip


@router.get(
    "/process-instance",
    openapi_extra=oa.query(RUNNING_FILTERS, oa.PAGING, oa.sorting(RUNNING_SORTS)),
)
async def instances(request: Request, who: Who) -> Response:
    """Running (active or suspended) instances, oldest first; paged in SQL."""
    _admin(who, "read instances")
    at = page(request.query_params)
    q = _running_query(request)
    found = await run_in_threadpool(
        lambda: _engine(request).queries.historic_instances(q, offset=at.offset, limit=at.limit)
    )
    return JSONResponse([instance_json(request, h.instance, h.tenant_id) for h in found])


@router.get(
    "/process-instance/count",
    response_model=s.CountDto,
    openapi_extra=oa.query(RUNNING_FILTERS),
)
async def count_instances(request: Request, who: Who) -> Response:
    _admin(who, "read instances")
    q = _running_query(request)
    n = await run_in_threadpool(lambda: _engine(request).queries.count_historic_instances(q))
    return JSONResponse({"count": n})


def definition_tenant(engine: Engine, inst: Instance) -> str | None:
    """The tenant of the instance's process definition (None: it has none)."""
    definition = engine.definition_by_id(inst.definition_id)
    return definition.tenant_id if definition is not None else None


async def _running(request: Request, instance_id: str) -> Instance:
    try:
        inst = await run_in_threadpool(_engine(request).get_instance, instance_id)
    except NotFound:
        inst = None
    if inst is None or inst.ended:
        raise ApiError(
            404, "InvalidRequestException", f"Process instance with id {instance_id} does not exist"
        )
    return inst


@router.get("/process-instance/{instance_id}")
async def instance(instance_id: str, request: Request, who: Who) -> Response:
    _admin(who, "read instances")
    inst = await _running(request, instance_id)
    tenant = await run_in_threadpool(definition_tenant, _engine(request), inst)
    return JSONResponse(instance_json(request, inst, tenant))


@router.delete("/process-instance/{instance_id}", status_code=204)
async def delete_instance(instance_id: str, request: Request, who: Who) -> Response:
    _admin(who, "delete instances")
    await _running(request, instance_id)
    await run_in_threadpool(
        lambda: _engine(request).terminate(instance_id, reason="deleted over REST", by=who.name)
    )
    return Response(status_code=204)


@router.put(
    "/process-instance/{instance_id}/suspended",
    status_code=204,
    responses=oa.errors(400, 404),
)
async def suspend_instance(
    instance_id: str, body: s.SuspendedBody, request: Request, who: Who
) -> Response:
    """Suspend (``{"suspended": true}``) or activate a running instance; suspending a
    suspended one (or activating an active one) changes nothing."""
    _admin(who, "suspend instances")
    inst = await _running(request, instance_id)
    engine = _engine(request)
    if body.suspended and inst.state is InstanceState.ACTIVE:
        await run_in_threadpool(lambda: engine.suspend(instance_id, by=who.name))
    elif not body.suspended and inst.state is InstanceState.SUSPENDED:
        await run_in_threadpool(lambda: engine.resume(instance_id, by=who.name))
    return Response(status_code=204)


@router.get("/process-instance/{instance_id}/variables")
async def instance_variables(
    instance_id: str, request: Request, who: Who, deserializeValues: bool = True
) -> Response:
    _admin(who, "read variables")
    inst = await _running(request, instance_id)
    return JSONResponse(to_camunda(inst.variables, deserializeValues, inst.variable_types))


def incident_json(i: Incident, definition_id: str | None) -> dict[str, Any]:
    return {
        "id": i.id,
        "processDefinitionId": definition_id,
        "processInstanceId": i.instance_id,
        "executionId": i.token_id,
        "incidentTimestamp": format_date(i.created_at),
        "incidentType": i.type,
        "activityId": i.node_id,
        "failedActivityId": i.node_id,
        "causeIncidentId": i.id,
        "rootCauseIncidentId": i.id,
        "configuration": i.external_task_id,
        "incidentMessage": i.message,
        "tenantId": None,
        "jobDefinitionId": None,
        "annotation": None,
    }


#: Camunda sort keys of /incident this engine orders by.
RUNTIME_INCIDENT_SORTS = ("incidentId", "processInstanceId")


def _incident_query(request: Request) -> IncidentQuery:
    """Open incidents, as Camunda's runtime incident query."""
    p = Params.of_query(request.query_params)
    kind = p.text("incidentType")
    single = p.text("processInstanceId")
    return IncidentQuery(
        incident_id=p.text("incidentId"),
        instance_ids=(single,) if single is not None else None,
        types=(kind,) if kind is not None else None,
        node_id=p.text("activityId"),
        states=(IncidentState.OPEN,),
        definition_id=p.text("processDefinitionId"),
        message_like=p.text("incidentMessageLike"),
        sorting=p.sorting(RUNTIME_INCIDENT_SORTS),
    )


INCIDENT_FILTERS = (
    ("incidentId", "string"), ("incidentType", "string"), ("processInstanceId", "string"),
    ("processDefinitionId", "string"), ("activityId", "string"),
    ("incidentMessageLike", "string"),
)  # fmt: skip


@router.get(
    "/incident",
    openapi_extra=oa.query(INCIDENT_FILTERS, oa.PAGING, oa.sorting(RUNTIME_INCIDENT_SORTS)),
)
async def incidents(request: Request, who: Who) -> Response:
    """Open incidents, oldest first; paged in SQL."""
    _admin(who, "read incidents")
    at = page(request.query_params)
    q = _incident_query(request)
    rows = await run_in_threadpool(
        lambda: _engine(request).queries.incidents(q, offset=at.offset, limit=at.limit)
    )
    return JSONResponse([incident_json(r.incident, r.definition_id) for r in rows])


@router.get("/incident/count", response_model=s.CountDto, openapi_extra=oa.query(INCIDENT_FILTERS))
async def count_incidents(request: Request, who: Who) -> Response:
    _admin(who, "read incidents")
    q = _incident_query(request)
    n = await run_in_threadpool(lambda: _engine(request).queries.count_incidents(q))
    return JSONResponse({"count": n})
