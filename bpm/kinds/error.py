"""The error trigger: thrown by an error end event (or a failing step), caught by the
nearest error boundary or error event sub-process whose code matches."""

from __future__ import annotations

from typing import Any
from xml.etree.ElementTree import Element

from bpm.cockpit.diagram import Drawing
from bpm.kinds.spec import TriggerKind


def draw(parent: Element, node: Any, d: Drawing) -> None:
    d.error(parent, node.error_code)


TRIGGER = TriggerKind(
    name="error",
    definition="errorEventDefinition",
    activity_types={
        "start": "errorStartEvent",
        "boundary": "boundaryError",
        "end": "errorEndEvent",
    },
    draw=draw,
)
