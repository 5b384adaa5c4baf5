"""The JSON shapes of the activity instance tree and of process instance modification
(Camunda 7's ``ActivityInstanceDto``, ``TransitionInstanceDto``,
``ProcessInstanceModificationDto``; issue 22)."""

from __future__ import annotations

import copy
from typing import Any, Literal

from pydantic import ConfigDict, Field

from bpm.api.documented import NO_NUL, VARIABLE_VALUE
from bpm.api.limits import MAX_VARIABLES
from bpm.api.schemas import Dto, RequestDto
from bpm.engine.modification import MAX_INSTRUCTIONS

#: An annotation's length (Camunda's column holds 4000 characters).
MAX_ANNOTATION = 4000
#: An id of an activity, flow or activity instance.
MAX_ID = 300


class ActivityInstanceIncidentDto(Dto):
    id: str = Field(description="The incident")
    parentActivityInstanceId: str = Field(description="The activity instance it is on")


class TransitionInstanceDto(Dto):
    id: str
    parentActivityInstanceId: str
    activityId: str
    activityName: str | None
    activityType: str
    processInstanceId: str
    processDefinitionId: str
    executionId: str
    targetActivityId: str = Field(description="Deprecated in Camunda: activityId")
    incidentIds: list[str]
    incidents: list[ActivityInstanceIncidentDto]


class ActivityInstanceDto(Dto):
    id: str
    parentActivityInstanceId: str | None
    activityId: str
    activityType: str
    processInstanceId: str
    processDefinitionId: str
    childActivityInstances: list[ActivityInstanceDto]
    childTransitionInstances: list[TransitionInstanceDto]
    executionIds: list[str]
    activityName: str | None
    name: str | None = Field(description="Deprecated in Camunda: activityName")
    incidentIds: list[str]
    incidents: list[ActivityInstanceIncidentDto]


def _trigger_value() -> dict[str, Any]:
    """A typed value with ``local`` beside it (Camunda's ``TriggerVariableValueDto``)."""
    schema = copy.deepcopy(VARIABLE_VALUE)
    for branch in schema["anyOf"]:
        branch["properties"]["local"] = {"type": "boolean"}
    return schema


TRIGGER_VARIABLES: dict[str, Any] = {
    "anyOf": [
        {
            "type": "object",
            "propertyNames": {"minLength": 1, "pattern": NO_NUL},
            "additionalProperties": _trigger_value(),
            "maxProperties": MAX_VARIABLES,
        },
        {"type": "null"},
    ]
}
_ID = {"type": "string", "minLength": 1, "maxLength": MAX_ID, "pattern": NO_NUL}
_ANCESTOR = {"anyOf": [_ID, {"type": "null"}]}


def _start(kind: str, field: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "type": {"const": kind},
            field: _ID,
            "variables": TRIGGER_VARIABLES,
            "ancestorActivityInstanceId": _ANCESTOR,
        },
        "required": ["type", field],
    }


def _cancel(field: str) -> dict[str, Any]:
    others = {"activityId", "activityInstanceId", "transitionInstanceId"} - {field}
    return {
        "type": "object",
        "properties": {
            "type": {"const": "cancel"},
            field: _ID,
            "cancelCurrentActiveActivityInstances": {"type": ["boolean", "null"]},
            **{name: {"type": "null"} for name in sorted(others)},
        },
        "required": ["type", field],
    }


#: One instruction: the fields its type needs are required, a cancel names exactly one
#: of the three ids (the others absent or null).
INSTRUCTION: dict[str, Any] = {
    "anyOf": [
        _start("startBeforeActivity", "activityId"),
        _start("startAfterActivity", "activityId"),
        _start("startTransition", "transitionId"),
        _cancel("activityId"),
        _cancel("activityInstanceId"),
        _cancel("transitionInstanceId"),
    ]
}

InstructionType = Literal["cancel", "startBeforeActivity", "startAfterActivity", "startTransition"]


def _instruction_schema(schema: dict[str, Any]) -> None:
    schema.clear()
    schema.update(copy.deepcopy(INSTRUCTION))


class ModificationInstructionDto(RequestDto):
    """Camunda's ``ProcessInstanceModificationInstructionDto``: read leniently, checked by
    the route; documented as :data:`INSTRUCTION`."""

    model_config = ConfigDict(extra="allow", json_schema_extra=_instruction_schema)

    type: InstructionType
    activityId: str | None = Field(None, max_length=MAX_ID)
    transitionId: str | None = Field(None, max_length=MAX_ID)
    activityInstanceId: str | None = Field(None, max_length=MAX_ID)
    transitionInstanceId: str | None = Field(None, max_length=MAX_ID)
    ancestorActivityInstanceId: str | None = Field(None, max_length=MAX_ID)
    cancelCurrentActiveActivityInstances: bool | None = None
    variables: dict[str, Any] | None = Field(None, max_length=MAX_VARIABLES)


class ModificationDto(RequestDto):
    """Camunda's ``ProcessInstanceModificationDto``."""

    async_: bool | None = Field(
        None,
        alias="async",
        description="Not in Camunda's body of this path: true makes it a batch of one "
        "(answered 200 with the BatchDto; Camunda's /modification-async twin)",
    )

    instructions: list[ModificationInstructionDto] = Field(
        min_length=1, max_length=MAX_INSTRUCTIONS
    )
    skipCustomListeners: bool | None = None
    skipIoMappings: bool | None = None
    annotation: str | None = Field(None, max_length=MAX_ANNOTATION, pattern=NO_NUL)


class UserOperationLogEntryDto(Dto):
    """Camunda's ``UserOperationLogEntryDto`` (the fields this engine has a value for are
    filled, the others null)."""

    id: str
    deploymentId: str | None = None
    processDefinitionId: str | None
    processDefinitionKey: str | None
    processInstanceId: str | None
    executionId: str | None = None
    caseDefinitionId: str | None = None
    caseInstanceId: str | None = None
    caseExecutionId: str | None = None
    taskId: str | None = None
    externalTaskId: str | None = None
    batchId: str | None = None
    jobId: str | None = None
    jobDefinitionId: str | None = None
    userId: str | None
    timestamp: str
    operationId: str
    operationType: str
    entityType: str
    property: str | None
    orgValue: str | None
    newValue: str | None
    removalTime: str | None = None
    rootProcessInstanceId: str | None
    category: str
    annotation: str | None
