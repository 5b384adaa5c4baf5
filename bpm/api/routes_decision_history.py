"""Camunda 7's ``/history/decision-instance``: evaluated decisions with their inputs,
matched rules (``ruleId``, ``ruleOrder``) and outputs."""

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
from bpm.api.data_age import DataAgeRoute
from bpm.api.errors import ApiError
from bpm.api.routes_decisions import UNSUPPORTED
from bpm.api.variables import format_date, typed
from bpm.engine import Engine
from bpm.runtime.records import DecisionInstance
from bpm.store.decisions import INSTANCE_SORTS, InstanceQuery

router = APIRouter(route_class=DataAgeRoute)
Who = Annotated[Principal, Depends(principal)]
COUNT: dict[str, Any] = {"response_model": s.CountDto, "responses": oa.errors(400)}

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


def _engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


def _instance_query(p: Params, request: Request | None = None) -> InstanceQuery:
    p.refuse(UNSUPPORTED)
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
