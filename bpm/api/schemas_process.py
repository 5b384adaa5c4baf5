"""Response schemas of the external-task and process endpoints, for ``/openapi.json``.

Those routes build their JSON by hand (``routes_external``, ``routes_process``); these
models describe exactly what they send, and :mod:`bpm.api.openapi` attaches them to the
routes' success responses. ``tests/api/test_openapi_truth.py`` checks every answer against
them.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from bpm.api.schemas import CountDto, VariableValueDto


class _Dto(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExternalTaskDto(_Dto):
    id: str
    topicName: str
    workerId: str | None
    lockExpirationTime: str | None
    createTime: str
    processInstanceId: str
    processDefinitionId: str
    processDefinitionKey: str
    processDefinitionVersionTag: str | None
    activityId: str
    activityInstanceId: str
    executionId: str
    retries: int | None
    errorMessage: str | None
    suspended: bool
    priority: int
    businessKey: str | None
    tenantId: str | None


class LockedExternalTaskDto(ExternalTaskDto):
    errorDetails: str | None
    variables: dict[str, VariableValueDto]
    extensionProperties: dict[str, Any]
    bpmTrace: dict[str, str] | None = Field(
        default=None,
        description=(
            "Not in Camunda's answer: sent only to a caller whose request carried a W3C"
            " traceparent header, and only for an instance started under a tracer. The"
            " traceparent/tracestate headers of the instance's start, so a traced worker's"
            " handler joins the instance's trace."
        ),
    )


class ProcessDefinitionDto(_Dto):
    id: str
    key: str
    category: str | None
    description: str | None
    name: str | None
    version: int
    resource: str | None
    deploymentId: str | None
    diagram: str | None
    suspended: bool
    tenantId: str | None
    versionTag: str | None
    historyTimeToLive: int | None
    startableInTasklist: bool


class LinkDto(_Dto):
    method: str
    href: str
    rel: str


class ProcessInstanceDto(_Dto):
    id: str
    definitionId: str
    definitionKey: str
    businessKey: str | None
    caseInstanceId: str | None
    ended: bool
    suspended: bool
    tenantId: str | None
    links: list[LinkDto]
    variables: dict[str, VariableValueDto] | None = None


class DeploymentDto(_Dto):
    id: str
    name: str | None
    source: str | None
    deploymentTime: str | None
    tenantId: str | None
    links: list[LinkDto]


class DeploymentResourceDto(_Dto):
    id: str
    name: str
    deploymentId: str


class ProcessDefinitionXmlDto(_Dto):
    id: str
    bpmn20Xml: str | None


class CamundaFormRefDto(_Dto):
    key: str
    binding: str
    version: str | None = None


class FormDto(_Dto):
    key: str | None
    contextPath: str | None
    camundaFormRef: CamundaFormRefDto | None


class DeploymentWithDefinitionsDto(_Dto):
    id: str | None
    name: str | None
    source: str | None
    deploymentTime: str | None
    tenantId: str | None
    deployedProcessDefinitions: dict[str, ProcessDefinitionDto]
    deployedCaseDefinitions: dict[str, Any] | None
    deployedDecisionDefinitions: dict[str, Any] | None
    deployedDecisionRequirementsDefinitions: dict[str, Any] | None
    links: list[LinkDto]
    warnings: list[str]


class IncidentDto(_Dto):
    id: str
    processDefinitionId: str | None
    processInstanceId: str
    executionId: str
    incidentTimestamp: str
    incidentType: str
    activityId: str
    failedActivityId: str
    causeIncidentId: str
    rootCauseIncidentId: str
    configuration: str | None
    incidentMessage: str | None
    tenantId: str | None
    jobDefinitionId: str | None
    annotation: str | None


class VersionDto(_Dto):
    version: str


class EngineDto(_Dto):
    name: str


#: (method, path) -> the schema of the success answer of a route that builds its JSON
#: by hand; a ``str`` is a text/plain body.
SUCCESS: dict[tuple[str, str], Any] = {
    ("post", "/engine-rest/external-task/fetchAndLock"): list[LockedExternalTaskDto],
    ("get", "/engine-rest/external-task"): list[ExternalTaskDto],
    ("get", "/engine-rest/external-task/count"): CountDto,
    ("get", "/engine-rest/external-task/{task_id}"): ExternalTaskDto,
    ("get", "/engine-rest/external-task/{task_id}/errorDetails"): str,
    ("post", "/engine-rest/deployment/create"): DeploymentWithDefinitionsDto,
    ("get", "/engine-rest/deployment"): list[DeploymentDto],
    ("get", "/engine-rest/deployment/{deployment_id}"): DeploymentDto,
    ("get", "/engine-rest/deployment/{deployment_id}/resources"): list[DeploymentResourceDto],
    ("get", "/engine-rest/deployment/{deployment_id}/resources/{resource_id}"): (
        DeploymentResourceDto
    ),
    ("get", "/engine-rest/process-definition"): list[ProcessDefinitionDto],
    ("get", "/engine-rest/process-definition/key/{key}"): ProcessDefinitionDto,
    ("get", "/engine-rest/process-definition/{definition_id}"): ProcessDefinitionDto,
    ("get", "/engine-rest/process-definition/key/{key}/xml"): ProcessDefinitionXmlDto,
    ("get", "/engine-rest/process-definition/{definition_id}/xml"): ProcessDefinitionXmlDto,
    ("get", "/engine-rest/process-definition/key/{key}/startForm"): FormDto,
    ("get", "/engine-rest/process-definition/{definition_id}/startForm"): FormDto,
    ("post", "/engine-rest/process-definition/key/{key}/start"): ProcessInstanceDto,
    ("post", "/engine-rest/process-definition/{definition_id}/start"): ProcessInstanceDto,
    ("get", "/engine-rest/process-instance"): list[ProcessInstanceDto],
    ("get", "/engine-rest/process-instance/{instance_id}"): ProcessInstanceDto,
    ("get", "/engine-rest/process-instance/{instance_id}/variables"): dict[str, VariableValueDto],
    ("get", "/engine-rest/incident"): list[IncidentDto],
    ("get", "/engine-rest/version"): VersionDto,
    ("get", "/engine-rest/engine"): list[EngineDto],
}
