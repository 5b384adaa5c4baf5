"""The cockpit's actions: each one engine operation, behind :func:`cockpit_operator`
(an operator key, the CSRF token of the session, a same-origin request).

A refused or failed action changes nothing: the guard runs before the body is read, and
each engine operation is one transaction.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool

from bpm.api import cockpit_json as j
from bpm.api.cockpit_auth import Caller, cockpit_operator
from bpm.api.errors import ApiError, bad_request, validation_message
from bpm.api.limits import MAX_VARIABLES
from bpm.api.routes_cockpit import check_id, engine_of
from bpm.errors import BpmError, InvalidOperation
from bpm.runtime.states import TaskState

router = APIRouter()
Operator = Annotated[Caller, Depends(cockpit_operator)]
MAX_BULK = 1000
# A body holds at most a few variables under the engine's per-variable limit, plus slack.
BODY_SLACK = 64 * 1024


class TerminateBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: str | None = Field(None, max_length=1000)


class VariablesBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    variables: dict[str, Any] = Field(max_length=MAX_VARIABLES)


class BulkRetryBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ids: list[Annotated[str, Field(min_length=1, max_length=300)]] | None = Field(
        None, max_length=MAX_BULK
    )
    definitionId: str | None = Field(None, max_length=300)
    nodeId: str | None = Field(None, max_length=255)


async def _body(request: Request, model: type[BaseModel], limit: int) -> Any:
    """Read and validate a JSON body of at most ``limit`` bytes (413 above it)."""
    data = b""
    async for chunk in request.stream():
        data += chunk
        if len(data) > limit:
            raise ApiError(
                413,
                "InvalidRequestException",
                f"request body over {limit} bytes; edit fewer or smaller variables at once",
            )
    if not data.strip():
        data = b"{}"
    try:
        raw = json.loads(data)
    except ValueError:
        raise bad_request("the request body is not valid JSON") from None
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise bad_request(validation_message(exc.errors())) from None


def _who(caller: Caller) -> str:
    return f"{caller.name} (cockpit)"


@router.post("/instances/{instance_id}/terminate")
async def terminate(instance_id: str, request: Request, caller: Operator) -> Response:
    check_id(instance_id, "instance id")
    body: TerminateBody = await _body(request, TerminateBody, 8 * 1024)
    reason = body.reason or f"terminated by {_who(caller)}"
    inst = await run_in_threadpool(
        lambda: engine_of(request).terminate(instance_id, reason=reason, by=_who(caller))
    )
    return JSONResponse(j.instance_row_json(inst))


@router.post("/instances/{instance_id}/suspend")
async def suspend(instance_id: str, request: Request, caller: Operator) -> Response:
    check_id(instance_id, "instance id")
    inst = await run_in_threadpool(lambda: engine_of(request).suspend(instance_id, by=_who(caller)))
    return JSONResponse(j.instance_row_json(inst))


@router.post("/instances/{instance_id}/resume")
async def resume(instance_id: str, request: Request, caller: Operator) -> Response:
    check_id(instance_id, "instance id")
    inst = await run_in_threadpool(lambda: engine_of(request).resume(instance_id, by=_who(caller)))
    return JSONResponse(j.instance_row_json(inst))


@router.post("/instances/{instance_id}/variables")
async def set_variables(instance_id: str, request: Request, caller: Operator) -> Response:
    """Merge ``{"variables": {name: JSON value}}`` into the instance's variables."""
    check_id(instance_id, "instance id")
    engine = engine_of(request)
    limit = engine.config.max_variable_bytes + BODY_SLACK
    body: VariablesBody = await _body(request, VariablesBody, limit)
    inst = await run_in_threadpool(
        lambda: engine.set_variables(instance_id, body.variables, by=_who(caller))
    )
    return JSONResponse({**j.instance_row_json(inst), "variables": inst.variables})


@router.post("/incidents/{incident_id}/retry")
async def retry_incident(incident_id: str, request: Request, caller: Operator) -> Response:
    check_id(incident_id, "incident id")
    inc = await run_in_threadpool(
        lambda: engine_of(request).retry_incident(incident_id, by=_who(caller))
    )
    return JSONResponse(j.incident_json(inc))


@router.post("/incidents/retry")
async def bulk_retry(request: Request, caller: Operator) -> Response:
    """Retry many incidents: ``{"ids": [...]}`` or every open one of ``{"definitionId",
    "nodeId"}``. Each retry is its own transaction; the answer says how each went."""
    body: BulkRetryBody = await _body(request, BulkRetryBody, 256 * 1024)
    engine = engine_of(request)
    by_ids = body.ids is not None
    by_group = bool(body.definitionId and body.nodeId)
    partial_group = (body.definitionId is None) != (body.nodeId is None)
    if by_ids == by_group or partial_group:
        raise bad_request('give either "ids" or both "definitionId" and "nodeId"')

    def run() -> list[dict[str, Any]]:
        ids = body.ids
        if ids is None:
            assert body.definitionId is not None and body.nodeId is not None
            engine.cockpit.definition(body.definitionId)  # 404 for an unknown definition
            ids = engine.cockpit.open_incidents_of(body.definitionId, body.nodeId, MAX_BULK)
        results = []
        for incident_id in dict.fromkeys(ids):
            try:
                engine.retry_incident(incident_id, by=_who(caller))
                results.append({"id": incident_id, "retried": True})
            except BpmError as exc:  # one stale incident must not stop the others
                results.append({"id": incident_id, "retried": False, "error": str(exc)})
        return results

    results = await run_in_threadpool(run)
    return JSONResponse({"results": results, "retried": sum(1 for r in results if r["retried"])})


@router.post("/timers/{timer_id}/fire")
async def fire_timer(timer_id: str, request: Request, caller: Operator) -> Response:
    """Make a pending timer due now; the next timer poll fires it."""
    check_id(timer_id, "timer id")
    timer = await run_in_threadpool(
        lambda: engine_of(request).fire_timer_now(timer_id, by=_who(caller))
    )
    return JSONResponse(j.timer_json(timer))


@router.post("/external-tasks/{task_id}/unlock")
async def unlock(task_id: str, request: Request, caller: Operator) -> Response:
    """Give a locked external task back to its topic at once."""
    check_id(task_id, "external task id")
    engine = engine_of(request)

    def run() -> dict[str, Any]:
        task = engine.external_task(task_id)
        if task.state is not TaskState.LOCKED:
            raise InvalidOperation(f"external task {task_id} is {task.state.value}, not locked")
        engine.unlock_external_task(task_id, by=_who(caller))
        return j.external_task_json(engine.external_task(task_id))

    return JSONResponse(await run_in_threadpool(run))
