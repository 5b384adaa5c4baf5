"""User-task endpoints of Camunda 7: list, read, claim, unclaim and complete tasks."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from bpm.api import bodies as b
from bpm.api.auth import Principal, principal
from bpm.api.errors import ApiError
from bpm.api.variables import format_date, from_camunda
from bpm.engine import Engine
from bpm.errors import NotFound
from bpm.runtime.records import UserTask

router = APIRouter()
Who = Annotated[Principal, Depends(principal)]
Id = Annotated[str | None, Query(max_length=300)]


def _engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


def task_json(task: UserTask, definition_id: str | None) -> dict[str, Any]:
    return {
        "id": task.id,
        "name": task.name,
        "assignee": task.assignee,
        "owner": None,
        "created": format_date(task.created_at),
        "due": format_date(task.due_at) if task.due_at else None,
        "followUp": format_date(task.follow_up_at) if task.follow_up_at else None,
        "lastUpdated": None,
        "delegationState": None,
        "description": None,
        "executionId": task.token_id,
        "parentTaskId": None,
        "priority": task.priority,
        "processDefinitionId": definition_id,
        "processInstanceId": task.instance_id,
        "taskDefinitionKey": task.node_id,
        "caseExecutionId": None,
        "caseInstanceId": None,
        "caseDefinitionId": None,
        "suspended": False,
        "formKey": task.form_key,
        "camundaFormRef": dict(task.form_ref) if task.form_ref else None,
        # Not in Camunda's task: its candidates, which Camunda serves from identity links.
        "candidateUsers": list(task.candidate_users),
        "candidateGroups": list(task.candidate_groups),
        "tenantId": None,
    }


def _missing(task_id: str) -> ApiError:
    return ApiError(404, "InvalidRequestException", f"No matching task with id {task_id}")


def _open_task(engine: Engine, task_id: str) -> tuple[UserTask, str | None]:
    found = [t for t in engine.user_tasks(state="open") if t.id == task_id]
    if not found:
        raise _missing(task_id)
    task = found[0]
    return task, engine.get_instance(task.instance_id).definition_id


@router.get("/task")
async def tasks(
    request: Request,
    who: Who,
    processInstanceId: Id = None,
    taskDefinitionKey: Id = None,
    assignee: Id = None,
    candidateGroup: Id = None,
    candidateUser: Id = None,
    firstResult: Annotated[int, Query(ge=0, le=2**31)] = 0,
    maxResults: Annotated[int | None, Query(ge=0, le=2**31)] = None,
) -> Response:
    """Open user tasks matching every given filter, oldest first."""
    who.check_unrestricted("read user tasks")
    engine = _engine(request)

    def query() -> list[dict[str, Any]]:
        found = engine.user_tasks(processInstanceId, node_id=taskDefinitionKey, assignee=assignee)
        if candidateGroup is not None:
            found = [t for t in found if candidateGroup in t.candidate_groups]
        if candidateUser is not None:
            found = [t for t in found if candidateUser in t.candidate_users]
        end = None if maxResults is None else firstResult + maxResults
        defs: dict[str, str | None] = {}
        out = []
        for task in found[firstResult:end]:
            if task.instance_id not in defs:
                defs[task.instance_id] = engine.get_instance(task.instance_id).definition_id
            out.append(task_json(task, defs[task.instance_id]))
        return out

    return JSONResponse(await run_in_threadpool(query))


@router.get("/task/{task_id}")
async def task(task_id: str, request: Request, who: Who) -> Response:
    who.check_unrestricted("read user tasks")
    found, definition_id = await run_in_threadpool(_open_task, _engine(request), task_id)
    return JSONResponse(task_json(found, definition_id))


@router.post("/task/{task_id}/claim", status_code=204)
async def claim(task_id: str, body: b.ClaimBody, request: Request, who: Who) -> Response:
    who.check_unrestricted("claim user tasks")
    try:
        await run_in_threadpool(_engine(request).claim_user_task, task_id, body.userId)
    except NotFound:
        raise _missing(task_id) from None
    return Response(status_code=204)


@router.post("/task/{task_id}/unclaim", status_code=204)
async def unclaim(task_id: str, request: Request, who: Who) -> Response:
    who.check_unrestricted("unclaim user tasks")
    try:
        await run_in_threadpool(_engine(request).unclaim_user_task, task_id)
    except NotFound:
        raise _missing(task_id) from None
    return Response(status_code=204)


@router.post("/task/{task_id}/complete", status_code=204)
async def complete(
    task_id: str, request: Request, who: Who, body: b.TaskCompleteBody | None = None
) -> Response:
    who.check_unrestricted("complete user tasks")
    variables = from_camunda(body.variables if body else None)
    try:
        await run_in_threadpool(_engine(request).complete_user_task, task_id, variables)
    except NotFound:
        raise _missing(task_id) from None
    return Response(status_code=204)
