"""Camunda 7's decision endpoints: ``/decision-definition`` (list, count, by id or key, the
DMN XML, evaluate with typed variables), ``/decision-requirements-definition`` and
``/history/decision-instance`` (with inputs, outputs and rule ids)."""

from __future__ import annotations

from collections.abc import Mapping
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
from bpm.api.variables import format_date, from_camunda, typed
from bpm.engine import Engine
from bpm.errors import ExpressionError, NotFound
from bpm.feel.jsonvalues import to_json
from bpm.runtime.records import (
    DecisionDefinition,
    DecisionInstance,
    DecisionRequirementsDefinition,
)
from bpm.store.decisions import (
    DEFINITION_SORTS,
    DRD_SORTS,
    INSTANCE_SORTS,
    DefinitionQuery,
    InstanceQuery,
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
INSTANCE_FILTERS = (
    ("decisionInstanceId", "string"), ("decisionInstanceIdIn", "list"),
    ("decisionDefinitionId", "string"), ("decisionDefinitionKey", "string"),
    ("decisionDefinitionKeyIn", "list"), ("decisionDefinitionName", "string"),
    ("processDefinitionId", "string"), ("processDefinitionKey", "string"),
    ("processInstanceId", "string"), ("activityIdIn", "list"), ("evaluatedBefore", "date"),
    ("evaluatedAfter", "date"), ("rootDecisionInstanceId", "string"),
    ("rootDecisionInstancesOnly", "boolean"), ("decisionRequirementsDefinitionId", "string"),
    ("decisionRequirementsDefinitionKey", "string"), ("tenantIdIn", "list"),
    ("includeInputs", "boolean"), ("includeOutputs", "boolean"),
)  # fmt: skip
_UNSUPPORTED = (
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
    p.refuse(_UNSUPPORTED)
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


# --- history -----------------------------------------------------------------------------


def _instance_query(p: Params, request: Request | None = None) -> InstanceQuery:
    p.refuse(_UNSUPPORTED)
    at = page(request.query_params) if request is not None else None
    single, several = p.text("decisionInstanceId"), p.texts("decisionInstanceIdIn")
    ids = several if single is None else (single,) + (several or ())
    key, keys = p.text("decisionDefinitionKey"), p.texts("decisionDefinitionKeyIn")
    return InstanceQuery(
        ids=ids,
        definition_id=p.text("decisionDefinitionId"),
        definition_key=key,
        definition_keys=keys,
        definition_name=p.text("decisionDefinitionName"),
        process_definition_id=p.text("processDefinitionId"),
        process_definition_key=p.text("processDefinitionKey"),
        process_instance_id=p.text("processInstanceId"),
        activity_ids=p.texts("activityIdIn"),
        before=p.date("evaluatedBefore"),
        after=p.date("evaluatedAfter"),
        root_id=p.text("rootDecisionInstanceId"),
        roots_only=p.true("rootDecisionInstancesOnly"),
        drd_id=p.text("decisionRequirementsDefinitionId"),
        drd_key=p.text("decisionRequirementsDefinitionKey"),
        tenant_ids=p.texts("tenantIdIn"),
        sorting=p.sorting(INSTANCE_SORTS),
        first=at.offset if at else 0,
        limit=at.limit if at else None,
    )


def _clause(row: DecisionInstance, n: int, part: Mapping[str, Any], when: str) -> dict[str, Any]:
    value = typed(part.get("value"))
    return {
        "id": f"{row.id}:{n}",
        "decisionInstanceId": row.id,
        "clauseId": part.get("id"),
        "clauseName": part.get("name"),
        "errorMessage": None,
        "type": value["type"],
        "value": value["value"],
        "valueInfo": value["valueInfo"],
        "createTime": when,
        "removalTime": None,
        "rootProcessInstanceId": row.process_instance_id,
    }


def instance_json(row: DecisionInstance, inputs: bool, outputs: bool) -> dict[str, Any]:
    when = format_date(row.evaluated_at) or ""
    out: dict[str, Any] = {
        "id": row.id,
        "decisionDefinitionId": row.definition_id,
        "decisionDefinitionKey": row.definition_key,
        "decisionDefinitionName": row.definition_name,
        "evaluationTime": when,
        "removalTime": None,
        "processDefinitionId": row.process_definition_id,
        "processDefinitionKey": row.process_definition_key,
        "processInstanceId": row.process_instance_id,
        "rootProcessInstanceId": row.process_instance_id,
        "caseDefinitionId": None,
        "caseDefinitionKey": None,
        "caseInstanceId": None,
        "activityId": row.activity_id,
        "activityInstanceId": row.activity_id,
        "tenantId": row.tenant_id,
        "userId": None,
        "inputs": None,
        "outputs": None,
        "collectResultValue": row.collect_result,
        "rootDecisionInstanceId": row.root_id,
        "decisionRequirementsDefinitionId": row.drd_id,
        "decisionRequirementsDefinitionKey": row.drd_key,
    }
    if inputs:
        out["inputs"] = [_clause(row, n, part, when) for n, part in enumerate(row.inputs)]
    if outputs:
        out["outputs"] = [
            {
                **_clause(row, n, part, when),
                "ruleId": part.get("rule_id"),
                "ruleOrder": part.get("rule_order"),
                "variableName": part.get("variable"),
            }
            for n, part in enumerate(row.outputs, start=len(row.inputs))
        ]
    return sd.HistoricDecisionInstanceDto.model_validate(out).dump()


@router.get(
    "/history/decision-instance",
    response_model=list[sd.HistoricDecisionInstanceDto],
    responses=oa.errors(400),
    openapi_extra=oa.query(INSTANCE_FILTERS, oa.PAGING, oa.sorting(INSTANCE_SORTS)),
)
async def decision_instances(request: Request, who: Who) -> Response:
    """Evaluated decisions, oldest first unless sorted; ``includeInputs``/``includeOutputs``
    add the table inputs and each matched rule's outputs (with ``ruleId``)."""
    who.check_unrestricted("read history")
    p = Params.of_query(request.query_params)
    q = _instance_query(p, request)
    found = await run_in_threadpool(_engine(request).decisions.history, q)
    return JSONResponse(
        [instance_json(r, p.true("includeInputs"), p.true("includeOutputs")) for r in found]
    )


@router.get("/history/decision-instance/count", **COUNT, openapi_extra=oa.query(INSTANCE_FILTERS))
async def count_decision_instances(request: Request, who: Who) -> Response:
    who.check_unrestricted("read history")
    q = _instance_query(Params.of_query(request.query_params))
    return JSONResponse(
        {"count": await run_in_threadpool(_engine(request).decisions.count_history, q)}
    )


@router.get(
    "/history/decision-instance/{instance_id}",
    response_model=sd.HistoricDecisionInstanceDto,
    responses=oa.errors(400, 404),
    openapi_extra=oa.query((("includeInputs", "boolean"), ("includeOutputs", "boolean"))),
)
async def decision_instance(instance_id: str, request: Request, who: Who) -> Response:
    who.check_unrestricted("read history")
    p = Params.of_query(request.query_params)
    found = await run_in_threadpool(
        _engine(request).decisions.history, InstanceQuery(id=instance_id)
    )
    if not found:
        raise ApiError(
            404,
            "InvalidRequestException",
            f"Historic decision instance with id '{instance_id}' does not exist",
        )
    return JSONResponse(instance_json(found[0], p.true("includeInputs"), p.true("includeOutputs")))
