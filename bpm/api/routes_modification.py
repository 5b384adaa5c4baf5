"""The activity instance tree and process instance modification over Camunda 7's REST
(issue 22): ``GET /process-instance/{id}/activity-instances``, ``POST
/process-instance/{id}/modification`` (see :mod:`bpm.engine.modification`) and the log of
what operators did, ``GET /history/user-operation``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from bpm.api import openapi as oa
from bpm.api import schemas_modification as s
from bpm.api.auth import Principal, principal
from bpm.api.camunda_params import Params, page
from bpm.api.errors import ApiError, bad_request
from bpm.api.schemas import CountDto
from bpm.api.schemas_batches import BatchDto, batch_json
from bpm.api.variables import format_date, from_camunda
from bpm.engine import ActivityInstance, Engine, TransitionInstance
from bpm.engine.modification import (
    Cancel,
    Instruction,
    StartAfter,
    StartBefore,
    StartTransition,
)
from bpm.errors import NotFound
from bpm.store.operation_log import OperationLogEntry, OperationLogQuery

router = APIRouter()
Who = Annotated[Principal, Depends(principal)]


def _engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


def _missing(instance_id: str) -> ApiError:
    return ApiError(
        404, "InvalidRequestException", f"Process instance with id {instance_id} does not exist"
    )


def transition_dto(t: TransitionInstance) -> s.TransitionInstanceDto:
    return s.TransitionInstanceDto(
        id=t.id,
        parentActivityInstanceId=t.parent_activity_instance_id,
        activityId=t.activity_id,
        activityName=t.activity_name,
        activityType=t.activity_type,
        processInstanceId=t.process_instance_id,
        processDefinitionId=t.process_definition_id,
        executionId=t.execution_id,
        targetActivityId=t.activity_id,
        incidentIds=list(t.incident_ids),
        incidents=[
            s.ActivityInstanceIncidentDto(
                id=i.id, parentActivityInstanceId=i.parent_activity_instance_id
            )
            for i in t.incidents
        ],
    )


def activity_dto(a: ActivityInstance) -> s.ActivityInstanceDto:
    return s.ActivityInstanceDto(
        id=a.id,
        parentActivityInstanceId=a.parent_activity_instance_id,
        activityId=a.activity_id,
        activityType=a.activity_type,
        processInstanceId=a.process_instance_id,
        processDefinitionId=a.process_definition_id,
        childActivityInstances=[activity_dto(c) for c in a.child_activity_instances],
        childTransitionInstances=[transition_dto(t) for t in a.child_transition_instances],
        executionIds=list(a.execution_ids),
        activityName=a.activity_name,
        name=a.activity_name,
        incidentIds=list(a.incident_ids),
        incidents=[
            s.ActivityInstanceIncidentDto(
                id=i.id, parentActivityInstanceId=i.parent_activity_instance_id
            )
            for i in a.incidents
        ],
    )


@router.get(
    "/process-instance/{instance_id}/activity-instances",
    response_model=s.ActivityInstanceDto,
    responses=oa.errors(404),
)
async def activity_instances(instance_id: str, request: Request, who: Who) -> Response:
    """The activity instance tree of a running instance (404 once it ended, as Camunda)."""
    who.check_unrestricted("read instances")
    try:
        tree = await run_in_threadpool(_engine(request).activity_instances, instance_id)
    except NotFound:
        raise _missing(instance_id) from None
    inst = await run_in_threadpool(_engine(request).get_instance, instance_id)
    if inst.ended:
        raise _missing(instance_id)
    return JSONResponse(activity_dto(tree).model_dump(mode="json"))


def _variables(
    given: dict[str, Any] | None, where: str
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(variables, local variables) of an instruction's ``TriggerVariableValueDto`` map."""
    if not given:
        return None, None
    shared: dict[str, Any] = {}
    local: dict[str, Any] = {}
    for name, entry in given.items():
        if not isinstance(entry, dict):
            raise bad_request(f"{where}: variable '{name}' must be a typed value object")
        value = dict(entry)
        flag = value.pop("local", False)
        if flag is not None and not isinstance(flag, bool):
            raise bad_request(f"{where}: 'local' of variable '{name}' must be true or false")
        (local if flag else shared)[name] = value
    return from_camunda(shared, f"{where} variables"), from_camunda(local, f"{where} variables")


def instruction_of(index: int, dto: s.ModificationInstructionDto) -> Instruction:
    """One REST instruction as the engine's; 400 naming it when a field it needs is missing."""
    where = f"instruction {index} ({dto.type})"
    if dto.type == "cancel":
        ids = [dto.activityId, dto.activityInstanceId, dto.transitionInstanceId]
        if sum(x is not None for x in ids) != 1:
            raise bad_request(
                f"{where}: give exactly one of activityId, activityInstanceId and "
                "transitionInstanceId"
            )
        return Cancel(
            activity_id=dto.activityId,
            activity_instance_id=dto.activityInstanceId,
            transition_instance_id=dto.transitionInstanceId,
            current_only=bool(dto.cancelCurrentActiveActivityInstances),
        )
    shared, local = _variables(dto.variables, where)
    if dto.type == "startTransition":
        if not dto.transitionId:
            raise bad_request(f"{where}: transitionId is required")
        return StartTransition(dto.transitionId, shared, local, dto.ancestorActivityInstanceId)
    if not dto.activityId:
        raise bad_request(f"{where}: activityId is required")
    kind = StartAfter if dto.type == "startAfterActivity" else StartBefore
    return kind(dto.activityId, shared, local, dto.ancestorActivityInstanceId)


