"""BPMN XML for the cockpit's diagram: the deployed file when it can be drawn as it is, else
the model written out with a generated ``bpmndi`` diagram (see :mod:`bpm.cockpit.layout`).

Pure functions; the generated XML is for drawing only (bpmn-js), not for deploying.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from xml.etree.ElementTree import Element, SubElement, register_namespace, tostring

from defusedxml import ElementTree as SafeET

from bpm.cockpit.layout import Box, Layout, flow_label, layout
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from bpm.scripts.conditions import PYTHON_CONDITION, is_python_condition

BPMN = "http://www.omg.org/spec/BPMN/20100524/MODEL"
BPMNDI = "http://www.omg.org/spec/BPMN/20100524/DI"
DC = "http://www.omg.org/spec/DD/20100524/DC"
DI = "http://www.omg.org/spec/DD/20100524/DI"
XSI = "http://www.w3.org/2001/XMLSchema-instance"
CAMUNDA = "http://camunda.org/schema/1.0/bpmn"

for _prefix, _uri in (
    ("bpmn", BPMN),
    ("bpmndi", BPMNDI),
    ("dc", DC),
    ("di", DI),
    ("xsi", XSI),
    ("camunda", CAMUNDA),
):
    register_namespace(_prefix, _uri)

_TIMER_TAG = {
    n.TimerKind.DURATION: "timeDuration",
    n.TimerKind.DATE: "timeDate",
    n.TimerKind.CYCLE: "timeCycle",
}


def diagram_xml(model: ProcessModel, source: str, *, draw: Draw) -> str:
    """What to draw for a deployed definition: ``source`` if it has a shape for every
    node of ``model``, else the model with a generated diagram (``draw``: see
    :func:`model_to_bpmn`)."""
    if source and has_diagram_for(model, source):
        return source
    return model_to_bpmn(model, draw=draw)


def has_diagram_for(model: ProcessModel, source: str) -> bool:
    """Whether ``source`` holds BPMN DI with a shape for every node of ``model``."""
    try:
        root = SafeET.fromstring(source.encode("utf-8"))
    except Exception:  # the stored source was parsed at deploy; be defensive anyway
        return False
    drawn = {
        el.get("bpmnElement")
        for el in root.iter(f"{{{BPMNDI}}}BPMNShape")
        if el.get("bpmnElement") is not None
    }
    return bool(drawn) and all(node_id in drawn for node_id in model.nodes)


def _q(ns: str, tag: str) -> str:
    return f"{{{ns}}}{tag}"


class Drawing:
    """The root elements (messages, signals, errors, escalations) the drawn nodes refer
    to, each written once before the process, so the drawing parses back to the model's
    kinds (a drawing is for bpmn-js, but what it says must still be true)."""

    def __init__(self, root: Element) -> None:
        self.root = root
        self._ids: dict[tuple[str, str], str] = {}

    def ref(self, tag: str, value: str) -> str:
        """The id of the root ``tag`` element named (or coded) ``value``."""
        key = (tag, value)
        if key not in self._ids:
            ref = f"{tag}_{len(self._ids) + 1}"
            attr = {"message": "name", "signal": "name"}.get(tag, f"{tag}Code")
            self.root.insert(len(self._ids), Element(_q(BPMN, tag), {"id": ref, attr: value}))
            self._ids[key] = ref
        return self._ids[key]

    def element(
        self, parent: Element, tag: str, attrs: dict[str, str], definition: str | None = None
    ) -> Element:
        """``<tag attrs>`` in ``parent``, with an empty ``definition`` child if given."""
        el = SubElement(parent, _q(BPMN, tag), attrs)
        if definition is not None:
            SubElement(el, _q(BPMN, definition))
        return el

    def event(self, parent: Element, ref: n.EventRef | None) -> None:
        """A message or signal definition naming its root element."""
        if ref is not None:
            tag = ref.kind.value
            attrs = {f"{tag}Ref": self.ref(tag, ref.name)}
            SubElement(parent, _q(BPMN, f"{tag}EventDefinition"), attrs)

    def error(self, parent: Element, code: str | None) -> None:
        attrs = {"errorRef": self.ref("error", code)} if code is not None else {}
        SubElement(parent, _q(BPMN, "errorEventDefinition"), attrs)

    def escalation(self, parent: Element, code: str | None) -> None:
        attrs = {"escalationRef": self.ref("escalation", code)} if code is not None else {}
        SubElement(parent, _q(BPMN, "escalationEventDefinition"), attrs)

    def compensate(self, parent: Element, activity_ref: str | None) -> None:
        attrs = {"activityRef": activity_ref} if activity_ref else {}
        SubElement(parent, _q(BPMN, "compensateEventDefinition"), attrs)

    def link(self, parent: Element, name: str) -> None:
        SubElement(parent, _q(BPMN, "linkEventDefinition"), {"name": name})

    def timer(self, parent: Element, spec: n.TimerSpec | None) -> None:
        definition = SubElement(parent, _q(BPMN, "timerEventDefinition"))
        if spec is not None:
            attrs = {_q(XSI, "type"): "bpmn:tFormalExpression"}
            expr = SubElement(definition, _q(BPMN, _TIMER_TAG[spec.kind]), attrs)
            expr.text = spec.expression


Draw = Callable[[Element, Any, dict[str, str], Drawing], Element]
"""Writes one node into its parent element: ``attrs`` holds its id and name. The kinds
registry (:mod:`bpm.kinds`) hands the one that knows every kind."""

_NAMED_BY_ID = (n.ServiceTask, n.UserTask, n.DecisionTask)


def _node_element(parent: Element, node: n.Node, d: Drawing, draw: Draw) -> Element:
    attrs = {"id": node.id}
    if node.name:
        attrs["name"] = node.name
    elif isinstance(node, _NAMED_BY_ID):
        attrs["name"] = node.id  # an unnamed box says nothing; its id at least tells which
    if isinstance(node, n.Activity) and node.for_compensation:
        attrs["isForCompensation"] = "true"
    if isinstance(node, n.Activity) and node.default_flow:
        attrs["default"] = node.default_flow
    return draw(parent, node, attrs, d)


def model_to_bpmn(model: ProcessModel, placed: Layout | None = None, *, draw: Draw) -> str:
    """``model`` as BPMN 2.0 XML with a generated diagram (shapes and orthogonal edges);
    ``draw`` writes each node (the kinds registry's, :func:`bpm.kinds.model_to_bpmn`)."""
    placed = placed or layout(model)
    root = Element(_q(BPMN, "definitions"), {"id": f"defs_{model.key}", "targetNamespace": BPMN})
    process = SubElement(root, _q(BPMN, "process"), {"id": model.key, "isExecutable": "true"})
    if model.name:
        process.set("name", model.name)
    drawing = Drawing(root)
    # Drawn in their containers (a sub-process holds its nodes and flows), outer ones first.
    where: dict[str | None, Element] = {None: process}
    for node in sorted(model.nodes.values(), key=lambda x: model.depth(x.id)):
        parent = where.get(node.container, process)
        where[node.id] = _node_element(parent, node, drawing, draw)
    for flow in model.flows:
        source = model.nodes.get(flow.source)
        parent = where.get(source.container if source is not None else None, process)
        attrs = {"id": flow.id, "sourceRef": flow.source, "targetRef": flow.target}
        if flow_label(flow):  # drawn as its label: the name, else the condition
            attrs["name"] = flow_label(flow)
        el = SubElement(parent, _q(BPMN, "sequenceFlow"), attrs)
        if flow.condition:
            cond_attrs = {_q(XSI, "type"): "bpmn:tFormalExpression"}
            cond_text = flow.condition
            if is_python_condition(cond_text):
                cond_attrs["language"] = "python"
                cond_text = cond_text[len(PYTHON_CONDITION) :]
            cond = SubElement(el, _q(BPMN, "conditionExpression"), cond_attrs)
            cond.text = cond_text
    for node in model.boundary_events.values():  # a compensation event points at its handler
        if node.compensate_with:
            attrs = {
                "id": f"{node.id}_association",
                "associationDirection": "One",
                "sourceRef": node.id,
                "targetRef": node.compensate_with,
            }
            SubElement(where.get(node.container, process), _q(BPMN, "association"), attrs)
    diagram = SubElement(root, _q(BPMNDI, "BPMNDiagram"), {"id": f"diagram_{model.key}"})
    plane = SubElement(
        diagram, _q(BPMNDI, "BPMNPlane"), {"id": f"plane_{model.key}", "bpmnElement": model.key}
    )
    for node_id, box in placed.shapes.items():
        attrs = {"id": f"{node_id}_di", "bpmnElement": node_id}
        if isinstance(model.nodes[node_id], n.ExclusiveGateway):
            attrs["isMarkerVisible"] = "true"
        elif model.nodes[node_id].holds_nodes:
            attrs["isExpanded"] = "true"  # its nodes are drawn on this plane
        shape = SubElement(plane, _q(BPMNDI, "BPMNShape"), attrs)
        _bounds(shape, box)
    for flow_id, points in placed.edges.items():
        edge = SubElement(
            plane, _q(BPMNDI, "BPMNEdge"), {"id": f"{flow_id}_di", "bpmnElement": flow_id}
        )
        for x, y in points:
            SubElement(edge, _q(DI, "waypoint"), {"x": _num(x), "y": _num(y)})
        if flow_id in placed.labels:
            _bounds(SubElement(edge, _q(BPMNDI, "BPMNLabel")), placed.labels[flow_id])
    text: str = tostring(root, encoding="unicode", xml_declaration=False)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + text


def _bounds(parent: Element, box: Box) -> None:
    attrs = {"x": _num(box.x), "y": _num(box.y), "width": _num(box.w), "height": _num(box.h)}
    SubElement(parent, _q(DC, "Bounds"), attrs)


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"
