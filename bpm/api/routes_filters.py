"""Saved task filters of Camunda 7 (``/filter``): a named task query its owner keeps and
runs again, merged with the query of the request (``/filter/{id}/list``, ``/count``,
``/singleResult``: the one task, 204 for none, 400 for more than one).

Who sees a filter: its owner, and administrators (an operator key, ``camunda-admin``), who
see and change every one (Camunda decides by authorizations; this engine has none). A
filter another user owns answers 404, as if it did not exist; a user may not save a
filter for someone else (403). Running a filter lists only the tasks the caller may see
(:mod:`bpm.api.task_access`), whoever saved it. A filter's query may name the signed-in
user as Camunda's task list does: ``assigneeExpression``, ``ownerExpression``,
``candidateUserExpression`` or ``involvedUserExpression`` ``${currentUser()}``, and
``candidateGroupsExpression`` ``${currentUserGroups()}``; other expressions answer 400.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Depends, Request
from fastapi.responses import JSONResponse, Response
from pydantic import Field
from starlette.concurrency import run_in_threadpool

from bpm.api import openapi as oa
from bpm.api import schemas as s
from bpm.api.auth import Principal, forbidden, principal
from bpm.api.camunda_params import Params, page
from bpm.api.errors import ApiError, bad_request
from bpm.api.limits import MAX_CONDITIONS, at_most
from bpm.api.routes_tasks import task_dto, visible_query
from bpm.api.task_access import check_task_caller
from bpm.api.task_filters import task_query
from bpm.engine import Engine
from bpm.engine.filters import MAX_NAME
from bpm.store.filters import FILTER_SORTS, FilterQuery, SavedFilter

router = APIRouter()
Who = Annotated[Principal, Depends(principal)]

#: The expressions a saved query may use for the user who runs it (Camunda's names).
USER_EXPRESSIONS = {
    "assigneeExpression": "assignee",
    "ownerExpression": "owner",
    "candidateUserExpression": "candidateUser",
    "involvedUserExpression": "involvedUser",
}
CURRENT_USER = "${currentUser()}"
CURRENT_GROUPS = "${currentUserGroups()}"

FILTER_FILTERS = (
    ("filterId", "string"), ("resourceType", {"type": "string", "enum": ["Task"]}),
    ("name", "string"), ("nameLike", "string"), ("owner", "string"),
    ("itemCount", "boolean"),
)  # fmt: skip
ITEM_COUNT = (("itemCount", "boolean"),)


class CreateFilterDto(s.RequestDto):
    """``resourceType`` Task, a ``name``, an ``owner`` (a user: themselves, or none), the
    task ``query`` (``POST /task``'s names) and free ``properties`` (the task list's)."""

    resourceType: Literal["Task"]
    name: str = Field(min_length=1, max_length=MAX_NAME, pattern=r"^[^\x00]*\S[^\x00]*$")
    owner: str | None = Field(None, min_length=1, max_length=255, pattern=r"^[^\x00]*$")
    query: s.TaskQueryDto | None = None
    properties: Annotated[dict[str, Any], at_most(MAX_CONDITIONS)] | None = None


class FilterOut(s.Dto):
    id: str
    resourceType: str
    name: str
    owner: str | None
    query: dict[str, Any]
    properties: dict[str, Any]
    itemCount: int | None = None


def _engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


def _no_filter(filter_id: str) -> ApiError:
    return ApiError(404, "InvalidRequestException", f"Filter with id {filter_id} does not exist")


def _reader_scope(who: Principal) -> str | None:
    """Whose filters ``who`` sees: a user who is no admin their own; None: every one."""
    check_task_caller(who)
    if who.person is not None and not who.admin:
        return who.person.id
    return None


def _visible(who: Principal, saved: SavedFilter) -> bool:
    mine = _reader_scope(who)
    return mine is None or saved.owner == mine


async def _visible_filter(request: Request, who: Principal, filter_id: str) -> SavedFilter:
    """The filter, or 404 for one that does not exist or that ``who`` may not see."""
    check_task_caller(who)
    found = await run_in_threadpool(
        lambda: _engine(request).filters.find(FilterQuery(id=filter_id))
    )
    if not found or not _visible(who, found[0]):
        raise _no_filter(filter_id)
    return found[0]


def _owner_for(who: Principal, owner: str | None) -> str | None:
    """The owner a change may set: a user sets themselves (an absent owner is them);
    administrators set anyone or nobody. 403 for a user naming someone else."""
    check_task_caller(who)
    if who.person is not None and not who.admin:
        if owner not in (None, who.person.id):
            raise forbidden(
                f"user '{who.person.id}' may save filters only for themselves, not '{owner}'"
            )
        return who.person.id
    who.check_admin("save filters for others")
    return owner


def _saved_query(body: CreateFilterDto) -> dict[str, Any]:
    """The query as Camunda's JSON names it; 400 for one the task list cannot run."""
    query = {} if body.query is None else dict(body.query.model_dump(exclude_unset=True))
    _run_params(query, None)  # checks every name and value now, so nothing bad is saved
    return query


