"""Process instance migration over Camunda 7's REST (issue 22, items 3 and 4):
``POST /migration/generate``, ``/migration/validate`` (with instances: the dry run),
``/migration/execute`` and ``/migration/executeAsync`` (a batch; see
:mod:`bpm.engine.migration`)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from bpm.api import schemas_migration as s
from bpm.api.auth import Principal, principal
from bpm.api.errors import ApiError, bad_request
from bpm.api.schemas_batches import BatchDto, batch_json
from bpm.api.variables import from_camunda, to_camunda
from bpm.engine import Engine
from bpm.engine.migration import InstanceReport, MigrationError
from bpm.engine.migration_plan import (
    MigrationInstruction,
    MigrationPlan,
    MigrationPlanError,
    PlanReport,
)
from bpm.store.migration import InstanceSelection

router = APIRouter()
Who = Annotated[Principal, Depends(principal)]

_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": s.MigrationErrorDto, "description": "Camunda error (with its report)"},
    401: {"model": s.MigrationErrorDto, "description": "Camunda error"},
    403: {"model": s.MigrationErrorDto, "description": "Camunda error"},
}


def _engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


def plan_of(dto: s.MigrationPlanDto) -> MigrationPlan:
    """A REST plan as the engine's (its typed variables made plain)."""
    return MigrationPlan(
        dto.sourceProcessDefinitionId,
        dto.targetProcessDefinitionId,
        tuple(
            MigrationInstruction(
                i.sourceActivityIds[0], i.targetActivityIds[0], bool(i.updateEventTrigger)
            )
            for i in dto.instructions or ()
        ),
        from_camunda(dto.variables, "migration plan variables") or {},
    )


def plan_dto(plan: MigrationPlan) -> dict[str, Any]:
    out = plan.to_camunda()
    out["variables"] = to_camunda(plan.variables) if plan.variables else None
    return out


def report_dto(report: PlanReport) -> dict[str, Any]:
    return {
        "instructionReports": [
            {"instruction": r.instruction.to_camunda(), "failures": list(r.failures)}
            for r in report.instruction_reports
        ],
        "variableReports": {
            r.name: {**to_camunda({r.name: r.value})[r.name], "failures": list(r.failures)}
            for r in report.variable_reports
        },
    }


def instance_dto(r: InstanceReport) -> dict[str, Any]:
    return {
        "processInstanceId": r.instance_id,
        "canMigrate": r.can_migrate,
        "failures": list(r.failures),
        "activityIds": list(r.activities),
        "waits": [{"activityId": w.activity_id, "kind": w.kind, "id": w.id} for w in r.waits],
    }


def _validation_report(r: InstanceReport) -> dict[str, Any]:
    return {
        "processInstanceId": r.instance_id,
        "failures": list(r.failures),
        "activityInstanceValidationReports": [],
        "transitionInstanceValidationReports": [],
    }


def selection_of(dto: s.InstanceQueryDto | None) -> InstanceSelection | None:
    """Camunda's ``processInstanceQuery``, with only the filters the engine knows."""
    if dto is None:
        return None
    unknown = sorted(set(dto.model_extra or {}))
    if unknown:
        raise bad_request(
            f"processInstanceQuery: filter {', '.join(unknown)} is not supported by migration "
            "(use processInstanceIds, processDefinitionId, processDefinitionKey, businessKey, "
            "active, suspended)"
        )
    return InstanceSelection(
        instance_ids=tuple(dto.processInstanceIds) if dto.processInstanceIds is not None else None,
        definition_id=dto.processDefinitionId,
        definition_key=dto.processDefinitionKey,
        business_key=dto.businessKey,
        active=bool(dto.active),
        suspended=bool(dto.suspended),
    )


def refused(exc: MigrationPlanError | MigrationError) -> ApiError:
    """A refused plan or instance, in Camunda's shape with its report."""
    if isinstance(exc, MigrationPlanError):
        return ApiError(
            400,
            "MigrationPlanValidationException",
            str(exc),
            extra={"validationReport": report_dto(exc.report)},
        )
    return ApiError(
        400,
        "MigratingProcessInstanceValidationException",
        str(exc),
        extra={
            "validationReport": _validation_report(exc.reports[0]),
            "instanceReports": [_validation_report(r) for r in exc.reports],
        },
    )


