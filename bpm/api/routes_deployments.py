"""Deployment endpoints of Camunda 7: create (every file of a multipart body is kept), list,
count, read, resources and their bytes, delete.

These are the calls Camunda Modeler makes: ``GET /deployment?maxResults=0`` to check the
connection, then ``POST /deployment/create`` with ``deployment-name``,
``deployment-source: Camunda Modeler``, ``enable-duplicate-filtering: true``, an optional
``tenant-id``, the diagram and its attached files (``CamundaAPI.js``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from bpm.api import openapi as oa
from bpm.api import schemas as s
from bpm.api.auth import Principal, principal
from bpm.api.camunda_params import Params, page
from bpm.api.errors import ApiError, bad_request
from bpm.api.routes_decisions import definition_json as decision_json
from bpm.api.routes_decisions import drd_json
from bpm.api.routes_definitions import definition_json
from bpm.api.variables import format_date
from bpm.engine import Deployment, DeploymentQuery, DeploymentRecord, Engine
from bpm.engine.decisions import DMN_SUFFIX
from bpm.engine.deployments import BPMN_SUFFIXES
from bpm.errors import DeploymentError, NotFound

router = APIRouter()
Who = Annotated[Principal, Depends(principal)]
MAX_RESOURCE_BYTES = 5 * 1024 * 1024
MAX_FILES = 50

#: Camunda's parse error prefix: Camunda Modeler recognises it and says the server could
#: not parse the diagram.
PARSE_PREFIX = "ENGINE-09005 Could not parse BPMN process. Errors: "

#: Form fields of ``deployment/create`` that are settings, not files.
FIELDS = (
    "deployment-name",
    "deployment-source",
    "enable-duplicate-filtering",
    "deploy-changed-only",
    "tenant-id",
    "deployment-activation-time",
)


def _engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


def _link(request: Request, deployment_id: str) -> list[dict[str, str]]:
    href = str(request.base_url).rstrip("/") + f"/engine-rest/deployment/{deployment_id}"
    return [{"method": "GET", "href": href, "rel": "self"}]


def deployment_json(request: Request, d: DeploymentRecord) -> dict[str, Any]:
    return {
        "id": d.id,
        "name": d.name,
        "source": d.source,
        "deploymentTime": format_date(d.created_at),
        "tenantId": d.tenant_id,
        "links": _link(request, d.id),
    }


def _missing(deployment_id: str) -> ApiError:
    return ApiError(
        404, "InvalidRequestException", f"Deployment with id '{deployment_id}' does not exist"
    )


#: The body of ``deployment/create`` as Camunda's: settings and one or more files.
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
                        "enable-duplicate-filtering": {"type": "boolean"},
                        "deploy-changed-only": {"type": "boolean"},
                        "tenant-id": {"type": "string"},
                        "data": {
                            "type": "string",
                            "format": "binary",
                            "description": "a file (any part name): .bpmn files are parsed "
                            "(400 if not BPMN), every other file is kept as a resource",
                        },
                    },
                    "required": ["data"],
                }
            }
        },
    }
}


async def _files(form: Any) -> list[tuple[str, bytes]]:
    files: list[tuple[str, bytes]] = []
    for key, value in form.multi_items():
        if isinstance(value, UploadFile):
            data = await value.read(MAX_RESOURCE_BYTES + 1)
            if len(data) > MAX_RESOURCE_BYTES:
                raise ApiError(
                    413, "InvalidRequestException", f"resource {value.filename or key} is over 5 MB"
                )
            files.append((value.filename or key, data))
    return files


def _flag(form: Any, name: str) -> bool:
    value = form.get(name)
    if value is None or isinstance(value, UploadFile):
        return False
    text = str(value).strip().lower()
    if text in ("true", "false", ""):
        return text == "true"
    raise bad_request(f"{name} must be true or false, not {str(value)[:40]!r}")


def _text(form: Any, name: str) -> str | None:
    value = form.get(name)
    if value is None or isinstance(value, UploadFile):
        return None
    return str(value) or None


@router.post("/deployment/create", openapi_extra=DEPLOYMENT_FORM)
async def deployment_create(request: Request, who: Who) -> Response:
    """Multipart: ``deployment-name``, ``deployment-source``, ``enable-duplicate-filtering``,
    ``deploy-changed-only``, ``tenant-id`` and one or more files."""
    who.check_unrestricted("deploy")
    ctype = request.headers.get("content-type", "")
    if not ctype.lower().startswith("multipart/form-data"):
        raise bad_request("deployment/create expects multipart/form-data with file parts")
    try:
        form = await request.form(max_files=MAX_FILES, max_fields=100)
    except Exception as exc:  # malformed multipart
        raise bad_request(f"cannot read the multipart body: {exc}") from None
    try:
        files = await _files(form)
    finally:
        await form.close()  # the parts' spooled temporary files
    if not files:
        raise bad_request("no resource: attach at least one file part (a .bpmn file)")
    name = _text(form, "deployment-name")
    source = _text(form, "deployment-source")
    tenant = _text(form, "tenant-id")
    filtering = _flag(form, "enable-duplicate-filtering")
    changed_only = _flag(form, "deploy-changed-only")
    engine = _engine(request)
    try:
        deployment = await run_in_threadpool(
            lambda: engine.create_deployment(
                *files,
                name=name,
                source=source,
                tenant_id=tenant,
                duplicate_filtering=filtering,
                changed_only=changed_only,
            )
        )
    except DeploymentError as exc:
        if exc.resource and exc.resource.lower().endswith((*BPMN_SUFFIXES, DMN_SUFFIX)):
            exc.args = (PARSE_PREFIX + str(exc),)
        raise
    warnings = list(deployment.warnings)
    if _text(form, "deployment-activation-time"):
        warnings.append(
            "deployment-activation-time is not honoured: the definitions are active now"
        )
    return JSONResponse(_created_json(request, deployment, warnings))


def _created_json(request: Request, d: Deployment, warnings: list[str]) -> dict[str, Any]:
    return {
        "id": d.id,
        "name": d.name,
        "source": d.source,
        "deploymentTime": format_date(d.created_at),
        "tenantId": d.tenant_id,
        "deployedProcessDefinitions": {x.id: definition_json(x) for x in d.definitions},
        "deployedCaseDefinitions": None,
        "deployedDecisionDefinitions": {x.id: decision_json(x) for x in d.decisions} or None,
        "deployedDecisionRequirementsDefinitions": (
            {x.id: drd_json(x) for x in d.requirements} or None
        ),
        "links": _link(request, d.id) if d.id else [],
        # Not in Camunda's answer: settings of the models that are not honoured here.
        "warnings": warnings,
    }


#: Camunda sort keys of /deployment.
DEPLOYMENT_SORTS = ("id", "name", "deploymentTime", "tenantId")
DEPLOYMENT_FILTERS = (
    ("id", "string"), ("name", "string"), ("nameLike", "string"), ("source", "string"),
    ("withoutSource", "boolean"), ("tenantIdIn", "list"), ("withoutTenantId", "boolean"),
    ("includeDeploymentsWithoutTenantId", "boolean"), ("after", "date"), ("before", "date"),
)  # fmt: skip


def _query(request: Request) -> DeploymentQuery:
    p = Params.of_query(request.query_params)
    return DeploymentQuery(
        id=p.text("id"),
        name=p.text("name"),
        name_like=p.text("nameLike"),
        source=p.text("source"),
        without_source=p.true("withoutSource"),
        tenant_ids=p.texts("tenantIdIn"),
        without_tenant=p.true("withoutTenantId"),
        include_without_tenant=p.true("includeDeploymentsWithoutTenantId"),
        after=p.date("after"),
        before=p.date("before"),
        sorting=p.sorting(DEPLOYMENT_SORTS),
    )


@router.get(
    "/deployment",
    openapi_extra=oa.query(DEPLOYMENT_FILTERS, oa.PAGING, oa.sorting(DEPLOYMENT_SORTS)),
)
async def deployments(request: Request, who: Who) -> Response:
    """Deployments matching every filter, oldest first unless sorted; paged in SQL.
    (``maxResults=0`` is Camunda Modeler's connection check: ``[]``.)"""
    who.check_unrestricted("read deployments")
    at = page(request.query_params)
    q = _query(request)
    if at.limit == 0:
        return JSONResponse([])
    found = await run_in_threadpool(
        lambda: _engine(request).deployments(q, offset=at.offset, limit=at.limit)
    )
    return JSONResponse([deployment_json(request, d) for d in found])


@router.get(
    "/deployment/count", response_model=s.CountDto, openapi_extra=oa.query(DEPLOYMENT_FILTERS)
)
async def count_deployments(request: Request, who: Who) -> Response:
    who.check_unrestricted("read deployments")
    q = _query(request)
    n = await run_in_threadpool(lambda: _engine(request).count_deployments(q))
    return JSONResponse({"count": n})


@router.get("/deployment/{deployment_id}")
async def deployment(deployment_id: str, request: Request, who: Who) -> Response:
    who.check_unrestricted("read deployments")
    try:
        found = await run_in_threadpool(_engine(request).deployment, deployment_id)
    except NotFound:
        raise _missing(deployment_id) from None
    return JSONResponse(deployment_json(request, found))


@router.get("/deployment/{deployment_id}/resources")
async def resources(deployment_id: str, request: Request, who: Who) -> Response:
    who.check_unrestricted("read deployments")
    try:
        found = await run_in_threadpool(_engine(request).deployment_resources, deployment_id)
    except NotFound:
        raise _missing(deployment_id) from None
    return JSONResponse(
        [{"id": x.id, "name": x.name, "deploymentId": x.deployment_id} for x in found]
    )


def _missing_resource(deployment_id: str, resource_id: str) -> ApiError:
    return ApiError(
        404,
        "InvalidRequestException",
        f"Deployment resource with resource id '{resource_id}' for deployment id "
        f"'{deployment_id}' does not exist.",
    )


@router.get("/deployment/{deployment_id}/resources/{resource_id}")
async def resource(deployment_id: str, resource_id: str, request: Request, who: Who) -> Response:
    who.check_unrestricted("read deployments")
    try:
        x = await run_in_threadpool(
            _engine(request).deployment_resource, deployment_id, resource_id
        )
    except NotFound:
        raise _missing_resource(deployment_id, resource_id) from None
    return JSONResponse({"id": x.id, "name": x.name, "deploymentId": x.deployment_id})


#: Media types of resource downloads by suffix (Camunda's table); others are bytes.
MEDIA_TYPES = (
    ((".bpmn", ".bpmn20.xml", ".cmmn", ".cmmn11.xml", ".dmn", ".dmn11.xml", ".xml"),
     "application/xml"),
    ((".form", ".json"), "application/json"),
    ((".png",), "image/png"),
    ((".gif",), "image/gif"),
    ((".jpg", ".jpeg"), "image/jpeg"),
    ((".txt",), "text/plain"),
)  # fmt: skip


def media_type(name: str) -> str:
    low = name.lower()
    for suffixes, kind in MEDIA_TYPES:
        if low.endswith(suffixes):
            return kind
    return "application/octet-stream"


def _filename(name: str) -> str:
    base = name.rsplit("/", 1)[-1]
    return "".join(c if c.isascii() and (c.isalnum() or c in "._- ") else "_" for c in base)


@router.get(
    "/deployment/{deployment_id}/resources/{resource_id}/data",
    responses={200: {"content": {"application/octet-stream": {}}, "description": "the bytes"}},
)
async def resource_data(
    deployment_id: str, resource_id: str, request: Request, who: Who
) -> Response:
    """The file as it was deployed, as a download (never rendered by a browser: an HTML
    or SVG file a user deployed must not run on the cockpit's origin)."""
    who.check_unrestricted("read deployments")
    try:
        x = await run_in_threadpool(
            _engine(request).deployment_resource, deployment_id, resource_id
        )
    except NotFound:
        raise _missing_resource(deployment_id, resource_id) from None
    return Response(
        x.data or b"",
        media_type=media_type(x.name),
        headers={
            "Content-Disposition": f'attachment; filename="{_filename(x.name)}"',
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "default-src 'none'; sandbox",
        },
    )


@router.delete("/deployment/{deployment_id}", status_code=204, responses=oa.errors(400, 404))
async def delete_deployment(
    deployment_id: str,
    request: Request,
    who: Who,
    cascade: bool = False,
    skipCustomListeners: bool = False,
    skipIoMappings: bool = False,
) -> Response:
    """Delete a deployment; with ``cascade=true`` its definitions' instances too (running
    ones are terminated first). Without it, a deployment with instances answers 400."""
    who.check_unrestricted("delete deployments")
    try:
        await run_in_threadpool(
            lambda: _engine(request).delete_deployment(deployment_id, cascade=cascade)
        )
    except NotFound:
        raise _missing(deployment_id) from None
    return Response(status_code=204)
