"""What a user task shows besides itself: its identity links, the variables visible from
it (read, set, delete) and its form variables.

The variables visible from a task are its instance's (task-local variables have no scope
of their own yet): every read goes through ``engine.queries.task_variables``.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from bpm.api import openapi as oa
from bpm.api import schemas as s
from bpm.api.auth import Principal, principal
from bpm.api.camunda_params import Params
from bpm.api.errors import ApiError, bad_request
from bpm.api.routes_tasks import missing_task, visible_task
from bpm.api.task_access import may_work, sees
from bpm.api.task_forms import task_form
from bpm.api.variables import from_camunda, one_from_camunda, to_camunda, typed
from bpm.engine import Engine
from bpm.engine.queries import TaskVariables
from bpm.errors import NotFound
from bpm.forms import generated_values

router = APIRouter()
Who = Annotated[Principal, Depends(principal)]
#: The ``type`` filter values of ``/task/{id}/identity-links``.
LINK_TYPES = ("assignee", "owner", "candidate")
VARIABLES: dict[str, Any] = {
    "response_model": dict[str, s.VariableValueDto],
    "responses": oa.errors(400, 404),
}


def _engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


async def _visible(
    request: Request, who: Principal, task_id: str, *, change: bool = False
) -> TaskVariables:
    """The task's variables if ``who`` may see the task (404 otherwise), and may work on
    it when ``change``."""
    try:
        found = await run_in_threadpool(_engine(request).queries.task_variables, task_id)
    except NotFound:
        raise missing_task(task_id) from None
    if not sees(request, who, found.task):
        raise missing_task(task_id)
    if change:
        may_work(who, found.task, "change the variables of")
    return found


def _deserialize(request: Request, name: str = "deserializeValues") -> bool:
    flag = Params.of_query(request.query_params).flag(name)
    return True if flag is None else flag


@router.get(
    "/task/{task_id}/identity-links",
    response_model=list[s.IdentityLinkDto],
    responses=oa.errors(400, 404),
    openapi_extra=oa.query([("type", {"type": "string", "enum": list(LINK_TYPES)})]),
)
async def identity_links(task_id: str, request: Request, who: Who) -> Response:
    """The assignee, the owner and every candidate user and group (``type`` filters)."""
    wanted = Params.of_query(request.query_params).text("type")
    if wanted is not None and wanted not in LINK_TYPES:
        raise bad_request("type must be assignee, owner or candidate")
    found = await _visible(request, who, task_id)
    task = found.task
    links = []
    if task.assignee:
        links.append(s.IdentityLinkDto(userId=task.assignee, groupId=None, type="assignee"))
    if task.owner:
        links.append(s.IdentityLinkDto(userId=task.owner, groupId=None, type="owner"))
    links += [
        s.IdentityLinkDto(userId=u, groupId=None, type="candidate") for u in task.candidate_users
    ]
    links += [
        s.IdentityLinkDto(userId=None, groupId=g, type="candidate") for g in task.candidate_groups
    ]
    return JSONResponse([x.dump() for x in links if wanted in (None, x.type)])


@router.get(
    "/task/{task_id}/variables",
    **VARIABLES,
    openapi_extra=oa.query([("deserializeValues", "boolean")]),
)
async def variables(task_id: str, request: Request, who: Who) -> Response:
    found = await _visible(request, who, task_id)
    return JSONResponse(to_camunda(found.values, _deserialize(request), found.types))


@router.get(
    "/task/{task_id}/form-variables",
    **VARIABLES,
    openapi_extra=oa.query([("variableNames", "list"), ("deserializeValues", "boolean")]),
)
async def form_variables(task_id: str, request: Request, who: Who) -> Response:
    """The variables a form of the task starts from: a generated form's fields (the
    variable's value, else the field's default), otherwise all visible ones; only
    ``variableNames`` when given."""
    names = Params.of_query(request.query_params).texts("variableNames")
    found = await _visible(request, who, task_id)
    values = dict(found.values)
    row = await visible_task(request, who, task_id)
    form = await task_form(request, row)
    if form.fields:  # a generated form: its fields, each its variable's value or default
        values = generated_values(form.fields, found.values)
    values = {k: v for k, v in values.items() if names is None or k in names}
    return JSONResponse(to_camunda(values, _deserialize(request), found.types))


@router.get(
    "/task/{task_id}/variables/{name}",
    response_model=s.VariableValueDto,
    responses=oa.errors(400, 404),
    openapi_extra=oa.query([("deserializeValue", "boolean")]),
)
async def variable(task_id: str, name: str, request: Request, who: Who) -> Response:
    found = await _visible(request, who, task_id)
    if name not in found.values:
        raise ApiError(
            404, "InvalidRequestException", f"task variable with name {name} does not exist"
        )
    deserialize = _deserialize(request, "deserializeValue")
    return JSONResponse(typed(found.values[name], deserialize, found.types.get(name)))


@router.put("/task/{task_id}/variables/{name}", status_code=204, responses=oa.errors(400, 404))
async def put_variable(
    task_id: str, name: str, body: s.VariableValueInDto, request: Request, who: Who
) -> Response:
    """Set one variable visible from the task (its instance's)."""
    value = one_from_camunda(name, body.model_dump())
    found = await _visible(request, who, task_id, change=True)
    await run_in_threadpool(
        lambda: _engine(request).modify_variables(
            found.task.instance_id, {name: value}, by=who.name
        )
    )
    return Response(status_code=204)


@router.delete("/task/{task_id}/variables/{name}", status_code=204, responses=oa.errors(400, 404))
async def delete_variable(task_id: str, name: str, request: Request, who: Who) -> Response:
    found = await _visible(request, who, task_id, change=True)
    await run_in_threadpool(
        lambda: _engine(request).modify_variables(found.task.instance_id, {}, [name], by=who.name)
    )
    return Response(status_code=204)


@router.post("/task/{task_id}/variables", status_code=204, responses=oa.errors(400, 404))
async def modify_variables(
    task_id: str, body: s.PatchVariablesDto, request: Request, who: Who
) -> Response:
    """``modifications`` (typed values) and ``deletions`` (names) in one transaction."""
    changes = from_camunda(body.modifications, "modifications") or {}
    found = await _visible(request, who, task_id, change=True)
    await run_in_threadpool(
        lambda: _engine(request).modify_variables(
            found.task.instance_id, changes, list(body.deletions or []), by=who.name
        )
    )
    return Response(status_code=204)
