"""Camunda 7's decision endpoints: ``/decision-definition`` (list, count, by id or key, the
DMN XML, evaluate with typed variables) and ``/decision-requirements-definition``; the
history is in :mod:`bpm.api.routes_decision_history`."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from bpm.api import openapi as oa
from bpm.api import schemas as s
from bpm.api import schemas_decisions as sd
from bpm.api.auth import Principal, principal
from bpm.api.camunda_params import Params, page
from bpm.api.errors import ApiError, bad_request
from bpm.api.variables import from_camunda, typed
from bpm.engine import Engine
from bpm.errors import ExpressionError, NotFound
from bpm.feel.jsonvalues import to_json
from bpm.runtime.records import (
    DecisionDefinition,
    DecisionRequirementsDefinition,
)
from bpm.store.decisions import (
    DEFINITION_SORTS,
    DRD_SORTS,
    DefinitionQuery,
)

router = APIRouter()
Who = Annotated[Principal, Depends(principal)]

DEFINITION_FILTERS = (
    ("decisionDefinitionId", "string"), ("decisionDefinitionIdIn", "list"), ("key", "string"),
    ("keyLike", "string"), ("name", "string"), ("nameLike", "string"), ("version", "integer"),
    ("latestVersion", "boolean"), ("deploymentId", "string"), ("resourceName", "string"),
    ("decisionRequirementsDefinitionId", "string"),
    ("decisionRequirementsDefinitionKey", "string"), ("tenantIdIn", "list"),
)  # fmt: skip
DRD_FILTERS = (
    ("decisionRequirementsDefinitionId", "string"),
    ("decisionRequirementsDefinitionIdIn", "list"), ("key", "string"), ("keyLike", "string"),
    ("name", "string"), ("nameLike", "string"), ("version", "integer"),
    ("latestVersion", "boolean"), ("deploymentId", "string"), ("resourceName", "string"),
    ("tenantIdIn", "list"),
)  # fmt: skip
UNSUPPORTED = (
    "category", "categoryLike", "withoutTenantId", "includeDecisionDefinitionsWithoutTenantId",
    "versionTag", "versionTagLike", "withoutDecisionRequirementsDefinition",
    "decisionDefinitionNameLike", "caseDefinitionId", "caseDefinitionKey", "caseInstanceId",
    "userId", "disableBinaryFetching", "disableCustomObjectDeserialization",
)  # fmt: skip
COUNT: dict[str, Any] = {"response_model": s.CountDto, "responses": oa.errors(400)}


def _engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


def definition_json(d: DecisionDefinition) -> dict[str, Any]:
    return sd.DecisionDefinitionDto(
        id=d.id,
        key=d.key,
        category=None,
        name=d.name,
        version=d.version,
        resource=d.resource,
        deploymentId=d.deployment_id,
        decisionRequirementsDefinitionId=d.drd_id,
        decisionRequirementsDefinitionKey=d.drd_key,
        tenantId=d.tenant_id,
        versionTag=d.version_tag,
        historyTimeToLive=None,
    ).dump()


def drd_json(d: DecisionRequirementsDefinition) -> dict[str, Any]:
    return sd.DecisionRequirementsDefinitionDto(
        id=d.id,
        key=d.key,
        category=d.namespace,
        name=d.name,
        version=d.version,
        resource=d.resource,
        deploymentId=d.deployment_id,
        tenantId=d.tenant_id,
    ).dump()


def _definition_query(p: Params, *, drd: bool = False) -> DefinitionQuery:
    p.refuse(UNSUPPORTED)
    prefix = "decisionRequirementsDefinition" if drd else "decisionDefinition"
    single, several = p.text(f"{prefix}Id"), p.texts(f"{prefix}IdIn")
    ids = several
    if single is not None:
        ids = tuple(x for x in several if x == single) if several is not None else (single,)
    sorts = DRD_SORTS if drd else DEFINITION_SORTS
    return DefinitionQuery(
        ids=ids,
        key=p.text("key"),
        key_like=p.text("keyLike"),
        name=p.text("name"),
        name_like=p.text("nameLike"),
        version=p.integer("version"),
        latest=p.true("latestVersion"),
        deployment_id=p.text("deploymentId"),
        resource=p.text("resourceName"),
        drd_id=None if drd else p.text("decisionRequirementsDefinitionId"),
        drd_key=None if drd else p.text("decisionRequirementsDefinitionKey"),
        tenant_ids=p.texts("tenantIdIn"),
        sorting=p.sorting(sorts),
    )


def _paged(query: DefinitionQuery, request: Request) -> DefinitionQuery:
    at = page(request.query_params)
    return DefinitionQuery(**{**query.__dict__, "first": at.offset, "limit": at.limit})


# --- decision definitions ----------------------------------------------------------------


@router.get(
    "/decision-definition",
    response_model=list[sd.DecisionDefinitionDto],
    responses=oa.errors(400),
    openapi_extra=oa.query(DEFINITION_FILTERS, oa.PAGING, oa.sorting(DEFINITION_SORTS)),
)
async def definitions(request: Request, who: Who) -> Response:
    """Deployed decision definitions, every version (``latestVersion=true``: the newest)."""
    who.check_unrestricted("read decision definitions")
    q = _paged(_definition_query(Params.of_query(request.query_params)), request)
    found = await run_in_threadpool(_engine(request).decisions.definitions, q)
    return JSONResponse([definition_json(d) for d in found])


@router.get("/decision-definition/count", **COUNT, openapi_extra=oa.query(DEFINITION_FILTERS))
async def count_definitions(request: Request, who: Who) -> Response:
    who.check_unrestricted("read decision definitions")
    q = _definition_query(Params.of_query(request.query_params))
    return JSONResponse({"count": await run_in_threadpool(_engine(request).decisions.count, q)})


async def _by_key(request: Request, key: str) -> DecisionDefinition:
    try:
        return await run_in_threadpool(lambda: _engine(request).decisions.definition(key=key))
    except NotFound:
        raise ApiError(
            404,
            "RestException",
            f"No matching decision definition with key: {key} and no tenant-id",
        ) from None


async def _by_id(request: Request, definition_id: str) -> DecisionDefinition:
    engine = _engine(request)
    try:
        return await run_in_threadpool(
            lambda: engine.decisions.definition(definition_id=definition_id)
        )
    except NotFound:
        raise ApiError(
            404,
            "InvalidRequestException",
            f"No matching decision definition with id {definition_id}",
        ) from None


_ONE: dict[str, Any] = {
    "response_model": sd.DecisionDefinitionDto,
    "responses": oa.errors(400, 404),
}
_XML: dict[str, Any] = {"response_model": sd.DecisionXmlDto, "responses": oa.errors(400, 404)}


@router.get("/decision-definition/key/{key}", **_ONE)
async def definition_by_key(key: str, request: Request, who: Who) -> Response:
    """The latest version of a decision."""
    who.check_unrestricted("read decision definitions")
    return JSONResponse(definition_json(await _by_key(request, key)))


@router.get("/decision-definition/{definition_id}", **_ONE)
async def definition_by_id(definition_id: str, request: Request, who: Who) -> Response:
    who.check_unrestricted("read decision definitions")
    return JSONResponse(definition_json(await _by_id(request, definition_id)))


async def _xml(request: Request, record_id: str, deployment_id: str, resource: str) -> Response:
    text = await run_in_threadpool(_engine(request).decisions.xml, deployment_id, resource)
    return JSONResponse({"id": record_id, "dmnXml": text})


@router.get("/decision-definition/key/{key}/xml", **_XML)
async def xml_by_key(key: str, request: Request, who: Who) -> Response:
    who.check_unrestricted("read decision definitions")
    d = await _by_key(request, key)
    return await _xml(request, d.id, d.deployment_id, d.resource)


@router.get("/decision-definition/{definition_id}/xml", **_XML)
async def xml_by_id(definition_id: str, request: Request, who: Who) -> Response:
    who.check_unrestricted("read decision definitions")
    d = await _by_id(request, definition_id)
    return await _xml(request, d.id, d.deployment_id, d.resource)


def rules_json(rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rule results as Camunda's typed values (numbers as Integer/Long/Double)."""
    return [{name: typed(to_json(value)) for name, value in rule.items()} for rule in rules]


