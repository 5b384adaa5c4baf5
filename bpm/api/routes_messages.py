"""``POST /message``, ``POST /signal`` and ``POST /condition``: Camunda 7's message
correlation, signal broadcast and conditional start evaluation (bodies and answers in
Camunda's shape).

Beyond Camunda: ``correlationKey`` (the value a wait's ``zeebe:subscription
correlationKey`` had when it opened) and ``timeToLive`` (milliseconds, or an ISO 8601
duration such as ``PT1M``): a message that nothing waits for is then kept until the first
matching wait opens within that time, instead of answering 400.

Messages that arrive together are correlated in one transaction
(:class:`bpm.api.batching.MessageBatcher`), each answered alone.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from bpm.api.auth import Principal, principal
from bpm.api.batching import MessageBatcher
from bpm.api.bodies import MAX_DURATION_MS, MAX_ID, Body, Variables
from bpm.api.documented import NAMED, CorrelationKeys, NoVariables, TimeToLive, Unsupported
from bpm.api.errors import ApiError, bad_request
from bpm.api.openapi import errors
from bpm.api.routes_process import definition_tenant, instance_json
from bpm.api.schemas import VariableValueDto
from bpm.api.schemas_process import ProcessInstanceDto
from bpm.api.variables import from_camunda, to_camunda
from bpm.engine import Correlation, Engine, Message
from bpm.errors import InvalidOperation, MessageCorrelationError, NotFound
from bpm.timeexpr import TimerError, parse_duration

router = APIRouter()
Who = Annotated[Principal, Depends(principal)]


class MessageBody(Body):
    messageName: str = Field(min_length=1, max_length=MAX_ID, json_schema_extra={"pattern": NAMED})
    businessKey: str | None = Field(None, max_length=MAX_ID)
    processInstanceId: str | None = Field(None, max_length=64)
    correlationKeys: CorrelationKeys = None
    localCorrelationKeys: NoVariables = None
    processVariables: Variables = None
    processVariablesLocal: Variables = None
    all: bool | None = False
    resultEnabled: bool | None = False
    variablesInResultEnabled: bool | None = False
    correlationKey: str | int | None = None
    timeToLive: TimeToLive = None


class SignalBody(Body):
    name: str = Field(min_length=1, max_length=MAX_ID, json_schema_extra={"pattern": NAMED})
    variables: Variables = None
    executionId: Unsupported = None


class ConditionBody(Body):
    variables: Variables = None
    businessKey: str | None = Field(None, max_length=MAX_ID)
    processDefinitionId: str | None = Field(None, max_length=MAX_ID)
    tenantId: Unsupported = None
    withoutTenantId: bool | None = None


class ExecutionDto(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    processInstanceId: str
    ended: bool
    tenantId: str | None


class MessageCorrelationResultDto(BaseModel):
    """Camunda's result (``Execution`` or ``ProcessDefinition``), or ``Buffered`` with the
    ``messageId`` of a message kept for its time to live."""

    model_config = ConfigDict(extra="forbid")
    resultType: str
    execution: ExecutionDto | None = None
    processInstance: ProcessInstanceDto | None = None
    variables: dict[str, VariableValueDto] | None = None
    messageId: str | None = None


def _engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


def _ttl(value: int | str | None) -> timedelta | None:
    if value is None:
        return None
    if isinstance(value, int):
        if not 0 < value <= MAX_DURATION_MS:
            raise bad_request(f"timeToLive must be 1..{MAX_DURATION_MS} ms, got {value}")
        return timedelta(milliseconds=value)
    try:
        delta = parse_duration(value)
    except TimerError as exc:
        raise bad_request(f"timeToLive: {exc}") from None
    if delta <= timedelta(0):
        raise bad_request(f"timeToLive must be positive, got {value}")
    return delta


@router.post(
    "/message",
    response_model=list[MessageCorrelationResultDto],
    responses={204: {"description": "Correlated (resultEnabled is false)"}, **errors(400)},
)
async def correlate(body: MessageBody, request: Request, who: Who) -> Response:
    """Correlate a message: 204, or 200 with the results when ``resultEnabled``."""
    who.check_unrestricted("correlate messages")
    if body.localCorrelationKeys:
        raise bad_request(
            "localCorrelationKeys are not supported: use correlationKeys (process variables)"
        )
    variables = {
        **(from_camunda(body.processVariables, "processVariables") or {}),
        **(from_camunda(body.processVariablesLocal, "processVariablesLocal") or {}),
    }
    keys = from_camunda(body.correlationKeys, "correlationKeys")
    ttl = _ttl(body.timeToLive)
    engine = _engine(request)
    message = Message(
        body.messageName,
        variables,
        business_key=body.businessKey,
        correlation_key=body.correlationKey,
        correlation_keys=keys,
        instance_id=body.processInstanceId,
        all=bool(body.all),
        ttl=ttl,
    )
    batcher: MessageBatcher = request.app.state.messages
    try:
        # committed with the messages that arrive at the same moment (bpm.api.batching)
        done = await batcher.correlate(message)
    except MessageCorrelationError as exc:
        raise ApiError(
            400,
            "RestException",
            f"org.camunda.bpm.engine.MismatchingMessageCorrelationException: Cannot correlate "
            f"message '{body.messageName}': {exc}",
        ) from None
    if not body.resultEnabled:
        return Response(status_code=204)
    out = [
        await run_in_threadpool(_result, request, engine, c, bool(body.variablesInResultEnabled))
        for c in done
    ]
    return JSONResponse(out)


def _result(
    request: Request, engine: Engine, c: Correlation, with_variables: bool
) -> dict[str, Any]:
    if c.kind == "buffered":
        return {"resultType": "Buffered", "messageId": c.message_id}
    inst = engine.get_instance(c.instance_id or "")
    out: dict[str, Any] = {"resultType": "Execution", "execution": None, "processInstance": None}
    if c.kind == "start":
        out["resultType"] = "ProcessDefinition"
        out["processInstance"] = instance_json(request, inst, definition_tenant(engine, inst))
    else:
        out["execution"] = {
            "id": inst.id,
            "processInstanceId": inst.id,
            "ended": inst.ended,
            "tenantId": None,
        }
    if with_variables:
        out["variables"] = to_camunda(inst.variables, types=inst.variable_types)
    return out


@router.post("/signal", status_code=204, responses=errors(400))
async def signal(body: SignalBody, request: Request, who: Who) -> Response:
    """Broadcast a signal: 204 (no receiver is not an error)."""
    who.check_unrestricted("throw signals")
    if body.executionId is not None:
        raise bad_request("executionId is not supported: a signal goes to every receiver")
    variables = from_camunda(body.variables) or {}
    engine = _engine(request)
    await run_in_threadpool(lambda: engine.signal(body.name, variables))
    return Response(status_code=204)


@router.post("/condition", response_model=list[ProcessInstanceDto], responses=errors(400))
async def condition(body: ConditionBody, request: Request, who: Who) -> Response:
    """Evaluate the conditional start events (Camunda's ``evaluateStartConditions``): an
    instance starts at each whose condition holds over ``variables``; 200 with them."""
    who.check_unrestricted("evaluate conditional start events")
    if body.tenantId is not None:
        raise bad_request("tenantId is not supported: conditions are evaluated for every tenant")
    variables = from_camunda(body.variables) or {}
    engine = _engine(request)
    try:
        started = await run_in_threadpool(
            lambda: engine.evaluate_conditions(
                variables,
                business_key=body.businessKey,
                definition_id=body.processDefinitionId,
            )
        )
    except (NotFound, InvalidOperation) as exc:
        raise bad_request(str(exc)) from None  # Camunda answers 400 for both
    return JSONResponse(
        [instance_json(request, inst, definition_tenant(engine, inst)) for inst in started]
    )
