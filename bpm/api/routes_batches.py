"""Batches over Camunda 7's REST (issue 22, item 5): ``/batch`` (running batches, their
statistics, suspend, delete), ``/history/batch`` and the operations that create one:
``/process-instance/delete``, ``/suspended-async``, ``/variables-async``,
``/modification-async`` (and ``/{id}/modification`` with ``async``), ``/job/retries``,
``/external-task/retries-async``. See :mod:`bpm.engine.batches` and ``docs/batches.md``.

Every bad body answers 400 and creates nothing; an unknown batch 404 in Camunda's shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from bpm.api import openapi as oa
from bpm.api import schemas_batches as s
from bpm.api.auth import Principal, principal
from bpm.api.camunda_params import Params, page
from bpm.api.errors import ApiError, bad_request
from bpm.api.routes_modification import instruction_of
from bpm.api.schemas import CountDto
from bpm.api.schemas_batches import batch_json, historic_json, statistics_json
from bpm.api.variables import from_camunda
from bpm.engine import Engine
from bpm.engine.batches import MAX_ITEMS, Batch
from bpm.engine.queries import IncidentQuery, InstanceQuery
from bpm.errors import NotFound
from bpm.runtime.states import IncidentState, InstanceState
from bpm.store.batches import BatchQuery

router = APIRouter()
Who = Annotated[Principal, Depends(principal)]

RUNNING = (InstanceState.ACTIVE, InstanceState.SUSPENDED, InstanceState.COMPENSATING)


def _engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


def _missing(batch_id: str, *, historic: bool = False) -> ApiError:
    what = "Historic batch" if historic else "Batch"
    return ApiError(404, "InvalidRequestException", f"{what} with id '{batch_id}' does not exist")


# -- running batches -------------------------------------------------------------------------
BATCH_FILTERS = (
    ("batchId", "string"), ("type", "string"), ("tenantIdIn", "list"),
    ("withoutTenantId", "boolean"), ("suspended", "boolean"),
)  # fmt: skip
BATCH_SORTS = ("batchId", "tenantId")
HISTORIC_FILTERS = (
    ("batchId", "string"), ("type", "string"), ("completed", "boolean"),
    ("tenantIdIn", "list"), ("withoutTenantId", "boolean"),
)  # fmt: skip
HISTORIC_SORTS = ("batchId", "startTime", "endTime", "tenantId")
_SORT_COLUMNS = {"batchId": "id", "startTime": "created_at", "endTime": "ended_at",
                 "tenantId": "id"}  # fmt: skip


def _query(request: Request, *, historic: bool) -> BatchQuery:
    p = Params.of_query(request.query_params)
    sorting = p.sorting(HISTORIC_SORTS if historic else BATCH_SORTS)
    tenants = p.texts("tenantIdIn")
    if tenants is not None and len(tenants) > 1:
        raise bad_request("tenantIdIn: give one tenant id")
    completed = p.flag("completed") if historic else None
    return BatchQuery(
        batch_id=p.text("batchId"),
        type=p.text("type"),
        suspended=None if historic else p.flag("suspended"),
        tenant_id=tenants[0] if tenants else None,
        without_tenant=p.true("withoutTenantId"),
        ended=completed if historic else False,
        ascending=sorting[0][1] if sorting else True,
        sort_by=_SORT_COLUMNS.get(sorting[0][0], "created_at") if sorting else "created_at",
    )


@router.get(
    "/batch",
    response_model=list[s.BatchDto],
    responses=oa.errors(400),
    openapi_extra=oa.query(BATCH_FILTERS, oa.PAGING, oa.sorting(BATCH_SORTS)),
)
async def batches(request: Request, who: Who) -> Response:
    """Running batches (active and suspended), oldest first; paged in SQL."""
    who.check_unrestricted("read batches")
    at = page(request.query_params)
    q = _query(request, historic=False)
    found = await run_in_threadpool(
        lambda: _engine(request).batches.query(q, offset=at.offset, limit=at.limit)
    )
    return JSONResponse([batch_json(b) for b in found])


@router.get(
    "/batch/count",
    response_model=CountDto,
    responses=oa.errors(400),
    openapi_extra=oa.query(BATCH_FILTERS),
)
async def count_batches(request: Request, who: Who) -> Response:
    who.check_unrestricted("read batches")
    q = _query(request, historic=False)
    return JSONResponse({"count": await run_in_threadpool(_engine(request).batches.count, q)})


@router.get(
    "/batch/statistics",
    response_model=list[s.BatchStatisticsDto],
    responses=oa.errors(400),
    openapi_extra=oa.query(BATCH_FILTERS, oa.PAGING, oa.sorting(BATCH_SORTS)),
)
async def batch_statistics(request: Request, who: Who) -> Response:
    """Running batches with their progress: remaining, completed and failed jobs (chunks)."""
    who.check_unrestricted("read batches")
    at = page(request.query_params)
    q = _query(request, historic=False)
    found = await run_in_threadpool(
        lambda: _engine(request).batches.statistics(q, offset=at.offset, limit=at.limit)
    )
    return JSONResponse([statistics_json(st) for st in found])


@router.get(
    "/batch/statistics/count",
    response_model=CountDto,
    responses=oa.errors(400),
    openapi_extra=oa.query(BATCH_FILTERS),
)
async def count_batch_statistics(request: Request, who: Who) -> Response:
    who.check_unrestricted("read batches")
    q = _query(request, historic=False)
    return JSONResponse({"count": await run_in_threadpool(_engine(request).batches.count, q)})


async def _running(request: Request, batch_id: str) -> Batch:
    try:
        found = await run_in_threadpool(_engine(request).batches.get, batch_id)
    except NotFound:
        raise _missing(batch_id) from None
    if found.ended_at is not None:
        raise _missing(batch_id)
    return found


@router.get("/batch/{batch_id}", response_model=s.BatchDto, responses=oa.errors(404))
async def batch(batch_id: str, request: Request, who: Who) -> Response:
    who.check_unrestricted("read batches")
    return JSONResponse(batch_json(await _running(request, batch_id)))


@router.get(
    "/batch/{batch_id}/failures",
    response_model=list[s.BatchFailureDto],
    responses=oa.errors(404),
)
async def batch_failures(batch_id: str, request: Request, who: Who) -> Response:
    """Not in Camunda: every item of a batch (running or ended) that failed, and why."""
    who.check_unrestricted("read batches")
    try:
        found = await run_in_threadpool(_engine(request).batches.failures, batch_id)
    except NotFound:
        raise _missing(batch_id) from None
    return JSONResponse(
        [s.BatchFailureDto(item=f.item, reason=f.reason, chunk=f.chunk).dump() for f in found]
    )


@router.put("/batch/{batch_id}/suspended", status_code=204, responses=oa.errors(400, 404))
async def suspend_batch(
    batch_id: str, body: s.SuspendedDto, request: Request, who: Who
) -> Response:
    """Suspend (no chunk is claimed) or activate a running batch."""
    who.check_unrestricted("suspend batches")
    await _running(request, batch_id)
    engine = _engine(request)
    call = engine.batches.suspend if body.suspended else engine.batches.resume
    try:
        await run_in_threadpool(lambda: call(batch_id, by=who.name))
    except NotFound:
        raise _missing(batch_id) from None
    return Response(status_code=204)


@router.delete(
    "/batch/{batch_id}",
    status_code=204,
    responses=oa.errors(400, 404),
    openapi_extra=oa.query((("cascade", "boolean"),)),
)
async def delete_batch(batch_id: str, request: Request, who: Who) -> Response:
    """Stop a running batch (its chunks not done are cancelled); ``cascade``: its history
    goes too."""
    who.check_unrestricted("delete batches")
    cascade = Params.of_query(request.query_params).true("cascade")
    await _running(request, batch_id)
    try:
        await run_in_threadpool(
            lambda: _engine(request).batches.delete(batch_id, cascade=cascade, by=who.name)
        )
    except NotFound:
        raise _missing(batch_id) from None
    return Response(status_code=204)


# -- history ---------------------------------------------------------------------------------
@router.get(
    "/history/batch",
    response_model=list[s.HistoricBatchDto],
    responses=oa.errors(400),
    openapi_extra=oa.query(HISTORIC_FILTERS, oa.PAGING, oa.sorting(HISTORIC_SORTS)),
)
async def historic_batches(request: Request, who: Who) -> Response:
    """Every batch, running and ended (``completed``: ended ones only, or running ones)."""
    who.check_unrestricted("read batches")
    at = page(request.query_params)
    q = _query(request, historic=True)
    found = await run_in_threadpool(
        lambda: _engine(request).batches.query(q, offset=at.offset, limit=at.limit)
    )
    return JSONResponse([historic_json(b) for b in found])


@router.get(
    "/history/batch/count",
    response_model=CountDto,
    responses=oa.errors(400),
    openapi_extra=oa.query(HISTORIC_FILTERS),
)
async def count_historic_batches(request: Request, who: Who) -> Response:
    who.check_unrestricted("read batches")
    q = _query(request, historic=True)
    return JSONResponse({"count": await run_in_threadpool(_engine(request).batches.count, q)})


@router.get(
    "/history/batch/{batch_id}", response_model=s.HistoricBatchDto, responses=oa.errors(404)
)
async def historic_batch(batch_id: str, request: Request, who: Who) -> Response:
    who.check_unrestricted("read batches")
    try:
        found = await run_in_threadpool(_engine(request).batches.get, batch_id)
    except NotFound:
        raise _missing(batch_id, historic=True) from None
    return JSONResponse(historic_json(found))


@router.delete("/history/batch/{batch_id}", status_code=204, responses=oa.errors(400, 404))
async def delete_historic_batch(batch_id: str, request: Request, who: Who) -> Response:
    """Delete an ended batch's history (a running one: 400, delete it first)."""
    who.check_unrestricted("delete batches")
    try:
        await run_in_threadpool(
            lambda: _engine(request).batches.delete_history(batch_id, by=who.name)
        )
    except NotFound:
        raise _missing(batch_id, historic=True) from None
    return Response(status_code=204)