async def _evaluate(request: Request, body: sd.EvaluateBody, **which: Any) -> Response:
    variables = from_camunda(body.variables) or {}
    engine = _engine(request)
    try:
        result = await run_in_threadpool(
            lambda: engine.decisions.evaluate(variables=variables, **which)
        )
    except ExpressionError as exc:  # a FEEL limit or a model that cannot evaluate these
        raise bad_request(f"Cannot evaluate decision: {exc}") from None
    return JSONResponse(rules_json(result.rules))


_EVALUATE: dict[str, Any] = {
    "response_model": list[sd.RuleResult],
    "responses": oa.errors(400, 404),
}


@router.post("/decision-definition/key/{key}/evaluate", **_EVALUATE)
async def evaluate_by_key(key: str, body: sd.EvaluateBody, request: Request, who: Who) -> Response:
    """Evaluate the latest version: one object per matched rule (output name -> value)."""
    who.check_unrestricted("evaluate decisions")
    await _by_key(request, key)
    return await _evaluate(request, body, key=key)


@router.post("/decision-definition/{definition_id}/evaluate", **_EVALUATE)
async def evaluate_by_id(
    definition_id: str, body: sd.EvaluateBody, request: Request, who: Who
) -> Response:
    """Evaluate this version: one object per matched rule (output name -> value)."""
    who.check_unrestricted("evaluate decisions")
    await _by_id(request, definition_id)
    return await _evaluate(request, body, definition_id=definition_id)


