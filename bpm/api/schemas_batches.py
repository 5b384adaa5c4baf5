"""The JSON shapes of batches and of the operations that create them (Camunda 7's
``BatchDto``, ``BatchStatisticsDto``, ``HistoricBatchDto`` and the bodies of
``/process-instance/delete``, ``/suspended-async``, ``/variables-async``,
``/modification-async``, ``/job/retries``, ``/external-task/retries-async``)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import ConfigDict, Field, WithJsonSchema

from bpm.api.documented import NO_NUL, VARIABLE_VALUE
from bpm.api.limits import MAX_VARIABLES, Names
from bpm.api.schemas import Dto, RequestDto
from bpm.api.schemas_modification import MAX_ANNOTATION, ModificationInstructionDto
from bpm.api.variables import format_date
from bpm.engine.batches import Batch, Statistics
from bpm.engine.modification import MAX_INSTRUCTIONS

_ID = Field(None, max_length=300)

#: The ids of a batch's items: at least one, each a non-empty id (at most a batch's size).
Ids = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=300)]],
    Field(min_length=1, max_length=100_000),
]
#: The variables a batch sets: at least one typed value.
SetVariables = Annotated[
    dict[str, Any],
    Field(min_length=1, max_length=MAX_VARIABLES),
    WithJsonSchema(
        {
            "type": "object",
            "propertyNames": {"minLength": 1, "pattern": NO_NUL},
            "additionalProperties": VARIABLE_VALUE,
            "minProperties": 1,
            "maxProperties": MAX_VARIABLES,
        }
    ),
]


def needs_one(*names: str) -> ConfigDict:
    """A body that must name its items in one of ``names`` at least (not null): said in
    the schema, so a client (and a fuzzer) knows it before it asks."""

    def extra(schema: dict[str, Any]) -> None:
        schema["anyOf"] = [
            {"required": [n], "properties": {n: {"not": {"type": "null"}}}} for n in names
        ]

    return ConfigDict(extra="allow", json_schema_extra=extra)


_WHICH_INSTANCES = needs_one(
    "processInstanceIds", "processInstanceQuery", "historicProcessInstanceQuery"
)


class BatchDto(Dto):
    id: str
    type: str
    totalJobs: int
    jobsCreated: int
    batchJobsPerSeed: int
    invocationsPerBatchJob: int
    seedJobDefinitionId: str
    monitorJobDefinitionId: str
    batchJobDefinitionId: str
    suspended: bool
    tenantId: str | None
    createUserId: str | None
    startTime: str | None
    executionStartTime: str | None
    totalItems: int = Field(description="Not in Camunda: the items (instances, tasks)")


class BatchStatisticsDto(BatchDto):
    remainingJobs: int
    completedJobs: int
    failedJobs: int = Field(description="Chunks (jobs) with at least one failed item")
    completedItems: int = Field(description="Not in Camunda: items applied")
    failedItems: int = Field(description="Not in Camunda: items that failed")


class HistoricBatchDto(Dto):
    id: str
    type: str
    totalJobs: int
    batchJobsPerSeed: int
    invocationsPerBatchJob: int
    seedJobDefinitionId: str
    monitorJobDefinitionId: str
    batchJobDefinitionId: str
    tenantId: str | None
    createUserId: str | None
    startTime: str | None
    endTime: str | None
    removalTime: str | None
    executionStartTime: str | None
    completedItems: int = Field(description="Not in Camunda: items applied")
    failedItems: int = Field(description="Not in Camunda: items that failed")
    state: str = Field(description="Not in Camunda: active, suspended, completed or deleted")


class BatchFailureDto(Dto):
    """Not in Camunda: an item of a batch that failed, and why."""

    item: str = Field(description="The item (instance, external task or incident id)")
    reason: str
    chunk: int = Field(description="The chunk (batch job) it was in, from 0")


class SuspendedDto(RequestDto):
    suspended: bool


class ProcessInstanceQueryDto(RequestDto):
    """Camunda's ``ProcessInstanceQueryDto``: the running instances a batch is for."""

    processInstanceIds: Names | None = None
    processDefinitionId: str | None = _ID
    processDefinitionKey: str | None = _ID
    processDefinitionKeyIn: Names | None = None
    businessKey: str | None = _ID
    businessKeyLike: str | None = _ID
    active: bool | None = None
    suspended: bool | None = None
    withIncident: bool | None = None
    tenantIdIn: Names | None = None
    withoutTenantId: bool | None = None