# -- which instances -------------------------------------------------------------------------
def _instance_query(dto: s.ProcessInstanceQueryDto) -> InstanceQuery:
    states: tuple[InstanceState, ...] = RUNNING
    if dto.active:
        states = (InstanceState.ACTIVE, InstanceState.COMPENSATING)
    if dto.suspended:
        states = tuple(x for x in states if x is InstanceState.SUSPENDED)
    keys = (dto.processDefinitionKey,) if dto.processDefinitionKey else dto.processDefinitionKeyIn
    return InstanceQuery(
        instance_ids=tuple(dto.processInstanceIds) if dto.processInstanceIds else None,
        definition_id=dto.processDefinitionId,
        definition_keys=tuple(keys) if keys else None,
        business_key=dto.businessKey,
        business_key_like=dto.businessKeyLike,
        states=states,
        with_incidents=dto.withIncident,
        tenant_ids=tuple(dto.tenantIdIn) if dto.tenantIdIn else None,
        without_tenant=bool(dto.withoutTenantId),
    )


def _historic_query(dto: s.HistoricInstanceQueryDto) -> InstanceQuery:
    states: tuple[InstanceState, ...] | None = None
    if dto.unfinished:
        states = RUNNING
    if dto.finished:
        states = tuple(x for x in InstanceState if x not in RUNNING)
    return InstanceQuery(
        instance_ids=tuple(dto.processInstanceIds) if dto.processInstanceIds else None,
        definition_id=dto.processDefinitionId,
        definition_keys=(dto.processDefinitionKey,) if dto.processDefinitionKey else None,
        business_key=dto.processInstanceBusinessKey,
        states=states,
    )


