"""The signal trigger (broadcast to every instance waiting for it), and the signal throw
event (an intermediate throw or end event)."""

from __future__ import annotations

from typing import Any
from xml.etree.ElementTree import Element

from bpm.bpmn.events import parse_end, parse_throw
from bpm.cockpit.diagram import Drawing
from bpm.kinds.spec import ElementKind, TriggerKind
from bpm.model import nodes as n
from bpm.runtime.messages import signal_throw


def draw(parent: Element, node: Any, d: Drawing) -> None:
    if isinstance(node, n.SignalThrow):
        d.event(parent, n.EventRef(n.EventKind.SIGNAL, node.signal))
    else:
        d.event(parent, node.event)


TRIGGER = TriggerKind(
    name="signal",
    definition="signalEventDefinition",
    activity_types={
        "start": "signalStartEvent",
        "intermediate_catch": "intermediateSignalCatch",
        "intermediate_throw": "intermediateSignalThrow",
        "boundary": "boundarySignal",
    },
    draw=draw,
)


def draw_throw(parent: Element, node: n.SignalThrow, attrs: dict[str, str], d: Drawing) -> Element:
    return d.element(parent, "intermediateThrowEvent", attrs)


THROW = ElementKind(
    node=n.SignalThrow,
    parse={"intermediateThrowEvent": parse_throw, "endEvent": parse_end},
    behave=signal_throw,
    activity_type=lambda node: "intermediateSignalThrow",
    draw=draw_throw,
    build=("throw_signal",),
    position="intermediate_throw",
    trigger=lambda node: "signal",
)
