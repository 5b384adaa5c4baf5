"""Request bodies of the REST API, lenient the way Camunda clients need.

Unknown fields are ignored, ``null`` is accepted for every optional field, and ``workerId``
may arrive as a JSON number (the Python client sends ``7``): it is coerced to a string.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema

from bpm.api.documented import VariableFilter, Variables
from bpm.api.limits import MAX_SORTING, MAX_TOPICS, Names, at_most

__all__ = ["Variables"]  # routes import the documented variables type from here too

MAX_ID = 255
MAX_DURATION_MS = 365 * 24 * 3600 * 1000
MAX_POLL_MS = 1_800_000
# tasks one fetch-and-lock may lock (its answer is also bounded in bytes)
MAX_TASKS = 1000


def _worker_id(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("workerId must be a string")
    if isinstance(value, (int, float)):
        return str(value)
    return value


WorkerId = Annotated[str, BeforeValidator(_worker_id), Field(min_length=1, max_length=MAX_ID)]
Name = Annotated[str, Field(min_length=1, max_length=MAX_ID)]
Duration = Annotated[int, Field(gt=0, le=MAX_DURATION_MS)]


class Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


class SortingBody(Body):
    sortBy: Annotated[Name, WithJsonSchema({"type": "string", "enum": ["createTime"]})]
    sortOrder: Annotated[
        str | None,
        WithJsonSchema({"anyOf": [{"enum": ["asc", "desc"]}, {"type": "null"}]}),
    ] = "asc"


class TopicBody(Body):
    topicName: Name
    lockDuration: Duration
    variables: Names | None = None
    processVariables: VariableFilter = None
    businessKey: str | None = Field(None, max_length=MAX_ID)
    processDefinitionId: str | None = Field(None, max_length=300)
    processDefinitionKey: str | None = Field(None, max_length=MAX_ID)
    localVariables: bool | None = False
    deserializeValues: bool | None = False
    includeExtensionProperties: bool | None = False


class FetchBody(Body):
    workerId: WorkerId
    maxTasks: int = Field(1, ge=0, le=MAX_TASKS)
    usePriority: bool | None = False
    asyncResponseTimeout: int | None = Field(None, ge=0, le=MAX_POLL_MS)
    topics: Annotated[list[TopicBody], at_most(MAX_TOPICS)] | None = None
    sorting: Annotated[list[SortingBody], at_most(MAX_SORTING)] | None = None


class CompleteBody(Body):
    workerId: WorkerId
    variables: Variables = None
    localVariables: Variables = None


class FailureBody(Body):
    workerId: WorkerId
    errorMessage: str | None = Field(None, max_length=100_000)
    errorDetails: str | None = Field(None, max_length=1_000_000)
    retries: int | None = Field(None, ge=0, le=2**31 - 1)
    retryTimeout: int | None = Field(None, ge=0, le=MAX_DURATION_MS)


class BpmnErrorBody(Body):
    workerId: WorkerId
    errorCode: Name
    errorMessage: str | None = Field(None, max_length=100_000)
    variables: Variables = None


class ExtendLockBody(Body):
    workerId: WorkerId
    newDuration: Duration


class LockBody(Body):
    workerId: WorkerId
    lockDuration: Duration


class RetriesBody(Body):
    retries: int = Field(ge=0, le=2**31 - 1)


class StartBody(Body):
    variables: Variables = None
    businessKey: str | None = Field(None, max_length=MAX_ID)
    withVariablesInReturn: bool | None = False


class ClaimBody(Body):
    userId: Name


class TaskCompleteBody(Body):
    variables: Variables = None
    withVariablesInReturn: bool | None = False
