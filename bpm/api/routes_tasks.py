"""User-task endpoints of Camunda 7: list and count (GET with query parameters, POST with
a JSON filter), read, update, claim, unclaim, assign, complete and submit forms."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from bpm.api import openapi as oa
from bpm.api import schemas as s
from bpm.api.auth import Principal, principal
from bpm.api.camunda_params import Params, page, parse_date
from bpm.api.errors import ApiError, bad_request
from bpm.api.sort_keys import TASK_SORT_KEYS
from bpm.api.task_access import check_admin_task, may_claim, may_work, sees, viewer
from bpm.api.task_filters import task_query
from bpm.api.task_forms import checked_submission, task_form
from bpm.api.variables import format_date, from_camunda, to_camunda
from bpm.engine import Engine, TaskChanges
from bpm.engine.queries import TaskQuery, TaskRow
from bpm.errors import NotFound
from bpm.identity import IdentityProvider
from bpm.runtime.states import InstanceState

router = APIRouter()
Who = Annotated[Principal, Depends(principal)]

TASK_FILTERS = (
    ("processInstanceId", "string"), ("processInstanceIdIn", "list"),
    ("processInstanceBusinessKey", "string"), ("processInstanceBusinessKeyIn", "list"),
    ("processInstanceBusinessKeyLike", "string"), ("processDefinitionId", "string"),
    ("processDefinitionKey", "string"), ("processDefinitionKeyIn", "list"),
    ("executionId", "string"), ("taskId", "string"), ("taskIdIn", "list"),
    ("taskDefinitionKey", "string"), ("taskDefinitionKeyIn", "list"),
    ("taskDefinitionKeyLike", "string"), ("assignee", "string"), ("assigneeIn", "list"),
    ("assigneeLike", "string"), ("assigned", "boolean"), ("unassigned", "boolean"),
    ("owner", "string"), ("candidateGroup", "string"), ("candidateGroups", "list"),
    ("candidateUser", "string"), ("involvedUser", "string"), ("includeAssignedTasks", "boolean"),
    ("withCandidateGroups", "boolean"), ("withoutCandidateGroups", "boolean"),
    ("withCandidateUsers", "boolean"), ("withoutCandidateUsers", "boolean"),
    ("name", "string"), ("nameLike", "string"), ("description", "string"),
    ("descriptionLike", "string"), ("priority", "integer"), ("minPriority", "integer"),
    ("maxPriority", "integer"), ("dueDate", "date"), ("dueBefore", "date"),
    ("dueAfter", "date"), ("withoutDueDate", "boolean"), ("followUpBefore", "date"),
    ("followUpAfter", "date"), ("createdOn", "date"), ("createdBefore", "date"),
    ("createdAfter", "date"), ("active", "boolean"), ("suspended", "boolean"),
    ("tenantIdIn", "list"), ("withoutTenantId", "boolean"),
)  # fmt: skip


def _engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


def missing_task(task_id: str) -> ApiError:
    return ApiError(404, "InvalidRequestException", f"No matching task with id {task_id}")


def task_dto(row: TaskRow) -> s.TaskDto:
    task = row.task
    return s.TaskDto(
        id=task.id,
        name=task.name,
        assignee=task.assignee,
        owner=task.owner,
        created=format_date(task.created_at) or "",
        due=format_date(task.due_at),
        followUp=format_date(task.follow_up_at),
        description=task.description,
        executionId=task.token_id,
        priority=task.priority,
        processDefinitionId=row.definition_id,
        processInstanceId=task.instance_id,
        taskDefinitionKey=task.node_id,
        suspended=row.instance_state is InstanceState.SUSPENDED,
        formKey=task.form_key,
        camundaFormRef=dict(task.form_ref) if task.form_ref else None,
        candidateUsers=list(task.candidate_users),
        candidateGroups=list(task.candidate_groups),
        tenantId=row.tenant_id,
    )


async def visible_query(request: Request, who: Principal, p: Params) -> TaskQuery:
    """The filter of a task list, narrowed to what ``who`` may see, with the groups of a
    ``candidateUser`` (Camunda: a user's groups' tasks are that user's candidate tasks)."""
    q = replace(task_query(p), visible_to=viewer(request, who))
    user = q.candidate_user
    if user is not None:
        identity: IdentityProvider = request.app.state.identity
        groups = await run_in_threadpool(identity.groups_of, user)
        q = replace(q, candidate_user_groups=tuple(sorted(groups)))
    return q


async def visible_task(request: Request, who: Principal, task_id: str) -> TaskRow:
    """An open task ``who`` may see; 404 otherwise (as if it did not exist)."""
    try:
        row = await run_in_threadpool(_engine(request).queries.task, task_id)
    except NotFound:
        raise missing_task(task_id) from None
    if not sees(request, who, row.task):
        raise missing_task(task_id)
    return row


async def seen_task(request: Request, who: Principal, task_id: str) -> TaskRow:
    """A task of any state (open, completed, cancelled) ``who`` may see, as Camunda reads a
    task's comments from its history; 404 otherwise."""
    q = TaskQuery(states=(), task_ids=(task_id,), visible_to=viewer(request, who))
    found = await run_in_threadpool(lambda: _engine(request).queries.tasks(q, limit=1))
    if not found:
        raise missing_task(task_id)
    return found[0]


async def _list(request: Request, who: Principal, p: Params) -> Response:
    at = page(request.query_params)
    q = await visible_query(request, who, p)
    rows = await run_in_threadpool(
        lambda: _engine(request).queries.tasks(q, offset=at.offset, limit=at.limit)
    )
    return JSONResponse([task_dto(r).dump() for r in rows])


async def _count(request: Request, who: Principal, p: Params) -> Response:
    q = await visible_query(request, who, p)
    n = await run_in_threadpool(lambda: _engine(request).queries.count_tasks(q))
    return JSONResponse({"count": n})


LIST: dict[str, Any] = {"response_model": list[s.TaskDto], "responses": oa.errors(400)}
COUNT: dict[str, Any] = {"response_model": s.CountDto, "responses": oa.errors(400)}


@router.get(
    "/task", **LIST, openapi_extra=oa.query(TASK_FILTERS, oa.PAGING, oa.sorting(TASK_SORT_KEYS))
)
async def tasks(request: Request, who: Who) -> Response:
    """Open user tasks matching every filter; oldest first unless sorted."""
    return await _list(request, who, Params.of_query(request.query_params))


@router.post("/task", **LIST, openapi_extra=oa.query(oa.PAGING))
async def tasks_by_body(
    request: Request, who: Who, body: Annotated[s.TaskQueryDto | None, Body()] = None
) -> Response:
    """The filter as a JSON body (``sorting`` a list); ``firstResult``/``maxResults`` in
    the query."""
    return await _list(request, who, Params.of_body(_raw(body)))


@router.get("/task/count", **COUNT, openapi_extra=oa.query(TASK_FILTERS))
async def count(request: Request, who: Who) -> Response:
    return await _count(request, who, Params.of_query(request.query_params))


@router.post("/task/count", **COUNT)
async def count_by_body(
    request: Request, who: Who, body: Annotated[s.TaskQueryDto | None, Body()] = None
) -> Response:
    return await _count(request, who, Params.of_body(_raw(body)))


def _raw(body: Any) -> dict[str, Any]:
    return {} if body is None else dict(body.model_dump(exclude_unset=True))


@router.get("/task/{task_id}", response_model=s.TaskDto, responses=oa.errors(404))
async def task(task_id: str, request: Request, who: Who) -> Response:
    row = await visible_task(request, who, task_id)
    return JSONResponse(task_dto(row).dump())


def _when(name: str, value: str | None) -> Any:
    return None if value is None else parse_date(name, value)


@router.put("/task/{task_id}", status_code=204, responses=oa.errors(400, 404))
async def update(task_id: str, body: s.TaskUpdateDto, request: Request, who: Who) -> Response:
    """Replace name, description, assignee, owner, due and follow-up dates (null clears
    them) and the priority (kept when left out), as Camunda's task update."""
    check_admin_task(who, "update user tasks")
    changes = TaskChanges(
        name=body.name,
        description=body.description,
        assignee=body.assignee,
        owner=body.owner,
        due_at=_when("due", body.due),
        follow_up_at=_when("followUp", body.followUp),
        priority=body.priority,
    )
    try:
        await run_in_threadpool(
            lambda: _engine(request).update_user_task(task_id, changes, by=who.name)
        )
    except NotFound:
        raise missing_task(task_id) from None
    return Response(status_code=204)


@router.post("/task/{task_id}/claim", status_code=204, responses=oa.errors(400, 404))
async def claim(task_id: str, body: s.ClaimDto, request: Request, who: Who) -> Response:
    """Assign an unassigned task to ``userId``. A user claims for themselves a task they
    are a candidate of (or one of their groups); an administrator for anyone. A task that
    someone else has: 400, as Camunda's."""
    if not body.userId or len(body.userId) > 255:
        raise bad_request("userId (1 to 255 characters) is required to claim a task")
    user = body.userId
    row = await visible_task(request, who, task_id)
    may_claim(request, who, row, user)
    try:
        await run_in_threadpool(_engine(request).claim_user_task, task_id, user)
    except NotFound:
        raise missing_task(task_id) from None
    return Response(status_code=204)


@router.post("/task/{task_id}/unclaim", status_code=204, responses=oa.errors(404))
async def unclaim(task_id: str, request: Request, who: Who) -> Response:
    row = await visible_task(request, who, task_id)
    may_work(who, row.task, "unclaim")
    try:
        await run_in_threadpool(_engine(request).unclaim_user_task, task_id)
    except NotFound:
        raise missing_task(task_id) from None
    return Response(status_code=204)


@router.post("/task/{task_id}/assignee", status_code=204, responses=oa.errors(400, 404))
async def assignee(task_id: str, body: s.UserIdDto, request: Request, who: Who) -> Response:
    """Set the assignee whoever has the task (``userId`` null: nobody)."""
    check_admin_task(who, "assign user tasks")
    if body.userId is not None and (not body.userId or len(body.userId) > 255):
        raise bad_request("userId must be 1 to 255 characters, or null")
    try:
        await run_in_threadpool(_engine(request).set_user_task_assignee, task_id, body.userId)
    except NotFound:
        raise missing_task(task_id) from None
    return Response(status_code=204)


async def _complete(
    task_id: str,
    request: Request,
    who: Principal,
    body: s.CompleteTaskDto | None,
    *,
    form: bool = False,
) -> Response:
    row = await visible_task(request, who, task_id)
    may_work(who, row.task, "complete")
    variables = from_camunda(body.variables if body else None)
    if form:
        variables = checked_submission(await task_form(request, row), task_id, variables or {})
    try:
        inst = await run_in_threadpool(_engine(request).complete_user_task, task_id, variables)
    except NotFound:
        raise missing_task(task_id) from None
    if body is not None and body.withVariablesInReturn:
        return JSONResponse(to_camunda(inst.variables, True, inst.variable_types))
    return Response(status_code=204)


DONE: dict[int | str, dict[str, Any]] = {
    200: {
        "model": dict[str, s.VariableValueDto],
        "description": "with withVariablesInReturn: the instance's variables",
    },
    **oa.errors(400, 404),
}


@router.post("/task/{task_id}/complete", status_code=204, responses=DONE)
async def complete(
    task_id: str, request: Request, who: Who, body: s.CompleteTaskDto | None = None
) -> Response:
    """Merge the variables and move the token on: 204, or 200 with the instance's
    variables when ``withVariablesInReturn``."""
    return await _complete(task_id, request, who, body)


@router.post("/task/{task_id}/submit-form", status_code=204, responses=DONE)
async def submit_form(
    task_id: str, request: Request, who: Who, body: s.CompleteTaskDto | None = None
) -> Response:
    """Complete with the form's values, checked first against the task's form (generated
    fields: types, required, readonly, min/max, lengths, enum values; a Camunda Form: its
    validate rules): 400 naming the field, and nothing changes."""
    return await _complete(task_id, request, who, body, form=True)