# --- decision requirements definitions -------------------------------------------------


@router.get(
    "/decision-requirements-definition",
    response_model=list[sd.DecisionRequirementsDefinitionDto],
    responses=oa.errors(400),
    openapi_extra=oa.query(DRD_FILTERS, oa.PAGING, oa.sorting(DRD_SORTS)),
)
async def requirements(request: Request, who: Who) -> Response:
    """Deployed DMN files (their ``<definitions>``), every version."""
    who.check_unrestricted("read decision definitions")
    q = _paged(_definition_query(Params.of_query(request.query_params), drd=True), request)
    found = await run_in_threadpool(_engine(request).decisions.requirements, q)
    return JSONResponse([drd_json(d) for d in found])


@router.get("/decision-requirements-definition/count", **COUNT, openapi_extra=oa.query(DRD_FILTERS))
async def count_requirements(request: Request, who: Who) -> Response:
    who.check_unrestricted("read decision definitions")
    q = _definition_query(Params.of_query(request.query_params), drd=True)
    n = await run_in_threadpool(_engine(request).decisions.count_requirements, q)
    return JSONResponse({"count": n})


async def _drd(
    request: Request, query: DefinitionQuery, what: str
) -> DecisionRequirementsDefinition:
    found = await run_in_threadpool(_engine(request).decisions.requirements, query)
    if not found:
        raise ApiError(
            404, "InvalidRequestException", f"No matching decision requirements definition {what}"
        )
    return max(found, key=lambda d: d.version)


_DRD: dict[str, Any] = {
    "response_model": sd.DecisionRequirementsDefinitionDto,
    "responses": oa.errors(400, 404),
}


@router.get("/decision-requirements-definition/key/{key}", **_DRD)
async def requirements_by_key(key: str, request: Request, who: Who) -> Response:
    who.check_unrestricted("read decision definitions")
    return JSONResponse(drd_json(await _drd(request, DefinitionQuery(key=key), f"with key {key}")))


@router.get("/decision-requirements-definition/{drd_id}", **_DRD)
async def requirements_by_id(drd_id: str, request: Request, who: Who) -> Response:
    who.check_unrestricted("read decision definitions")
    return JSONResponse(
        drd_json(await _drd(request, DefinitionQuery(id=drd_id), f"with id {drd_id}"))
    )


@router.get("/decision-requirements-definition/{drd_id}/xml", **_XML)
async def requirements_xml(drd_id: str, request: Request, who: Who) -> Response:
    who.check_unrestricted("read decision definitions")
    d = await _drd(request, DefinitionQuery(id=drd_id), f"with id {drd_id}")
    return await _xml(request, d.id, d.deployment_id, d.resource)
