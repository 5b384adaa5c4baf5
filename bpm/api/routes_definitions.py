"""Process-definition endpoints of Camunda 7: list, count, read (by id or by key), the
BPMN XML, the start form, and starting an instance of a definition (the latest version
of a key, or one version by its id: Camunda Modeler's "Start instance")."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from bpm.api import bodies as b
from bpm.api import openapi as oa
from bpm.api import schemas as s
from bpm.api import traced
from bpm.api.auth import Principal, principal
from bpm.api.errors import ApiError
from bpm.api.routes_process import definition_tenant, instance_json
from bpm.api.variables import from_camunda, to_camunda
from bpm.engine import Engine
from bpm.errors import NotFound
from bpm.model import nodes as n
from bpm.runtime.records import Instance, ProcessDefinition

router = APIRouter()
Who = Annotated[Principal, Depends(principal)]
Id = Annotated[str | None, Query(max_length=300)]


def _engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


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
        "tenantId": d.tenant_id,
        "versionTag": d.version_tag,
        "historyTimeToLive": None,
        "startableInTasklist": True,
    }


def _no_key(key: str) -> ApiError:
    return ApiError(
        404, "RestException", f"No matching process definition with key: {key} and no tenant-id"
    )


def _no_id(definition_id: str) -> ApiError:
    return ApiError(
        404, "InvalidRequestException", f"No matching definition with id {definition_id}"
    )


@router.get("/process-definition")
async def definitions(
    request: Request, who: Who, key: Id = None, latestVersion: bool | None = None
) -> Response:
    who.check_unrestricted("read process definitions")
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
    who.check_unrestricted("read process definitions")
    found = await run_in_threadpool(_engine(request).definitions, key)
    n_found = len({d.key for d in found}) if latestVersion else len(found)
    return JSONResponse({"count": n_found})


async def _by_key(request: Request, key: str) -> ProcessDefinition:
    try:
        return await run_in_threadpool(_engine(request).definition, key)
    except NotFound:
        raise _no_key(key) from None


async def _by_id(request: Request, definition_id: str) -> ProcessDefinition:
    found = await run_in_threadpool(_engine(request).definition_by_id, definition_id)
    if found is None:
        raise _no_id(definition_id)
    return found


@router.get("/process-definition/key/{key}")
async def definition_by_key(key: str, request: Request, who: Who) -> Response:
    who.check_unrestricted("read process definitions")
    return JSONResponse(definition_json(await _by_key(request, key)))


@router.get("/process-definition/{definition_id}")
async def definition_by_id(definition_id: str, request: Request, who: Who) -> Response:
    who.check_unrestricted("read process definitions")
    return JSONResponse(definition_json(await _by_id(request, definition_id)))


async def _xml(request: Request, d: ProcessDefinition) -> Response:
    text = await run_in_threadpool(_engine(request).definition_source, d.id)
    return JSONResponse({"id": d.id, "bpmn20Xml": text or None})


@router.get("/process-definition/key/{key}/xml")
async def xml_by_key(key: str, request: Request, who: Who) -> Response:
    """The BPMN 2.0 XML of the latest version (``bpmn20Xml`` null for builder models)."""
    who.check_unrestricted("read process definitions")
    return await _xml(request, await _by_key(request, key))


@router.get("/process-definition/{definition_id}/xml")
async def xml_by_id(definition_id: str, request: Request, who: Who) -> Response:
    """The BPMN 2.0 XML of this version (``bpmn20Xml`` null for builder models)."""
    who.check_unrestricted("read process definitions")
    return await _xml(request, await _by_id(request, definition_id))


def start_form_json(model_start: n.StartEvent | None) -> dict[str, Any]:
    """Camunda's ``FormDto`` of a start event: its form key and Camunda Forms reference."""
    key = model_start.form_key if model_start else None
    ref = dict(model_start.form_ref) if model_start and model_start.form_ref else None
    return {"key": key, "contextPath": None, "camundaFormRef": ref}


async def _start_form(request: Request, d: ProcessDefinition) -> Response:
    model = await run_in_threadpool(_engine(request).model, d.id)
    plain = [x for x in model.start_events if x.timer is None and x.event is None]
    return JSONResponse(start_form_json(plain[0] if plain else None))


@router.get("/process-definition/key/{key}/startForm")
async def start_form_by_key(key: str, request: Request, who: Who) -> Response:
    who.check_unrestricted("read process definitions")
    return await _start_form(request, await _by_key(request, key))


@router.get("/process-definition/{definition_id}/startForm")
async def start_form_by_id(definition_id: str, request: Request, who: Who) -> Response:
    """The start event's form key (``camunda:formKey``) and Camunda Forms reference."""
    who.check_unrestricted("read process definitions")
    return await _start_form(request, await _by_id(request, definition_id))


async def started(request: Request, inst: Instance, body: b.StartBody) -> Response:
    """Camunda's answer to a start: the instance (with its variables when asked)."""
    tenant = await run_in_threadpool(definition_tenant, _engine(request), inst)
    out = instance_json(request, inst, tenant)
    if body.withVariablesInReturn:
        out["variables"] = to_camunda(inst.variables, types=inst.variable_types)
    return JSONResponse(out)


@router.post("/process-definition/key/{key}/start")
async def start(key: str, body: b.StartBody, request: Request, who: Who) -> Response:
    who.check_unrestricted("start instances")
    variables = from_camunda(body.variables)
    engine = _engine(request)
    try:
        with traced.caller_context(request):
            inst = await run_in_threadpool(
                lambda: engine.start(key, variables, business_key=body.businessKey)
            )
    except NotFound:
        raise _no_key(key) from None
    return await started(request, inst, body)


@router.post("/process-definition/{definition_id}/start")
async def start_by_id(
    definition_id: str, body: b.StartBody, request: Request, who: Who
) -> Response:
    """Start this version (Camunda Modeler sends ``{"businessKey": null, "variables":
    null}`` or the variables its user typed)."""
    who.check_unrestricted("start instances")
    variables = from_camunda(body.variables)
    engine = _engine(request)
    try:
        with traced.caller_context(request):
            inst = await run_in_threadpool(
                lambda: engine.start_definition(
                    definition_id, variables, business_key=body.businessKey
                )
            )
    except NotFound:
        raise _no_id(definition_id) from None
    return await started(request, inst, body)
