"""The JSON shapes of the Camunda REST surface, as pydantic models.

Responses are built from these models (``dump``), so ``/openapi.json`` documents exactly
what is sent; field names are Camunda's (camelCase). Request bodies of the filter and
update endpoints are here too: unknown fields are kept (and ignored), nulls accepted.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from bpm.api import documented
from bpm.api.documented import NO_NUL, VARIABLE_VALUE, Conditions, DateText, Variables
from bpm.api.limits import MAX_SORTING, Names, at_most
from bpm.api.sort_keys import HISTORIC_SORT_KEYS, TASK_SORT_KEYS
from bpm.store.history_queries import INSTANCE_SORTS
from bpm.store.variable_queries import VARIABLE_SORTS


class Dto(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def dump(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class RequestDto(BaseModel):
    model_config = ConfigDict(extra="allow")


class ErrorDto(Dto):
    type: str = Field(description="Camunda's exception class, e.g. InvalidRequestException")
    message: str
    code: int | None = None
    details: dict[str, Any] | None = Field(
        None, description="Not in Camunda's error: per resource, why a deployment failed"
    )


class CountDto(Dto):
    count: int


class SuspendedBody(RequestDto):
    """``{"suspended": true|false}`` (Camunda's ``SuspensionStateDto``)."""

    suspended: bool


class VariableValueDto(Dto):
    value: Any = None
    type: str = Field(description="String, Integer, Long, Double, Boolean, Date, Json, Null...")
    valueInfo: dict[str, Any] = Field(default_factory=dict)


class TaskDto(Dto):
    id: str
    name: str | None
    assignee: str | None
    owner: str | None
    created: str
    due: str | None
    followUp: str | None
    lastUpdated: str | None = None
    delegationState: str | None = None
    description: str | None
    executionId: str
    parentTaskId: str | None = None
    priority: int
    processDefinitionId: str
    processInstanceId: str
    taskDefinitionKey: str
    caseExecutionId: str | None = None
    caseInstanceId: str | None = None
    caseDefinitionId: str | None = None
    suspended: bool
    formKey: str | None
    camundaFormRef: dict[str, Any] | None
    tenantId: str | None = None
    candidateUsers: list[str] = Field(description="Not in Camunda's task: its candidate users")
    candidateGroups: list[str] = Field(description="Not in Camunda's task: its candidate groups")


class IdentityLinkDto(Dto):
    userId: str | None
    groupId: str | None
    type: str = Field(description="assignee, owner or candidate")


class FormVariablesDto(Dto):
    pass


class VariableInstanceDto(Dto):
    id: str = Field(description="processInstanceId:name")
    name: str
    type: str
    value: Any = None
    valueInfo: dict[str, Any]
    processDefinitionId: str
    processInstanceId: str
    executionId: str
    activityInstanceId: str
    caseExecutionId: str | None = None
    caseInstanceId: str | None = None
    taskId: str | None = None
    batchId: str | None = None
    tenantId: str | None = None
    errorMessage: str | None = None


class HistoricVariableInstanceDto(VariableInstanceDto):
    processDefinitionKey: str
    state: str = "CREATED"
    createTime: str
    removalTime: str | None = None
    rootProcessInstanceId: str


class HistoricProcessInstanceDto(Dto):
    id: str
    businessKey: str | None
    processDefinitionId: str
    processDefinitionKey: str
    processDefinitionName: str | None
    processDefinitionVersion: int
    startTime: str
    endTime: str | None
    removalTime: str | None = None
    durationInMillis: int | None
    startUserId: str | None = None
    startActivityId: str | None = None
    deleteReason: str | None
    rootProcessInstanceId: str
    superProcessInstanceId: str | None = None
    superCaseInstanceId: str | None = None
    caseInstanceId: str | None = None
    tenantId: str | None = None
    state: str = Field(
        description="ACTIVE, SUSPENDED, COMPLETED, EXTERNALLY_TERMINATED or INTERNALLY_TERMINATED"
    )


class HistoricActivityInstanceDto(Dto):
    id: str
    parentActivityInstanceId: str
    activityId: str
    activityName: str | None
    activityType: str
    processDefinitionKey: str
    processDefinitionId: str
    processInstanceId: str
    executionId: str
    taskId: str | None
    calledProcessInstanceId: str | None = None
    calledCaseInstanceId: str | None = None
    assignee: str | None
    startTime: str
    endTime: str | None
    durationInMillis: int | None
    canceled: bool
    completeScope: bool
    tenantId: str | None = None
    removalTime: str | None = None
    rootProcessInstanceId: str


class HistoricIncidentDto(Dto):
    id: str
    processDefinitionKey: str
    processDefinitionId: str
    processInstanceId: str
    executionId: str
    rootProcessInstanceId: str
    createTime: str
    endTime: str | None
    removalTime: str | None = None
    incidentType: str
    activityId: str
    failedActivityId: str
    causeIncidentId: str
    rootCauseIncidentId: str
    configuration: str | None
    historyConfiguration: str | None = None
    incidentMessage: str | None
    tenantId: str | None = None
    jobDefinitionId: str | None = None
    open: bool
    deleted: bool
    resolved: bool
    annotation: str | None = None


class HistoricTaskDto(Dto):
    id: str
    processDefinitionKey: str
    processDefinitionId: str
    processInstanceId: str
    executionId: str
    caseDefinitionKey: str | None = None
    caseDefinitionId: str | None = None
    caseInstanceId: str | None = None
    caseExecutionId: str | None = None
    activityInstanceId: str
    name: str | None
    description: str | None
    deleteReason: str | None
    owner: str | None
    assignee: str | None
    startTime: str
    endTime: str | None
    duration: int | None
    taskDefinitionKey: str
    priority: int
    due: str | None
    parentTaskId: str | None = None
    followUp: str | None
    tenantId: str | None = None
    removalTime: str | None = None
    rootProcessInstanceId: str


# -- request bodies ----------------------------------------------------------------------------


class SortingDto(RequestDto):
    sortBy: str | None = None
    sortOrder: str | None = None


Sorting = Annotated[list[SortingDto], at_most(MAX_SORTING)] | SortingDto | None


class TaskQueryDto(RequestDto):
    """The filter of ``POST /task`` and ``POST /task/count`` (see docs/rest-api.md)."""

    processInstanceId: str | None = None
    processInstanceIdIn: Names | None = None
    processInstanceBusinessKey: str | None = None
    processInstanceBusinessKeyIn: Names | None = None
    processDefinitionKey: str | None = None
    processDefinitionKeyIn: Names | None = None
    taskDefinitionKey: str | None = None
    taskDefinitionKeyIn: Names | None = None
    assignee: str | None = None
    assigneeIn: Names | None = None
    unassigned: bool | None = None
    assigned: bool | None = None
    candidateGroup: str | None = None
    candidateGroups: Names | None = None
    candidateUser: str | None = None
    includeAssignedTasks: bool | None = None
    name: str | None = None
    nameLike: str | None = None
    dueBefore: DateText = None
    dueAfter: DateText = None
    createdBefore: DateText = None
    createdAfter: DateText = None
    tenantIdIn: Names | None = None
    withoutTenantId: bool | None = None
    sorting: Annotated[Sorting, documented.sorting(TASK_SORT_KEYS)] = None


class TaskUpdateDto(RequestDto):
    name: str | None = None
    description: str | None = None
    assignee: str | None = None
    owner: str | None = None
    due: DateText = None
    followUp: DateText = None
    priority: Annotated[
        int | None,
        WithJsonSchema(
            {
                "anyOf": [
                    {"type": "integer", "minimum": -(2**31), "maximum": 2**31 - 1},
                    {"type": "null"},
                ]
            }
        ),
    ] = None


class UserIdDto(RequestDto):
    userId: Annotated[
        str | None,
        WithJsonSchema(
            {
                "anyOf": [
                    {"type": "string", "minLength": 1, "maxLength": 255, "pattern": NO_NUL},
                    {"type": "null"},
                ]
            }
        ),
    ] = None


class ClaimDto(RequestDto):
    """A claim names its user (checked by the route: 400 without one)."""

    model_config = ConfigDict(extra="allow", json_schema_extra={"required": ["userId"]})

    userId: Annotated[
        str | None,
        WithJsonSchema({"type": "string", "minLength": 1, "maxLength": 255, "pattern": NO_NUL}),
    ] = None


class CompleteTaskDto(RequestDto):
    variables: Variables = None
    withVariablesInReturn: bool | None = None


class PatchVariablesDto(RequestDto):
    modifications: Variables = None
    deletions: Names | None = None


def _variable_value(schema: dict[str, Any]) -> None:
    schema.clear()
    schema.update(VARIABLE_VALUE)


class VariableValueInDto(RequestDto):
    """One Camunda typed value (documented as :data:`bpm.api.documented.VARIABLE_VALUE`)."""

    model_config = ConfigDict(extra="allow", json_schema_extra=_variable_value)

    value: Any = None
    type: str | None = None
    valueInfo: dict[str, Any] | None = None


class VariableQueryDto(RequestDto):
    """The filter of ``POST /variable-instance`` and ``POST /history/variable-instance``."""

    variableName: str | None = None
    variableNameIn: Names | None = None
    variableNameLike: str | None = None
    processInstanceId: str | None = None
    processInstanceIdIn: Names | None = None
    variableValues: Conditions = None
    sorting: Annotated[Sorting, documented.sorting(VARIABLE_SORTS)] = None


class HistoricProcessInstanceQueryDto(RequestDto):
    """The filter of ``POST /history/process-instance`` (and ``/count``)."""

    processInstanceId: str | None = None
    processInstanceIds: Names | None = None
    processDefinitionId: str | None = None
    processDefinitionKey: str | None = None
    processDefinitionKeyIn: Names | None = None
    processInstanceBusinessKey: str | None = None
    finished: bool | None = None
    unfinished: bool | None = None
    startedBefore: DateText = None
    startedAfter: DateText = None
    sorting: Annotated[Sorting, documented.sorting(INSTANCE_SORTS)] = None


class HistoricTaskQueryDto(RequestDto):
    """The filter of ``POST /history/task`` (and ``/count``)."""

    taskId: str | None = None
    processInstanceId: str | None = None
    processDefinitionKey: str | None = None
    taskAssignee: str | None = None
    finished: bool | None = None
    unfinished: bool | None = None
    tenantIdIn: Names | None = None
    withoutTenantId: bool | None = None
    sorting: Annotated[Sorting, documented.sorting(HISTORIC_SORT_KEYS)] = None