@router.post(
    "/process-instance/{instance_id}/modification",
    status_code=204,
    responses={200: {"model": BatchDto, "description": "async: the batch"}, **oa.errors(400, 404)},
)
async def modify(instance_id: str, body: s.ModificationDto, request: Request, who: Who) -> Response:
    """Start and cancel activities in one transaction; a bad instruction answers 400
    naming it and changes nothing. With ``async: true``: a batch of one (200, the batch),
    applied by a worker."""
    who.check_unrestricted("modify instances")
    engine = _engine(request)
    try:
        inst = await run_in_threadpool(engine.get_instance, instance_id)
    except NotFound:
        raise _missing(instance_id) from None
    if inst.ended:
        raise _missing(instance_id)
    instructions = [instruction_of(i, dto) for i, dto in enumerate(body.instructions)]
    if body.async_:
        created = await run_in_threadpool(
            lambda: engine.batches.modify(
                [instance_id], instructions, skip_io_mappings=bool(body.skipIoMappings),
                annotation=body.annotation, by=who.name,
            )
        )  # fmt: skip
        return JSONResponse(batch_json(created))
    await run_in_threadpool(
        lambda: engine.modify(
            instance_id,
            instructions,
            skip_io_mappings=bool(body.skipIoMappings),
            annotation=body.annotation,
            by=who.name,
        )
    )
    return Response(status_code=204)


# -- the operation log ----------------------------------------------------------------------

USER_OPERATION_FILTERS = (
    ("processInstanceId", "string"), ("processDefinitionId", "string"),
    ("processDefinitionKey", "string"), ("operationType", "string"), ("entityType", "string"),
    ("userId", "string"), ("category", "string"), ("afterTimestamp", "date"),
    ("beforeTimestamp", "date"), ("batchId", "string"),
)  # fmt: skip
USER_OPERATION_SORTS = ("timestamp",)


def _log_query(request: Request) -> OperationLogQuery:
    p = Params.of_query(request.query_params)
    sorting = p.sorting(USER_OPERATION_SORTS)
    return OperationLogQuery(
        instance_id=p.text("processInstanceId"),
        definition_id=p.text("processDefinitionId"),
        definition_key=p.text("processDefinitionKey"),
        operation_type=p.text("operationType"),
        entity_type=p.text("entityType"),
        user_id=p.text("userId"),
        category=p.text("category"),
        batch_id=p.text("batchId"),
        after=p.date("afterTimestamp"),
        before=p.date("beforeTimestamp"),
        ascending=sorting[0][1] if sorting else True,
    )


def user_operation_dto(e: OperationLogEntry) -> s.UserOperationLogEntryDto:
    return s.UserOperationLogEntryDto(
        id=e.id,
        processDefinitionId=e.definition_id,
        processDefinitionKey=e.definition_key,
        processInstanceId=e.instance_id,
        userId=e.user_id,
        timestamp=format_date(e.at) or "",
        operationId=e.operation_id,
        operationType=e.operation_type,
        entityType=e.entity_type,
        property=e.property,
        orgValue=e.org_value,
        newValue=e.new_value,
        rootProcessInstanceId=e.instance_id,
        batchId=e.batch_id,
        category=e.category,
        annotation=e.annotation,
    )


@router.get(
    "/history/user-operation",
    response_model=list[s.UserOperationLogEntryDto],
    responses=oa.errors(400),
    openapi_extra=oa.query(USER_OPERATION_FILTERS, oa.PAGING, oa.sorting(USER_OPERATION_SORTS)),
)
async def user_operations(request: Request, who: Who) -> Response:
    """What operators did (modifications, batches, variable changes, suspensions,
    retries, terminations, unlocks), oldest first; paged in SQL."""
    who.check_unrestricted("read the operation log")
    at = page(request.query_params)
    q = _log_query(request)
    found = await run_in_threadpool(
        lambda: _engine(request).operation_log(q, offset=at.offset, limit=at.limit)
    )
    return JSONResponse([user_operation_dto(e).model_dump(mode="json") for e in found])


@router.get(
    "/history/user-operation/count",
    response_model=CountDto,
    responses=oa.errors(400),
    openapi_extra=oa.query(USER_OPERATION_FILTERS),
)
async def count_user_operations(request: Request, who: Who) -> Response:
    who.check_unrestricted("read the operation log")
    q = _log_query(request)
    n = await run_in_threadpool(lambda: _engine(request).count_operation_log(q))
    return JSONResponse({"count": n})
