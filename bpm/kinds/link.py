"""The link trigger: a throw jumps to the catch of the same name in the same scope."""

from __future__ import annotations

from typing import Any
from xml.etree.ElementTree import Element

from bpm.bpmn.events import parse_catch, parse_throw
from bpm.cockpit.diagram import Drawing
from bpm.kinds.spec import ElementKind, TriggerKind
from bpm.model import nodes as n
from bpm.runtime.intermediate import link_catch_event, link_throw_event


def draw(parent: Element, node: Any, d: Drawing) -> None:
    d.link(parent, node.link)


TRIGGER = TriggerKind(
    name="link",
    definition="linkEventDefinition",
    activity_types={
        "intermediate_catch": "intermediateLinkCatch",
        "intermediate_throw": "intermediateLinkThrow",  # Camunda records none
    },
    draw=draw,
)


def draw_throw(
    parent: Element, node: n.LinkThrowEvent, attrs: dict[str, str], d: Drawing
) -> Element:
    return d.element(parent, "intermediateThrowEvent", attrs)


def draw_catch(
    parent: Element, node: n.LinkCatchEvent, attrs: dict[str, str], d: Drawing
) -> Element:
    return d.element(parent, "intermediateCatchEvent", attrs)


THROW = ElementKind(
    node=n.LinkThrowEvent,
    parse={"intermediateThrowEvent": parse_throw},
    behave=link_throw_event,
    activity_type=lambda node: "intermediateLinkThrow",
    draw=draw_throw,
    build=("link_throw",),
    position="intermediate_throw",
    trigger=lambda node: "link",
)

CATCH = ElementKind(
    node=n.LinkCatchEvent,
    parse={"intermediateCatchEvent": parse_catch},
    behave=link_catch_event,
    activity_type=lambda node: "intermediateLinkCatch",
    draw=draw_catch,
    build=("link_catch",),
    position="intermediate_catch",
    trigger=lambda node: "link",
)