def _run_params(query: dict[str, Any], who: Principal | None) -> Params:
    """The saved query with its expressions resolved for ``who`` (None: only checked)."""
    values = dict(query)
    user = who.person.id if who is not None and who.person is not None else None
    for name, field in USER_EXPRESSIONS.items():
        expr = values.pop(name, None)
        if expr in (None, ""):
            continue
        if expr != CURRENT_USER:
            raise bad_request(f"{name} supports {CURRENT_USER} only, not {str(expr)[:80]!r}")
        if user is not None:  # a key acting as nobody: no such filter (it sees every task)
            values[field] = user
    expr = values.pop("candidateGroupsExpression", None)
    if expr not in (None, ""):
        if expr != CURRENT_GROUPS:
            raise bad_request(
                f"candidateGroupsExpression supports {CURRENT_GROUPS} only, not {str(expr)[:80]!r}"
            )
        if who is not None and who.person is not None:
            values["candidateGroups"] = sorted(who.person.groups)
    params = Params.of_body(values)
    if who is None:
        task_query(params)  # refuses unknown sort keys and unsupported filters: none saved
    return params


def filter_json(saved: SavedFilter, item_count: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": saved.id,
        "resourceType": saved.resource_type,
        "name": saved.name,
        "owner": saved.owner,
        "query": saved.query,
        "properties": saved.properties,
    }
    if item_count is not None:
        out["itemCount"] = item_count
    return out


async def _item_count(request: Request, who: Principal, saved: SavedFilter) -> int:
    q = await visible_query(request, who, _run_params(saved.query, who))
    return await run_in_threadpool(lambda: _engine(request).queries.count_tasks(q))


def _filter_query(request: Request, who: Principal) -> FilterQuery:
    p = Params.of_query(request.query_params)
    resource_type = p.text("resourceType")
    return FilterQuery(
        id=p.text("filterId"),
        resource_type=resource_type,
        name=p.text("name"),
        name_like=p.text("nameLike"),
        owner=p.text("owner"),
        visible_to=_reader_scope(who),
        sorting=p.sorting(tuple(FILTER_SORTS)),
    )


@router.get(
    "/filter",
    response_model=list[FilterOut],
    responses=oa.errors(400),
    openapi_extra=oa.query(FILTER_FILTERS, oa.PAGING, oa.sorting(tuple(FILTER_SORTS))),
)
async def filters(request: Request, who: Who) -> Response:
    """The filters the caller sees (a user who is no admin: their own), matching every
    parameter; ``itemCount=true`` adds how many tasks each lists for the caller."""
    at = page(request.query_params)
    q = _filter_query(request, who)
    found = await run_in_threadpool(
        lambda: _engine(request).filters.find(q, offset=at.offset, limit=at.limit)
    )
    counting = Params.of_query(request.query_params).true("itemCount")
    out = []
    for f in found:
        out.append(filter_json(f, await _item_count(request, who, f) if counting else None))
    return JSONResponse(out)


@router.get(
    "/filter/count",
    response_model=s.CountDto,
    responses=oa.errors(400),
    openapi_extra=oa.query(FILTER_FILTERS),
)
async def count(request: Request, who: Who) -> Response:
    q = _filter_query(request, who)
    return JSONResponse({"count": await run_in_threadpool(_engine(request).filters.count, q)})


@router.post("/filter/create", response_model=FilterOut, responses=oa.errors(400, 403))
async def create(body: CreateFilterDto, request: Request, who: Who) -> Response:
    """Save a filter: ``{"resourceType": "Task", "name", "owner", "query", "properties"}``;
    the new filter with its id."""
    owner = _owner_for(who, body.owner)
    query = _saved_query(body)
    saved = await run_in_threadpool(
        lambda: _engine(request).filters.create(body.name, owner, query, body.properties)
    )
    return JSONResponse(filter_json(saved))


@router.get(
    "/filter/{filter_id}",
    response_model=FilterOut,
    responses=oa.errors(404),
    openapi_extra=oa.query(ITEM_COUNT),
)
async def one(filter_id: str, request: Request, who: Who) -> Response:
    saved = await _visible_filter(request, who, filter_id)
    counting = Params.of_query(request.query_params).true("itemCount")
    return JSONResponse(
        filter_json(saved, await _item_count(request, who, saved) if counting else None)
    )


