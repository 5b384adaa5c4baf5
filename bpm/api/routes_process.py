"""Process endpoints of Camunda 7: deployments, definitions, starting and reading instances,
variables, incidents."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from bpm.api import bodies as b
from bpm.api import openapi as oa
from bpm.api import schemas as s
from bpm.api.auth import Principal, principal
from bpm.api.camunda_params import Params, page
from bpm.api.errors import ApiError, bad_request
from bpm.api.variables import format_date, from_camunda, to_camunda
from bpm.engine import Deployment, Engine, Incident
from bpm.engine.queries import IncidentQuery, InstanceQuery
from bpm.errors import NotFound
from bpm.runtime.records import Instance, ProcessDefinition
from bpm.runtime.states import IncidentState, InstanceState

router = APIRouter()
Who = Annotated[Principal, Depends(principal)]
Id = Annotated[str | None, Query(max_length=300)]
MAX_BPMN_BYTES = 5 * 1024 * 1024


def _engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


def _admin(who: Principal, what: str) -> None:
    who.check_unrestricted(what)


def definition_json(d: ProcessDefinition) -> dict[str, Any]:
    return {
        "id": d.id,
        "key": d.key,
        "category": None,
        "description": None,
        "name": d.name,
        "version": d.version,
        "resource": d.resource,
        "deploymentId": d.deployment_id,
        "diagram": None,
        "suspended": d.suspended,
        "tenantId": None,
        "versionTag": d.version_tag,
        "historyTimeToLive": None,
        "startableInTasklist": True,
    }


def instance_json(request: Request, inst: Instance) -> dict[str, Any]:
    href = str(request.base_url).rstrip("/") + f"/engine-rest/process-instance/{inst.id}"
    return {
        "id": inst.id,
        "definitionId": inst.definition_id,
        "definitionKey": inst.definition_key,
        "businessKey": inst.business_key,
        "caseInstanceId": None,
        "ended": inst.ended,
        "suspended": inst.state is InstanceState.SUSPENDED,
        "tenantId": None,
        "links": [{"method": "GET", "href": href, "rel": "self"}],
    }


#: The body of ``deployment/create`` as Camunda's: a form with one or more BPMN files.
DEPLOYMENT_FORM = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "deployment-name": {"type": "string"},
                        "deployment-source": {"type": "string"},
                        "data": {
                            "type": "string",
                            "format": "binary",
                            "description": "a BPMN 2.0 XML file (any part name; 400 if not BPMN)",
                        },
                    },
                    "required": ["data"],
                }
            }
        },
    }
}


@router.post("/deployment/create", openapi_extra=DEPLOYMENT_FORM)
async def deployment_create(request: Request, who: Who) -> Response:
    """Multipart: ``deployment-name`` and one or more ``*.bpmn`` file parts."""
    _admin(who, "deploy")
    ctype = request.headers.get("content-type", "")
    if not ctype.lower().startswith("multipart/form-data"):
        raise bad_request("deployment/create expects multipart/form-data with .bpmn file parts")
    try:
        form = await request.form(max_files=50, max_fields=100)
    except Exception as exc:  # malformed multipart
        raise bad_request(f"cannot read the multipart body: {exc}") from None
    name = form.get("deployment-name")
    source = form.get("deployment-source")
    files: list[tuple[str, bytes]] = []
    for key, value in form.multi_items():
        if isinstance(value, UploadFile):
            data = await value.read(MAX_BPMN_BYTES + 1)
            if len(data) > MAX_BPMN_BYTES:
                raise ApiError(
                    413, "InvalidRequestException", f"resource {value.filename or key} is over 5 MB"
                )
            files.append((value.filename or key, data))
    if not files:
        raise bad_request("no resource: attach at least one .bpmn file part")
    engine = _engine(request)
    label = name if isinstance(name, str) else None
    deployment = await run_in_threadpool(_deploy, engine, files, label)
    first = deployment.definitions[0]
    return JSONResponse(
        {
            "id": deployment.id,
            "name": label,
            "source": source if isinstance(source, str) else None,
            "deploymentTime": format_date(deployment.created_at or first.created_at),
            "tenantId": None,
            "deployedProcessDefinitions": {
                d.id: definition_json(d) for d in deployment.definitions
            },
            "deployedCaseDefinitions": None,
            "deployedDecisionDefinitions": None,
            "deployedDecisionRequirementsDefinitions": None,
            "links": [],
            # Not in Camunda's answer: settings of the models that are not honoured here.
            "warnings": list(deployment.warnings),
        }
    )


def _deploy(engine: Engine, files: list[tuple[str, bytes]], name: str | None) -> Deployment:
    """Every executable process of every file, in one deployment (all or nothing)."""
    return engine.create_deployment(*files, name=name)


@router.get("/process-definition")
async def definitions(
    request: Request, who: Who, key: Id = None, latestVersion: bool | None = None
) -> Response:
    _admin(who, "read process definitions")
    found = await run_in_threadpool(_engine(request).definitions, key)
    if latestVersion:
        latest: dict[str, ProcessDefinition] = {}
        for d in found:
            if d.key not in latest or d.version > latest[d.key].version:
                latest[d.key] = d
        found = list(latest.values())
    return JSONResponse([definition_json(d) for d in found])


@router.get(
    "/process-definition/count",
    response_model=s.CountDto,
    openapi_extra=oa.query([("key", "string"), ("latestVersion", "boolean")]),
)
async def count_definitions(
    request: Request, who: Who, key: Id = None, latestVersion: bool | None = None
) -> Response:
    _admin(who, "read process definitions")
    found = await run_in_threadpool(_engine(request).definitions, key)
    n = len({d.key for d in found}) if latestVersion else len(found)
    return JSONResponse({"count": n})


@router.get("/process-definition/key/{key}")
async def definition_by_key(key: str, request: Request, who: Who) -> Response:
    _admin(who, "read process definitions")
    try:
        d = await run_in_threadpool(_engine(request).definition, key)
    except NotFound:
        raise ApiError(
            404, "RestException", f"No matching process definition with key: {key} and no tenant-id"
        ) from None
    return JSONResponse(definition_json(d))


@router.post("/process-definition/key/{key}/start")
async def start(key: str, body: b.StartBody, request: Request, who: Who) -> Response:
    _admin(who, "start instances")
    variables = from_camunda(body.variables)
    engine = _engine(request)
    try:
        inst = await run_in_threadpool(
            lambda: engine.start(key, variables, business_key=body.businessKey)
        )
    except NotFound:
        raise ApiError(
            404, "RestException", f"No matching process definition with key: {key} and no tenant-id"
        ) from None
    out = instance_json(request, inst)
    if body.withVariablesInReturn:
        out["variables"] = to_camunda(inst.variables, types=inst.variable_types)
    return JSONResponse(out)


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
        sorting=p.sorting(RUNNING_SORTS),
    )


RUNNING_FILTERS = (
    ("processDefinitionKey", "string"), ("processDefinitionKeyIn", "list"),
    ("processDefinitionId", "string"), ("businessKey", "string"),
    ("businessKeyLike", "string"), ("processInstanceIds", "list"), ("active", "boolean"),
    ("suspended", "boolean"), ("withIncident", "boolean"),
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
    return JSONResponse([instance_json(request, h.instance) for h in found])


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
    return JSONResponse(instance_json(request, await _running(request, instance_id)))


@router.delete("/process-instance/{instance_id}", status_code=204)
async def delete_instance(instance_id: str, request: Request, who: Who) -> Response:
    _admin(who, "delete instances")
    await _running(request, instance_id)
    await run_in_threadpool(
        lambda: _engine(request).terminate(instance_id, reason="deleted over REST")
    )
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
