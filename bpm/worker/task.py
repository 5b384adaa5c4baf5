"""What a handler receives (:class:`Task`) and may raise (:class:`BpmnError`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bpm.errors import BpmnError  # one class for inline and external handlers

__all__ = ["BpmnError", "Task", "plain_value", "typed_variables"]


def plain_value(entry: Any) -> Any:
    """A Camunda typed value as plain JSON (Json and Object strings are parsed)."""
    if not isinstance(entry, Mapping):
        return entry
    value = entry.get("value")
    kind = str(entry.get("type") or "").lower()
    if kind in ("json", "object") and isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def typed_value(value: Any) -> dict[str, Any]:
    """A plain value as a Camunda typed value."""
    if value is None:
        return {"value": None, "type": "Null"}
    if isinstance(value, bool):
        return {"value": value, "type": "Boolean"}
    if isinstance(value, int):
        return {"value": value, "type": "Integer" if -(2**31) <= value < 2**31 else "Long"}
    if isinstance(value, float):
        return {"value": value, "type": "Double"}
    if isinstance(value, str):
        return {"value": value, "type": "String"}
    return {"value": json.dumps(value, separators=(",", ":")), "type": "Json"}


def typed_variables(values: Mapping[str, Any] | None) -> dict[str, Any]:
    return {str(k): typed_value(v) for k, v in (values or {}).items()}


@dataclass
class Task:
    """A locked external task: read ``variables``, return the variables to set."""

    id: str
    topic: str
    worker_id: str
    variables: dict[str, Any]
    business_key: str | None = None
    retries: int | None = None
    process_instance_id: str | None = None
    process_definition_key: str | None = None
    activity_id: str | None = None
    priority: int = 0
    lock_expiration_time: str | None = None
    extension_properties: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
    _extend: Callable[[int], bool] | None = field(default=None, repr=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any], worker_id: str) -> Task:
        variables = data.get("variables") or {}
        return cls(
            id=str(data["id"]),
            topic=str(data.get("topicName") or ""),
            worker_id=worker_id,
            variables={k: plain_value(v) for k, v in variables.items()},
            business_key=data.get("businessKey"),
            retries=data.get("retries"),
            process_instance_id=data.get("processInstanceId"),
            process_definition_key=data.get("processDefinitionKey"),
            activity_id=data.get("activityId"),
            priority=int(data.get("priority") or 0),
            lock_expiration_time=data.get("lockExpirationTime"),
            extension_properties=dict(data.get("extensionProperties") or {}),
            raw=dict(data),
        )

    def extend_lock(self, duration_ms: int) -> bool:
        """Extend this task's lock now (the worker also does it at half the lease)."""
        return self._extend(duration_ms) if self._extend else False
