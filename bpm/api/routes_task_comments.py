"""Comments on user tasks (Camunda's ``/task/{id}/comment``): whoever may see a task may
read and add its comments; the author is who called (a user, or the key's id). Comments
stay readable once the task is completed or cancelled (Camunda reads them from its
history), by whoever saw it; only an open task takes new ones."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response
from pydantic import Field
from starlette.concurrency import run_in_threadpool

from bpm.api import openapi as oa
from bpm.api import schemas as s
from bpm.api.auth import Principal, principal
from bpm.api.bodies import Body
from bpm.api.errors import ApiError
from bpm.api.routes_tasks import seen_task, visible_task
from bpm.api.variables import format_date
from bpm.engine import Engine
from bpm.engine.comments import MAX_MESSAGE
from bpm.store.comments import TaskComment

router = APIRouter()
Who = Annotated[Principal, Depends(principal)]


class CommentIn(Body):
    message: str = Field(max_length=MAX_MESSAGE)
    processInstanceId: str | None = Field(None, max_length=64)


class CommentOut(s.Dto):
    id: str
    userId: str | None
    taskId: str
    processInstanceId: str | None
    time: str
    message: str
    removalTime: str | None
    rootProcessInstanceId: str | None
    links: list[dict[str, str]]


def _engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


def comment_json(request: Request, c: TaskComment) -> dict[str, Any]:
    href = str(request.base_url).rstrip("/") + f"/engine-rest/task/{c.task_id}/comment/{c.id}"
    return {
        "id": c.id,
        "userId": c.user_id,
        "taskId": c.task_id,
        "processInstanceId": c.instance_id,
        "time": format_date(c.created_at),
        "message": c.message,
        "removalTime": None,
        "rootProcessInstanceId": c.instance_id,
        "links": [{"method": "GET", "href": href, "rel": "self"}],
    }


@router.get("/task/{task_id}/comment", response_model=list[CommentOut], responses=oa.errors(404))
async def comments(task_id: str, request: Request, who: Who) -> Response:
    """The task's comments, oldest first (an ended task's too)."""
    await seen_task(request, who, task_id)
    found = await run_in_threadpool(_engine(request).user_task_comments, task_id)
    return JSONResponse([comment_json(request, c) for c in found])


@router.get(
    "/task/{task_id}/comment/{comment_id}", response_model=CommentOut, responses=oa.errors(404)
)
async def comment(task_id: str, comment_id: str, request: Request, who: Who) -> Response:
    await seen_task(request, who, task_id)
    found = await run_in_threadpool(_engine(request).user_task_comments, task_id)
    for c in found:
        if c.id == comment_id:
            return JSONResponse(comment_json(request, c))
    raise ApiError(
        404,
        "InvalidRequestException",
        f"Task comment with id {comment_id} does not exist for task id '{task_id}'.",
    )


@router.post(
    "/task/{task_id}/comment/create", response_model=CommentOut, responses=oa.errors(400, 404)
)
async def create(task_id: str, body: CommentIn, request: Request, who: Who) -> Response:
    """``{"message"}``: the new comment, its author the caller."""
    row = await visible_task(request, who, task_id)
    instance = row.task.instance_id
    found = await run_in_threadpool(
        lambda: _engine(request).comment_user_task(
            task_id, body.message, user_id=who.name, instance_id=instance
        )
    )
    return JSONResponse(comment_json(request, found))
