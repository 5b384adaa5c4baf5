"""The timer trigger (ISO 8601 durations, dates and cycles), and the timer catch event."""

from __future__ import annotations

from typing import Any
from xml.etree.ElementTree import Element

from bpm.bpmn.events import parse_catch
from bpm.cockpit.diagram import Drawing
from bpm.kinds.spec import ElementKind, TriggerKind
from bpm.model import nodes as n
from bpm.runtime.timers import catch_event


def draw(parent: Element, node: Any, d: Drawing) -> None:
    d.timer(parent, node.timer)


TRIGGER = TriggerKind(
    name="timer",
    definition="timerEventDefinition",
    activity_types={
        "start": "startTimerEvent",
        "intermediate_catch": "intermediateTimer",
        "boundary": "boundaryTimer",
    },
    draw=draw,
)


def draw_catch(
    parent: Element, node: n.TimerCatchEvent, attrs: dict[str, str], d: Drawing
) -> Element:
    return d.element(parent, "intermediateCatchEvent", attrs)


CATCH = ElementKind(
    node=n.TimerCatchEvent,
    parse={"intermediateCatchEvent": parse_catch},
    behave=catch_event,
    activity_type=lambda node: "intermediateTimer",
    draw=draw_catch,
    build=("timer", "wait_until"),
    position="intermediate_catch",
    trigger=lambda node: "timer",
)
