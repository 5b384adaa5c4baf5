"""The JSON shapes of process instance migration (Camunda 7's ``MigrationPlanDto``,
``MigrationPlanGenerationDto``, ``MigrationExecutionDto``, ``MigrationPlanReportDto``;
issue 22), and the dry run's report per instance (not in Camunda)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import ConfigDict, Field

from bpm.api.documented import NO_NUL, Variables
from bpm.api.schemas import Dto, RequestDto
from bpm.api.schemas_modification import MAX_ANNOTATION, MAX_ID
from bpm.engine.batches import MAX_ITEMS as MAX_BATCH_ITEMS
from bpm.engine.migration import MAX_SYNC_INSTANCES
from bpm.engine.migration_plan import MAX_INSTRUCTIONS

_Id = Field(min_length=1, max_length=MAX_ID, pattern=NO_NUL)
IdText = Annotated[str, Field(min_length=1, max_length=MAX_ID, pattern=NO_NUL)]


class MigrationInstructionDto(RequestDto):
    """One instruction: one source activity to one target activity."""

    sourceActivityIds: list[IdText] = Field(min_length=1, max_length=1)
    targetActivityIds: list[IdText] = Field(min_length=1, max_length=1)
    updateEventTrigger: bool | None = None


class MigrationPlanDto(RequestDto):
    """Camunda's ``MigrationPlanDto`` (``variables``: typed values set on every instance)."""

    sourceProcessDefinitionId: str = _Id
    targetProcessDefinitionId: str = _Id
    instructions: list[MigrationInstructionDto] | None = Field(None, max_length=MAX_INSTRUCTIONS)
    variables: Variables = None


class MigrationPlanGenerationDto(RequestDto):
    """Camunda's ``MigrationPlanGenerationDto``."""

    sourceProcessDefinitionId: str = _Id
    targetProcessDefinitionId: str = _Id
    updateEventTriggers: bool | None = None
    variables: Variables = None


class InstanceQueryDto(RequestDto):
    """The filters of ``processInstanceQuery`` a migration understands (every one given:
    AND; running instances only). Any other filter is refused, so that a filter the engine
    does not know never widens the choice."""

    model_config = ConfigDict(extra="forbid")

    processInstanceIds: list[IdText] | None = Field(None, max_length=MAX_SYNC_INSTANCES)
    processDefinitionId: str | None = Field(None, max_length=MAX_ID)
    processDefinitionKey: str | None = Field(None, max_length=MAX_ID)
    businessKey: str | None = Field(None, max_length=MAX_ID)
    active: bool | None = None
    suspended: bool | None = None


class MigrationExecutionDto(RequestDto):
    """Camunda's ``MigrationExecutionDto`` (``annotation``: ours, for the operation log)."""

    migrationPlan: MigrationPlanDto
    processInstanceIds: list[IdText] | None = Field(None, max_length=MAX_SYNC_INSTANCES)
    processInstanceQuery: InstanceQueryDto | None = None
    skipCustomListeners: bool | None = None
    skipIoMappings: bool | None = None
    annotation: str | None = Field(None, max_length=MAX_ANNOTATION, pattern=NO_NUL)


def _not_null(prop: dict[str, Any]) -> dict[str, Any]:
    """A property's schema without its ``null`` branch (and default)."""
    out = {k: v for k, v in prop.items() if k != "default"}
    branches = [b for b in out.pop("anyOf", []) if b != {"type": "null"}]
    if len(branches) == 1:
        out.update(branches[0])
    elif branches:
        out["anyOf"] = branches
    return out