def _matching(engine: Engine, q: InstanceQuery) -> list[str]:
    rows = engine.queries.historic_instances(q, offset=0, limit=MAX_ITEMS + 1)
    return [r.instance.id for r in rows]


def instance_ids(engine: Engine, dto: s.InstancesDto) -> list[str]:
    """The union of the ids and the queries' instances (runs in a worker thread); 400 when
    none is given, or more than a batch may hold."""
    given = [dto.processInstanceIds, dto.processInstanceQuery, dto.historicProcessInstanceQuery]
    if all(x is None for x in given):
        raise bad_request(
            "give processInstanceIds, processInstanceQuery or historicProcessInstanceQuery"
        )
    ids = list(dto.processInstanceIds or [])
    if dto.processInstanceQuery is not None:
        ids += _matching(engine, _instance_query(dto.processInstanceQuery))
    if dto.historicProcessInstanceQuery is not None:
        ids += _matching(engine, _historic_query(dto.historicProcessInstanceQuery))
    return _bounded(ids, "process instances")


def _bounded(ids: Sequence[str], what: str) -> list[str]:
    unique = list(dict.fromkeys(ids))
    if not unique:
        raise bad_request(f"no {what} match: a batch needs at least one")
    if len(unique) > MAX_ITEMS:
        raise bad_request(f"over {MAX_ITEMS} {what} in one batch; split it")
    return unique


