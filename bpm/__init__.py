"""A durable BPMN engine for Python teams that run Celery."""

from __future__ import annotations

from bpm.engine import Engine, EngineConfig
from bpm.errors import (
    BpmError,
    BpmnError,
    ConfigurationError,
    DeploymentError,
    HandlerNotFound,
    IllegalTransition,
    InvalidOperation,
    LeaseLost,
    MessageCorrelationError,
    NotFound,
    VariableError,
)
from bpm.handlers import TaskContext, execution_listener, service_task
from bpm.retry import RetryPolicy
from bpm.runtime.states import InstanceState, TokenState

__all__ = [
    "BpmError",
    "BpmnError",
    "ConfigurationError",
    "DeploymentError",
    "Engine",
    "EngineConfig",
    "HandlerNotFound",
    "IllegalTransition",
    "InstanceState",
    "InvalidOperation",
    "LeaseLost",
    "MessageCorrelationError",
    "NotFound",
    "RetryPolicy",
    "TaskContext",
    "TokenState",
    "VariableError",
    "execution_listener",
    "service_task",
]