def _validation_schema(schema: dict[str, Any]) -> None:
    """Either a plan, or a plan beside the instances to try it on (the dry run)."""
    props = {k: dict(v) for k, v in schema["properties"].items()}
    for required in ("sourceProcessDefinitionId", "targetProcessDefinitionId", "migrationPlan"):
        props[required] = _not_null(props[required])
    plan = ("sourceProcessDefinitionId", "targetProcessDefinitionId", "instructions", "variables")
    schema.clear()
    schema["anyOf"] = [
        {
            "type": "object",
            "properties": {k: props[k] for k in plan},
            "required": list(plan[:2]),
            "additionalProperties": False,
        },
        *(
            {
                "type": "object",
                "properties": {
                    "migrationPlan": props["migrationPlan"],
                    chosen: {**_not_null(props[chosen]), **extra},
                },
                "required": ["migrationPlan", chosen],
                "additionalProperties": False,
            }
            for chosen, extra in (
                ("processInstanceIds", {"minItems": 1}),
                ("processInstanceQuery", {}),
            )
        ),
    ]


class MigrationAsyncDto(MigrationExecutionDto):
    """``/migration/executeAsync``: as ``/migration/execute``, as many instances as a batch
    holds."""

    processInstanceIds: list[IdText] | None = Field(None, max_length=MAX_BATCH_ITEMS)


class MigrationValidationDto(RequestDto):
    """What ``/migration/validate`` takes: a plan (Camunda's body), or, for the dry run,
    ``{"migrationPlan": plan, "processInstanceIds" or "processInstanceQuery"}``."""

    model_config = ConfigDict(extra="allow", json_schema_extra=_validation_schema)

    sourceProcessDefinitionId: IdText | None = None
    targetProcessDefinitionId: IdText | None = None
    instructions: list[MigrationInstructionDto] | None = Field(None, max_length=MAX_INSTRUCTIONS)
    variables: Variables = None
    migrationPlan: MigrationPlanDto | None = None
    processInstanceIds: list[IdText] | None = Field(None, max_length=MAX_SYNC_INSTANCES)
    processInstanceQuery: InstanceQueryDto | None = None


class InstructionOutDto(Dto):
    sourceActivityIds: list[str]
    targetActivityIds: list[str]
    updateEventTrigger: bool


class MigrationPlanOutDto(Dto):
    """A generated plan (Camunda's ``MigrationPlanDto``)."""

    sourceProcessDefinitionId: str
    targetProcessDefinitionId: str
    instructions: list[InstructionOutDto]
    variables: dict[str, Any] | None = None


class InstructionReportDto(Dto):
    instruction: InstructionOutDto
    failures: list[str]


class VariableReportDto(Dto):
    type: str | None = None
    value: Any = None
    valueInfo: dict[str, Any] = Field(default_factory=dict)
    failures: list[str]


class WaitDto(Dto):
    """Something the instance would wait for: ``kind`` is user_task, external_task, timer,
    message, signal, join, scope..."""

    activityId: str
    kind: str
    id: str


class InstanceReportDto(Dto):
    """The dry run of one instance (not in Camunda)."""

    processInstanceId: str
    canMigrate: bool
    failures: list[str]
    activityIds: list[str] = Field(description="Where its tokens would stand afterwards")
    waits: list[WaitDto]


class MigrationPlanReportDto(Dto):
    """Camunda's ``MigrationPlanReportDto``; ``instanceReports`` only for a dry run."""

    instructionReports: list[InstructionReportDto]
    variableReports: dict[str, VariableReportDto]
    instanceReports: list[InstanceReportDto] | None = None


class InstanceValidationReportDto(Dto):
    """Camunda's ``MigratingProcessInstanceValidationReportDto``."""

    processInstanceId: str
    failures: list[str]
    activityInstanceValidationReports: list[dict[str, Any]]
    transitionInstanceValidationReports: list[dict[str, Any]]


class MigrationErrorDto(Dto):
    """A refused migration: ``validationReport`` is the plan's report
    (``MigrationPlanValidationException``) or the first instance's
    (``MigratingProcessInstanceValidationException``; ``instanceReports``: all of them)."""

    type: str
    message: str
    code: int | None = None
    validationReport: dict[str, Any] | None = None
    instanceReports: list[InstanceValidationReportDto] | None = None