async def _ids(request: Request, dto: s.InstancesDto) -> list[str]:
    return await run_in_threadpool(instance_ids, _engine(request), dto)


def _created(b: Batch) -> Response:
    return JSONResponse(batch_json(b))


# -- batch operations ------------------------------------------------------------------------
@router.post("/process-instance/delete", response_model=s.BatchDto, responses=oa.errors(400))
async def delete_instances(body: s.DeleteInstancesDto, request: Request, who: Who) -> Response:
    """Terminate many instances as a batch."""
    who.check_unrestricted("delete instances")
    ids = await _ids(request, body)
    created = await run_in_threadpool(
        lambda: _engine(request).batches.delete_instances(
            ids, reason=body.deleteReason, by=who.name
        )
    )
    return _created(created)


@router.post(
    "/process-instance/suspended-async", response_model=s.BatchDto, responses=oa.errors(400)
)
async def suspend_instances(body: s.SuspendInstancesDto, request: Request, who: Who) -> Response:
    """Suspend (or activate) many instances as a batch."""
    who.check_unrestricted("suspend instances")
    ids = await _ids(request, body)
    created = await run_in_threadpool(
        lambda: _engine(request).batches.suspend_instances(
            ids, suspended=body.suspended, by=who.name
        )
    )
    return _created(created)


@router.post(
    "/process-instance/variables-async", response_model=s.BatchDto, responses=oa.errors(400)
)
async def set_variables(body: s.SetVariablesDto, request: Request, who: Who) -> Response:
    """Set the same variables on many instances as a batch."""
    who.check_unrestricted("change variables")
    variables = from_camunda(body.variables) or {}
    if not variables:
        raise bad_request("variables: give at least one variable to set")
    ids = await _ids(request, body)
    created = await run_in_threadpool(
        lambda: _engine(request).batches.set_variables(ids, variables, by=who.name)
    )
    return _created(created)


def _instructions(dtos: Sequence[Any]) -> list[Any]:
    return [instruction_of(i, dto) for i, dto in enumerate(dtos)]


@router.post(
    "/process-instance/modification-async", response_model=s.BatchDto, responses=oa.errors(400)
)
async def modify_async(body: s.ModificationManyDto, request: Request, who: Who) -> Response:
    """The same modification of many instances, as a batch."""
    who.check_unrestricted("modify instances")
    instructions = _instructions(body.instructions)
    ids = await _ids(request, body)
    created = await run_in_threadpool(
        lambda: _engine(request).batches.modify(
            ids, instructions, skip_io_mappings=bool(body.skipIoMappings),
            annotation=body.annotation, by=who.name,
        )
    )  # fmt: skip
    return _created(created)


