"""The message trigger: a named message, correlated to the instance that waits for it."""

from __future__ import annotations

from typing import Any
from xml.etree.ElementTree import Element

from bpm.cockpit.diagram import Drawing
from bpm.kinds.spec import TriggerKind


def draw(parent: Element, node: Any, d: Drawing) -> None:
    d.event(parent, node.event)


TRIGGER = TriggerKind(
    name="message",
    definition="messageEventDefinition",
    activity_types={
        "start": "messageStartEvent",
        "intermediate_catch": "intermediateMessageCatch",
        "boundary": "boundaryMessage",
    },
    draw=draw,
)
