"""The JSON shapes of Camunda 7's decision endpoints, as pydantic models (see schemas.py)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from bpm.api.bodies import Body, Variables
from bpm.api.schemas import Dto, VariableValueDto


class DecisionDefinitionDto(Dto):
    id: str
    key: str
    category: str | None
    name: str | None
    version: int
    resource: str
    deploymentId: str
    decisionRequirementsDefinitionId: str | None
    decisionRequirementsDefinitionKey: str | None
    tenantId: str | None
    versionTag: str | None
    historyTimeToLive: int | None


class DecisionRequirementsDefinitionDto(Dto):
    id: str
    key: str
    category: str | None
    name: str | None
    version: int
    resource: str
    deploymentId: str
    tenantId: str | None


class DecisionXmlDto(Dto):
    id: str
    dmnXml: str


class EvaluateBody(Body):
    variables: Variables = None


class HistoricDecisionInputDto(Dto):
    id: str
    decisionInstanceId: str
    clauseId: str | None
    clauseName: str | None
    errorMessage: str | None
    type: str
    value: Any = None
    valueInfo: dict[str, Any]
    createTime: str
    removalTime: str | None
    rootProcessInstanceId: str | None


class HistoricDecisionOutputDto(HistoricDecisionInputDto):
    ruleId: str | None
    ruleOrder: int | None
    variableName: str | None


class HistoricDecisionInstanceDto(Dto):
    id: str
    decisionDefinitionId: str
    decisionDefinitionKey: str
    decisionDefinitionName: str | None
    evaluationTime: str
    removalTime: str | None
    processDefinitionId: str | None
    processDefinitionKey: str | None
    processInstanceId: str | None
    rootProcessInstanceId: str | None
    caseDefinitionId: str | None
    caseDefinitionKey: str | None
    caseInstanceId: str | None
    activityId: str | None
    activityInstanceId: str | None
    tenantId: str | None
    userId: str | None
    inputs: list[HistoricDecisionInputDto] | None = Field(
        None, description="Only with includeInputs=true"
    )
    outputs: list[HistoricDecisionOutputDto] | None = Field(
        None, description="Only with includeOutputs=true"
    )
    collectResultValue: Any = None
    rootDecisionInstanceId: str | None
    decisionRequirementsDefinitionId: str | None
    decisionRequirementsDefinitionKey: str | None


#: One matched rule's outputs by output name (``POST .../evaluate`` answers a list of them).
RuleResult = dict[str, VariableValueDto]