@router.post(
    "/migration/generate",
    response_model=s.MigrationPlanOutDto,
    responses=_ERRORS,
)
async def generate(body: s.MigrationPlanGenerationDto, request: Request, who: Who) -> Response:
    """A plan mapping every activity with the same id and kind (and the same place) in
    both definitions; ``updateEventTriggers`` sets ``updateEventTrigger`` on events."""
    who.check_unrestricted("migrate instances")
    variables = from_camunda(body.variables, "variables")
    plan = await run_in_threadpool(
        lambda: _engine(request).migration.generate(
            body.sourceProcessDefinitionId,
            body.targetProcessDefinitionId,
            update_event_triggers=bool(body.updateEventTriggers),
            variables=variables,
        )
    )
    return JSONResponse(plan_dto(plan))


@router.post(
    "/migration/validate",
    response_model=s.MigrationPlanReportDto,
    responses=_ERRORS,
)
async def validate(body: s.MigrationValidationDto, request: Request, who: Who) -> Response:
    """The plan's report (Camunda's). With ``migrationPlan`` and ``processInstanceIds`` or
    a ``processInstanceQuery``, the dry run: the plan runs on each instance in a
    transaction that is rolled back, and ``instanceReports`` says for each whether it can
    migrate, where its tokens would stand and what it would wait for, or what stops it."""
    who.check_unrestricted("migrate instances")
    engine = _engine(request)
    if body.migrationPlan is None:
        if body.processInstanceIds is not None or body.processInstanceQuery is not None:
            raise bad_request("a dry run gives the plan as migrationPlan beside the instances")
        if not body.sourceProcessDefinitionId or not body.targetProcessDefinitionId:
            raise bad_request(
                "sourceProcessDefinitionId and targetProcessDefinitionId are required"
            )
        plan = plan_of(
            s.MigrationPlanDto(
                sourceProcessDefinitionId=body.sourceProcessDefinitionId,
                targetProcessDefinitionId=body.targetProcessDefinitionId,
                instructions=body.instructions,
                variables=body.variables,
            )
        )
        report = await run_in_threadpool(lambda: engine.migration.validate(plan))
        return JSONResponse(report_dto(report))
    plan = plan_of(body.migrationPlan)
    query = selection_of(body.processInstanceQuery)
    ids = body.processInstanceIds
    if ids is None and query is None:
        raise bad_request("a dry run needs processInstanceIds or a processInstanceQuery")
    report, instances = await run_in_threadpool(lambda: engine.migration.dry_run(plan, ids, query))
    out = report_dto(report)
    out["instanceReports"] = [instance_dto(r) for r in instances]
    return JSONResponse(out)


@router.post("/migration/execute", status_code=204, responses=_ERRORS)
async def execute(body: s.MigrationExecutionDto, request: Request, who: Who) -> Response:
    """Migrate every chosen instance in one transaction, or none: a bad plan answers 400
    ``MigrationPlanValidationException``, an instance that cannot migrate 400
    ``MigratingProcessInstanceValidationException``, each with its report."""
    who.check_unrestricted("migrate instances")
    plan = plan_of(body.migrationPlan)
    query = selection_of(body.processInstanceQuery)
    engine = _engine(request)
    try:
        await run_in_threadpool(
            lambda: engine.migration.execute(
                plan,
                body.processInstanceIds,
                query,
                skip_custom_listeners=bool(body.skipCustomListeners),
                skip_io_mappings=bool(body.skipIoMappings),
                by=who.name,
                annotation=body.annotation,
            )
        )
    except (MigrationPlanError, MigrationError) as exc:
        raise refused(exc) from None
    return Response(status_code=204)


@router.post("/migration/executeAsync", response_model=BatchDto, responses=_ERRORS)
async def execute_async(body: s.MigrationAsyncDto, request: Request, who: Who) -> Response:
    """Migrate the chosen instances as a batch (Camunda's ``instance-migration``): a bad
    plan answers 400 ``MigrationPlanValidationException`` and creates nothing; the workers
    then migrate the instances in chunks, each alone (one that cannot migrate is a failed
    item with its reason, ``/batch/{id}/failures``). Answers Camunda's ``BatchDto``."""
    who.check_unrestricted("migrate instances")
    plan = plan_of(body.migrationPlan)
    query = selection_of(body.processInstanceQuery)
    engine = _engine(request)
    try:
        batch = await run_in_threadpool(
            lambda: engine.migration.execute_async(
                plan, body.processInstanceIds, query, by=who.name, annotation=body.annotation
            )
        )
    except MigrationPlanError as exc:
        raise refused(exc) from None
    return JSONResponse(batch_json(batch))