@router.put("/filter/{filter_id}", status_code=204, responses=oa.errors(400, 403, 404))
async def update(filter_id: str, body: CreateFilterDto, request: Request, who: Who) -> Response:
    """Replace the filter's name, owner, query and properties (its owner, or an admin)."""
    await _visible_filter(request, who, filter_id)
    owner = _owner_for(who, body.owner)
    query = _saved_query(body)
    await run_in_threadpool(
        lambda: _engine(request).filters.update(filter_id, body.name, owner, query, body.properties)
    )
    return Response(status_code=204)


@router.delete("/filter/{filter_id}", status_code=204, responses=oa.errors(403, 404))
async def delete(filter_id: str, request: Request, who: Who) -> Response:
    saved = await _visible_filter(request, who, filter_id)
    _owner_for(who, saved.owner)
    await run_in_threadpool(_engine(request).filters.delete, filter_id)
    return Response(status_code=204)


async def _run(
    request: Request, who: Principal, filter_id: str, extending: s.TaskQueryDto | None
) -> Any:
    saved = await _visible_filter(request, who, filter_id)
    merged = dict(saved.query)
    if extending is not None:
        # the request's names win over the saved ones (Camunda's extending query)
        merged.update(extending.model_dump(exclude_unset=True))
    return await visible_query(request, who, _run_params(merged, who))


async def _list(
    request: Request, who: Principal, filter_id: str, extending: s.TaskQueryDto | None
) -> Response:
    at = page(request.query_params)
    q = await _run(request, who, filter_id, extending)
    rows = await run_in_threadpool(
        lambda: _engine(request).queries.tasks(q, offset=at.offset, limit=at.limit)
    )
    return JSONResponse([task_dto(r).dump() for r in rows])


async def _count(
    request: Request, who: Principal, filter_id: str, extending: s.TaskQueryDto | None
) -> Response:
    q = await _run(request, who, filter_id, extending)
    return JSONResponse({"count": await run_in_threadpool(_engine(request).queries.count_tasks, q)})


LIST: dict[str, Any] = {"response_model": list[s.TaskDto], "responses": oa.errors(400, 404)}
COUNT: dict[str, Any] = {"response_model": s.CountDto, "responses": oa.errors(400, 404)}


@router.get("/filter/{filter_id}/list", **LIST, openapi_extra=oa.query(oa.PAGING))
async def run_list(filter_id: str, request: Request, who: Who) -> Response:
    """The tasks the filter's query lists for the caller."""
    return await _list(request, who, filter_id, None)


@router.post("/filter/{filter_id}/list", **LIST, openapi_extra=oa.query(oa.PAGING))
async def run_list_extended(
    filter_id: str,
    request: Request,
    who: Who,
    body: Annotated[s.TaskQueryDto | None, Body()] = None,
) -> Response:
    """The filter's query extended by the body's (the body's names win)."""
    return await _list(request, who, filter_id, body)


@router.get("/filter/{filter_id}/count", **COUNT)
async def run_count(filter_id: str, request: Request, who: Who) -> Response:
    return await _count(request, who, filter_id, None)


@router.post("/filter/{filter_id}/count", **COUNT)
async def run_count_extended(
    filter_id: str,
    request: Request,
    who: Who,
    body: Annotated[s.TaskQueryDto | None, Body()] = None,
) -> Response:
    return await _count(request, who, filter_id, body)


async def _single(
    request: Request, who: Principal, filter_id: str, extending: s.TaskQueryDto | None
) -> Response:
    """Camunda's single result: the one task, 204 for none, 400 for more than one."""
    q = await _run(request, who, filter_id, extending)
    engine = _engine(request)
    rows = await run_in_threadpool(lambda: engine.queries.tasks(q, offset=0, limit=2))
    if not rows:
        return Response(status_code=204)
    if len(rows) > 1:
        n = await run_in_threadpool(engine.queries.count_tasks, q)
        # Camunda's message, then the engine's reason it wraps (Query return N results...)
        raise bad_request(
            f"Filter does not returns a valid single result: query return {n} results"
            " instead of max 1"
        )
    return JSONResponse(task_dto(rows[0]).dump())


SINGLE: dict[str, Any] = {
    "response_model": s.TaskDto,
    "responses": {204: {"description": "The filter lists no task"}, **oa.errors(400, 404)},
}


@router.get("/filter/{filter_id}/singleResult", **SINGLE)
async def run_single(filter_id: str, request: Request, who: Who) -> Response:
    """The one task the filter's query lists for the caller: 204 when it lists none,
    400 when it lists more than one (as Camunda)."""
    return await _single(request, who, filter_id, None)


@router.post("/filter/{filter_id}/singleResult", **SINGLE)
async def run_single_extended(
    filter_id: str,
    request: Request,
    who: Who,
    body: Annotated[s.TaskQueryDto | None, Body()] = None,
) -> Response:
    """The filter's query extended by the body's (the body's names win), as one task."""
    return await _single(request, who, filter_id, body)
