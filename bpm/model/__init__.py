"""The immutable process definition: nodes, flows and the graph built from them."""

from __future__ import annotations

from bpm.model.nodes import (
    BoundaryEvent,
    EndEvent,
    EndKind,
    ExclusiveGateway,
    Flow,
    Node,
    ParallelGateway,
    ServiceTask,
    StartEvent,
    TimerCatchEvent,
    TimerSpec,
    UserTask,
)
from bpm.model.process import ProcessModel

__all__ = [
    "BoundaryEvent",
    "EndEvent",
    "EndKind",
    "ExclusiveGateway",
    "Flow",
    "Node",
    "ParallelGateway",
    "ProcessModel",
    "ServiceTask",
    "StartEvent",
    "TimerCatchEvent",
    "TimerSpec",
    "UserTask",
]
