"""The Camunda ``sortBy`` keys each list of the REST API orders by (documented per
endpoint in ``/openapi.json``; any other key answers 400)."""

from __future__ import annotations

from bpm.store.task_queries import TASK_SORTS

#: Camunda sort keys of /task.
TASK_SORT_KEYS = (
    "created", "id", "name", "nameCaseInsensitive", "description", "priority", "assignee",
    "dueDate", "followUpDate", "instanceId", "processInstanceId", "executionId",
    "taskDefinitionKey",
)  # fmt: skip
#: Camunda sort keys of /history/task.
HISTORIC_SORT_KEYS = (
    "taskId", "startTime", "endTime", "taskName", "taskDescription", "priority", "assignee",
    "owner", "dueDate", "followUpDate", "processInstanceId", "executionId",
    "taskDefinitionKey",
)  # fmt: skip
assert set(TASK_SORT_KEYS + HISTORIC_SORT_KEYS) <= set(TASK_SORTS)