class HistoricInstanceQueryDto(RequestDto):
    """The part of Camunda's ``HistoricProcessInstanceQueryDto`` a batch reads."""

    processInstanceIds: Names | None = None
    processDefinitionId: str | None = _ID
    processDefinitionKey: str | None = _ID
    processInstanceBusinessKey: str | None = _ID
    finished: bool | None = None
    unfinished: bool | None = None


class InstancesDto(RequestDto):
    """Which instances: ids and/or queries (their union, as Camunda)."""

    model_config = _WHICH_INSTANCES

    processInstanceIds: Ids | None = None
    processInstanceQuery: ProcessInstanceQueryDto | None = None
    historicProcessInstanceQuery: HistoricInstanceQueryDto | None = None


class DeleteInstancesDto(InstancesDto):
    deleteReason: str | None = Field(None, max_length=4000)
    skipCustomListeners: bool | None = None
    skipSubprocesses: bool | None = None
    skipIoMappings: bool | None = None
    failIfNotExists: bool | None = None


class SuspendInstancesDto(InstancesDto):
    suspended: bool


class SetVariablesDto(InstancesDto):
    variables: SetVariables


class ModificationManyDto(InstancesDto):
    """Camunda's ``ModificationDto`` (many instances of one definition)."""

    processDefinitionId: str | None = _ID
    instructions: list[ModificationInstructionDto] = Field(
        min_length=1, max_length=MAX_INSTRUCTIONS
    )
    skipCustomListeners: bool | None = None
    skipIoMappings: bool | None = None
    annotation: str | None = Field(None, max_length=MAX_ANNOTATION)


class JobRetriesDto(RequestDto):
    """Camunda's ``SetJobRetriesDto``: a job here is a failed step, named by its incident."""

    model_config = needs_one("jobIds", "processInstances", "processInstanceQuery")

    jobIds: Ids | None = None
    processInstances: Ids | None = None
    processInstanceQuery: ProcessInstanceQueryDto | None = None
    retries: int = Field(ge=1, le=2**31 - 1, description="At least 1: a fresh set of attempts")
    dueDate: str | None = Field(None, max_length=64)


class ExternalTaskRetriesDto(RequestDto):
    """Camunda's ``SetRetriesForExternalTasksDto``."""

    model_config = needs_one(
        "externalTaskIds", "processInstanceIds", "processInstanceQuery",
        "historicProcessInstanceQuery",
    )  # fmt: skip

    externalTaskIds: Ids | None = None
    processInstanceIds: Ids | None = None
    processInstanceQuery: ProcessInstanceQueryDto | None = None
    historicProcessInstanceQuery: HistoricInstanceQueryDto | None = None
    retries: int = Field(ge=0, le=2**31 - 1)


# -- answers ---------------------------------------------------------------------------------
def _common(b: Batch) -> dict[str, Any]:
    return {
        "id": b.id,
        "type": b.type,
        "totalJobs": b.total_jobs,
        "batchJobsPerSeed": b.jobs_per_seed,
        "invocationsPerBatchJob": b.chunk_size,
        "seedJobDefinitionId": f"{b.id}:seed",
        "monitorJobDefinitionId": f"{b.id}:monitor",
        "batchJobDefinitionId": f"{b.id}:chunks",
        "tenantId": b.tenant_id,
        "createUserId": b.created_by,
        "startTime": format_date(b.created_at),
        "executionStartTime": format_date(b.created_at),
    }


def batch_json(b: Batch) -> dict[str, Any]:
    """Camunda's ``BatchDto``."""
    return BatchDto(
        **_common(b),
        jobsCreated=b.total_jobs,  # every chunk is made with the batch
        suspended=b.state == "suspended",
        totalItems=b.total_items,
    ).dump()


def statistics_json(st: Statistics) -> dict[str, Any]:
    b = st.batch
    return BatchStatisticsDto(
        **_common(b),
        jobsCreated=b.total_jobs,
        suspended=b.state == "suspended",
        totalItems=b.total_items,
        remainingJobs=st.remaining_jobs,
        completedJobs=st.completed_jobs,
        failedJobs=st.failed_jobs,
        completedItems=b.completed_items,
        failedItems=b.failed_items,
    ).dump()


def historic_json(b: Batch) -> dict[str, Any]:
    """Camunda's ``HistoricBatchDto``."""
    return HistoricBatchDto(
        **_common(b),
        endTime=format_date(b.ended_at),
        removalTime=None,
        completedItems=b.completed_items,
        failedItems=b.failed_items,
        state=b.state,
    ).dump()