@router.post("/process-instance/modification", status_code=204, responses=oa.errors(400))
async def modify_many(body: s.ModificationManyDto, request: Request, who: Who) -> Response:
    """The same modification of many instances at once, in one transaction: the first
    instance it cannot be applied to answers 400 naming it, and nothing changes."""
    who.check_unrestricted("modify instances")
    instructions = _instructions(body.instructions)
    ids = await _ids(request, body)
    await run_in_threadpool(
        lambda: _engine(request).batches.modify_now(
            ids, instructions, skip_io_mappings=bool(body.skipIoMappings),
            annotation=body.annotation, by=who.name,
        )
    )  # fmt: skip
    return Response(status_code=204)


@router.post("/job/retries", response_model=s.BatchDto, responses=oa.errors(400))
async def job_retries(body: s.JobRetriesDto, request: Request, who: Who) -> Response:
    """Retry failed steps as a batch. A job is a failed step, named by its incident's id
    (``jobIds``), or every failed step of ``processInstances`` / a ``processInstanceQuery``."""
    who.check_unrestricted("retry steps")
    if body.retries < 1:
        raise bad_request("retries must be at least 1: a failed step is retried afresh")
    engine = _engine(request)

    def ids() -> list[str]:
        if (
            body.jobIds is None
            and body.processInstances is None
            and (body.processInstanceQuery is None)
        ):
            raise bad_request("give jobIds, processInstances or processInstanceQuery")
        found = list(body.jobIds or [])
        instances = list(body.processInstances or [])
        if body.processInstanceQuery is not None:
            instances += _matching(engine, _instance_query(body.processInstanceQuery))
        if instances:
            rows = engine.queries.incidents(
                IncidentQuery(instance_ids=tuple(dict.fromkeys(instances)),
                              states=(IncidentState.OPEN,)),
                offset=0, limit=MAX_ITEMS + 1,
            )  # fmt: skip
            found += [r.incident.id for r in rows]
        return _bounded(found, "failed steps")

    chosen = await run_in_threadpool(ids)
    created = await run_in_threadpool(
        lambda: engine.batches.retry_jobs(chosen, retries=body.retries, by=who.name)
    )
    return _created(created)


@router.post("/external-task/retries-async", response_model=s.BatchDto, responses=oa.errors(400))
async def external_task_retries(
    body: s.ExternalTaskRetriesDto, request: Request, who: Who
) -> Response:
    """Set the retries of many external tasks as a batch (by ids, or every open task of
    the given instances)."""
    who.check_unrestricted("set external task retries")
    engine = _engine(request)

    def ids() -> list[str]:
        given = [body.externalTaskIds, body.processInstanceIds, body.processInstanceQuery,
                 body.historicProcessInstanceQuery]  # fmt: skip
        if all(x is None for x in given):
            raise bad_request(
                "give externalTaskIds, processInstanceIds, processInstanceQuery or "
                "historicProcessInstanceQuery"
            )
        found = list(body.externalTaskIds or [])
        instances = list(body.processInstanceIds or [])
        if body.processInstanceQuery is not None:
            instances += _matching(engine, _instance_query(body.processInstanceQuery))
        if body.historicProcessInstanceQuery is not None:
            instances += _matching(engine, _historic_query(body.historicProcessInstanceQuery))
        for iid in dict.fromkeys(instances):
            found += [t.id for t in engine.external_tasks(instance_id=iid, limit=MAX_ITEMS)]
        return _bounded(found, "external tasks")

    chosen = await run_in_threadpool(ids)
    created = await run_in_threadpool(
        lambda: engine.batches.set_external_task_retries(chosen, body.retries, by=who.name)
    )
    return _created(created)
