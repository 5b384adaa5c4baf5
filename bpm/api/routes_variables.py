"""Variable endpoints of Camunda 7: ``/variable-instance`` (list, count, one) and the
variables of one process instance (modify and delete in one call, read/set/delete one).

A variable instance is one variable of one running instance; its id is
``processInstanceId:name``. Values are typed as Camunda writes them (see
:mod:`bpm.api.variables`); writes go through the unit of work with a history event.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from bpm.api import openapi as oa
from bpm.api import schemas as s
from bpm.api.auth import Principal, principal
from bpm.api.camunda_params import Params, page
from bpm.api.errors import ApiError
from bpm.api.variables import format_date, from_camunda, one_from_camunda, typed
from bpm.engine import Engine
from bpm.engine.queries import VariableQuery, VariableRow
from bpm.errors import NotFound
from bpm.runtime.records import Instance
from bpm.store.variable_queries import VARIABLE_SORTS

router = APIRouter()
Who = Annotated[Principal, Depends(principal)]

VARIABLE_FILTERS = (
    ("variableName", "string"), ("variableNameIn", "list"), ("variableNameLike", "string"),
    ("processInstanceIdIn", "list"), ("executionIdIn", "list"),
    ("activityInstanceIdIn", "list"), ("variableScopeIdIn", "list"), ("taskIdIn", "list"),
    ("processDefinitionId", "string"), ("variableValues", "conditions"),
    ("deserializeValues", "boolean"),
)  # fmt: skip
_UNSUPPORTED = (
    "caseInstanceIdIn", "caseExecutionIdIn", "batchIdIn", "tenantIdIn",
    "variableNamesIgnoreCase", "variableValuesIgnoreCase", "caseActivityIdIn",
    "includeDeleted",
)  # fmt: skip


def _engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


def _intersect(*groups: tuple[str, ...] | None) -> tuple[str, ...] | None:
    out: tuple[str, ...] | None = None
    for group in groups:
        if group is not None:
            out = group if out is None else tuple(x for x in out if x in group)
    return out


def variable_query(p: Params, *, history: bool) -> VariableQuery:
    """The filter of ``/variable-instance`` (running instances) or of
    ``/history/variable-instance`` (every instance)."""
    p.refuse(_UNSUPPORTED)
    name = p.text("variableName")
    names = p.texts("variableNameIn")
    if name is not None:
        names = _intersect((name,), names)
    single = p.text("processInstanceId")
    instances = _intersect(
        (single,) if single is not None else None,
        p.texts("processInstanceIdIn"),
        p.texts("executionIdIn"),
        p.texts("activityInstanceIdIn"),
        p.texts("variableScopeIdIn"),
    )
    if p.texts("taskIdIn") is not None:
        instances = ()  # no task has variables of its own: none match
    key = p.text("processDefinitionKey") if history else None
    return VariableQuery(
        running_only=not history,
        instance_ids=instances,
        names=names,
        name_like=p.text("variableNameLike"),
        definition_id=p.text("processDefinitionId"),
        definition_keys=(key,) if key is not None else p.texts("processDefinitionKeyIn"),
        values=p.conditions("variableValues"),
        sorting=p.sorting(VARIABLE_SORTS),
    )


def deserialize_values(request: Request) -> bool:
    flag = Params.of_query(request.query_params).flag("deserializeValues")
    return True if flag is None else flag


def variable_dto(row: VariableRow, deserialize: bool) -> s.VariableInstanceDto:
    shown = typed(row.value, deserialize, row.type_name)
    return s.VariableInstanceDto(
        id=f"{row.instance_id}:{row.name}",
        name=row.name,
        type=shown["type"],
        value=shown["value"],
        valueInfo=shown["valueInfo"],
        processDefinitionId=row.definition_id,
        processInstanceId=row.instance_id,
        executionId=row.instance_id,
        activityInstanceId=row.instance_id,
    )


def historic_variable_dto(row: VariableRow, deserialize: bool) -> s.HistoricVariableInstanceDto:
    base = variable_dto(row, deserialize).model_dump()
    return s.HistoricVariableInstanceDto(
        **base,
        processDefinitionKey=row.definition_key,
        createTime=format_date(row.created_at) or "",
        rootProcessInstanceId=row.instance_id,
    )


async def _list(request: Request, who: Principal, p: Params) -> Response:
    who.check_unrestricted("read variables")
    at = page(request.query_params)
    q = variable_query(p, history=False)
    deserialize = deserialize_values(request)
    rows = await run_in_threadpool(
        lambda: _engine(request).queries.variables(q, offset=at.offset, limit=at.limit)
    )
    return JSONResponse([variable_dto(r, deserialize).dump() for r in rows])


async def _count(request: Request, who: Principal, p: Params) -> Response:
    who.check_unrestricted("read variables")
    q = variable_query(p, history=False)
    n = await run_in_threadpool(lambda: _engine(request).queries.count_variables(q))
    return JSONResponse({"count": n})


def raw(body: Any) -> dict[str, Any]:
    return {} if body is None else dict(body.model_dump(exclude_unset=True))


LIST: dict[str, Any] = {
    "response_model": list[s.VariableInstanceDto],
    "responses": oa.errors(400),
}
COUNT: dict[str, Any] = {"response_model": s.CountDto, "responses": oa.errors(400)}
Filter = Annotated[s.VariableQueryDto | None, Body()]


@router.get(
    "/variable-instance",
    **LIST,
    openapi_extra=oa.query(VARIABLE_FILTERS, oa.PAGING, oa.sorting(VARIABLE_SORTS)),
)
async def variable_instances(request: Request, who: Who) -> Response:
    """Variables of running instances, by instance start time and name."""
    return await _list(request, who, Params.of_query(request.query_params))


@router.post(
    "/variable-instance",
    **LIST,
    openapi_extra=oa.query(oa.PAGING, [("deserializeValues", "boolean")]),
)
async def variable_instances_by_body(request: Request, who: Who, body: Filter = None) -> Response:
    return await _list(request, who, Params.of_body(raw(body)))


@router.get("/variable-instance/count", **COUNT, openapi_extra=oa.query(VARIABLE_FILTERS))
async def count(request: Request, who: Who) -> Response:
    return await _count(request, who, Params.of_query(request.query_params))


@router.post("/variable-instance/count", **COUNT)
async def count_by_body(request: Request, who: Who, body: Filter = None) -> Response:
    return await _count(request, who, Params.of_body(raw(body)))


@router.get(
    "/variable-instance/{variable_id}",
    response_model=s.VariableInstanceDto,
    responses=oa.errors(400, 404),
    openapi_extra=oa.query([("deserializeValue", "boolean")]),
)
async def variable_instance(variable_id: str, request: Request, who: Who) -> Response:
    who.check_unrestricted("read variables")
    instance_id, _, name = variable_id.partition(":")
    q = VariableQuery(instance_ids=(instance_id,), names=(name,))
    rows = await run_in_threadpool(lambda: _engine(request).queries.variables(q, limit=1))
    if not rows or not name:
        raise ApiError(
            404,
            "InvalidRequestException",
            f"Variable instance with Id '{variable_id}' does not exist.",
        )
    flag = Params.of_query(request.query_params).flag("deserializeValue")
    return JSONResponse(variable_dto(rows[0], flag is not False).dump())


# -- the variables of one process instance ----------------------------------------------------


async def _running(request: Request, instance_id: str) -> Instance:
    try:
        inst = await run_in_threadpool(_engine(request).get_instance, instance_id)
    except NotFound:
        inst = None
    if inst is None or inst.ended:
        raise ApiError(
            404, "InvalidRequestException", f"Process instance with id {instance_id} does not exist"
        )
    return inst


@router.post(
    "/process-instance/{instance_id}/variables", status_code=204, responses=oa.errors(400, 404)
)
async def modify(
    instance_id: str, body: s.PatchVariablesDto, request: Request, who: Who
) -> Response:
    """``modifications`` (typed values) and ``deletions`` (names), one transaction; a name
    in both ends deleted."""
    who.check_unrestricted("change variables")
    changes = from_camunda(body.modifications, "modifications") or {}
    deletions = list(body.deletions or [])
    await _running(request, instance_id)
    await run_in_threadpool(
        lambda: _engine(request).modify_variables(instance_id, changes, deletions, by=who.name)
    )
    return Response(status_code=204)


@router.get(
    "/process-instance/{instance_id}/variables/{name}",
    response_model=s.VariableValueDto,
    responses=oa.errors(400, 404),
    openapi_extra=oa.query([("deserializeValue", "boolean")]),
)
async def get_one(instance_id: str, name: str, request: Request, who: Who) -> Response:
    who.check_unrestricted("read variables")
    inst = await _running(request, instance_id)
    if name not in inst.variables:
        raise ApiError(
            404,
            "InvalidRequestException",
            f"process instance variable with name {name} does not exist",
        )
    flag = Params.of_query(request.query_params).flag("deserializeValue")
    value = typed(inst.variables[name], flag is not False, inst.variable_types.get(name))
    return JSONResponse(value)


@router.put(
    "/process-instance/{instance_id}/variables/{name}",
    status_code=204,
    responses=oa.errors(400, 404),
)
async def put_one(
    instance_id: str, name: str, body: s.VariableValueInDto, request: Request, who: Who
) -> Response:
    who.check_unrestricted("change variables")
    value = one_from_camunda(name, body.model_dump())
    await _running(request, instance_id)
    await run_in_threadpool(
        lambda: _engine(request).modify_variables(instance_id, {name: value}, by=who.name)
    )
    return Response(status_code=204)


@router.delete(
    "/process-instance/{instance_id}/variables/{name}",
    status_code=204,
    responses=oa.errors(400, 404),
)
async def delete_one(instance_id: str, name: str, request: Request, who: Who) -> Response:
    who.check_unrestricted("change variables")
    await _running(request, instance_id)
    await run_in_threadpool(
        lambda: _engine(request).modify_variables(instance_id, {}, [name], by=who.name)
    )
    return Response(status_code=204)
