"""BPMN XML for the cockpit's diagram: the deployed file when it can be drawn as it is, else
the model written out with a generated ``bpmndi`` diagram (see :mod:`bpm.cockpit.layout`).

Pure functions; the generated XML is for drawing only (bpmn-js), not for deploying.
"""

from __future__ import annotations

from xml.etree.ElementTree import Element, SubElement, register_namespace, tostring

from defusedxml import ElementTree as SafeET

from bpm.cockpit.layout import Box, Layout, flow_label, layout
from bpm.model import nodes as n
from bpm.model.process import ProcessModel

BPMN = "http://www.omg.org/spec/BPMN/20100524/MODEL"
BPMNDI = "http://www.omg.org/spec/BPMN/20100524/DI"
DC = "http://www.omg.org/spec/DD/20100524/DC"
DI = "http://www.omg.org/spec/DD/20100524/DI"
XSI = "http://www.w3.org/2001/XMLSchema-instance"

for _prefix, _uri in (("bpmn", BPMN), ("bpmndi", BPMNDI), ("dc", DC), ("di", DI), ("xsi", XSI)):
    register_namespace(_prefix, _uri)

_TIMER_TAG = {
    n.TimerKind.DURATION: "timeDuration",
    n.TimerKind.DATE: "timeDate",
    n.TimerKind.CYCLE: "timeCycle",
}


def diagram_xml(model: ProcessModel, source: str) -> str:
    """What to draw for a deployed definition: ``source`` if it has a shape for every
    node of ``model``, else the model with a generated diagram."""
    if source and has_diagram_for(model, source):
        return source
    return model_to_bpmn(model)


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


def _node_element(parent: Element, node: n.Node) -> Element:
    attrs = {"id": node.id}
    if node.name:
        attrs["name"] = node.name
    elif isinstance(node, (n.ServiceTask, n.UserTask, n.DecisionTask)):
        attrs["name"] = node.id  # an unnamed box says nothing; its id at least tells which
    if isinstance(node, n.Activity) and node.for_compensation:
        attrs["isForCompensation"] = "true"
    if isinstance(node, n.StartEvent):
        el = SubElement(parent, _q(BPMN, "startEvent"), attrs)
        _event(el, node.event)
        return el
    if isinstance(node, n.CatchEvent):
        el = SubElement(parent, _q(BPMN, "intermediateCatchEvent"), attrs)
        _event(el, node.event)
        return el
    if isinstance(node, n.SignalThrow):
        el = SubElement(parent, _q(BPMN, "intermediateThrowEvent"), attrs)
        _event(el, n.EventRef(n.EventKind.SIGNAL, node.signal))
        return el
    if isinstance(node, n.ReceiveTask):
        return SubElement(parent, _q(BPMN, "receiveTask"), attrs)
    if isinstance(node, n.EventBasedGateway):
        return SubElement(parent, _q(BPMN, "eventBasedGateway"), attrs)
    if isinstance(node, n.EndEvent):
        el = SubElement(parent, _q(BPMN, "endEvent"), attrs)
        if node.kind is n.EndKind.TERMINATE:
            SubElement(el, _q(BPMN, "terminateEventDefinition"))
        elif node.kind is n.EndKind.ERROR:
            SubElement(el, _q(BPMN, "errorEventDefinition"))
        elif node.kind is n.EndKind.ESCALATION:
            SubElement(el, _q(BPMN, "escalationEventDefinition"))
        elif node.kind is n.EndKind.COMPENSATE:
            _compensate(el, node.activity_ref)
        return el
    if isinstance(node, n.CompensationThrowEvent):
        el = SubElement(parent, _q(BPMN, "intermediateThrowEvent"), attrs)
        _compensate(el, node.activity_ref)
        return el
    if isinstance(node, n.EscalationThrowEvent | n.LinkThrowEvent):
        el = SubElement(parent, _q(BPMN, "intermediateThrowEvent"), attrs)
        _throw_definition(el, node)
        return el
    if isinstance(node, n.LinkCatchEvent):
        el = SubElement(parent, _q(BPMN, "intermediateCatchEvent"), attrs)
        SubElement(el, _q(BPMN, "linkEventDefinition"), {"name": node.link})
        return el
    if isinstance(node, n.ServiceTask):
        return SubElement(parent, _q(BPMN, "serviceTask"), attrs)
    if isinstance(node, n.DecisionTask):
        return SubElement(parent, _q(BPMN, "businessRuleTask"), attrs)
    if isinstance(node, n.UserTask):
        return SubElement(parent, _q(BPMN, "userTask"), attrs)
    if isinstance(node, n.ExclusiveGateway):
        if node.default_flow:
            attrs["default"] = node.default_flow
        return SubElement(parent, _q(BPMN, "exclusiveGateway"), attrs)
    if isinstance(node, n.ParallelGateway):
        return SubElement(parent, _q(BPMN, "parallelGateway"), attrs)
    if isinstance(node, n.InclusiveGateway):
        if node.default_flow:
            attrs["default"] = node.default_flow
        return SubElement(parent, _q(BPMN, "inclusiveGateway"), attrs)
    if isinstance(node, n.CallActivity):
        attrs["calledElement"] = node.called_element
        return SubElement(parent, _q(BPMN, "callActivity"), attrs)
    if isinstance(node, n.TimerCatchEvent):
        el = SubElement(parent, _q(BPMN, "intermediateCatchEvent"), attrs)
        _timer(el, node.timer)
        return el
    if isinstance(node, n.BoundaryEvent):
        attrs["attachedToRef"] = node.attached_to
        attrs["cancelActivity"] = "true" if node.cancel_activity else "false"
        el = SubElement(parent, _q(BPMN, "boundaryEvent"), attrs)
        if node.timer is not None:
            _timer(el, node.timer)
        elif node.is_compensation:
            SubElement(el, _q(BPMN, "compensateEventDefinition"))
        elif node.escalation:
            SubElement(el, _q(BPMN, "escalationEventDefinition"))
        elif node.event is not None:
            _event(el, node.event)
        else:
            SubElement(el, _q(BPMN, "errorEventDefinition"))
        return el
    # A kind added to the model later still shows up, as a plain task.
    return SubElement(parent, _q(BPMN, "task"), attrs)


def _compensate(parent: Element, activity_ref: str | None) -> None:
    attrs = {"activityRef": activity_ref} if activity_ref else {}
    SubElement(parent, _q(BPMN, "compensateEventDefinition"), attrs)


def _throw_definition(parent: Element, node: n.EscalationThrowEvent | n.LinkThrowEvent) -> None:
    if isinstance(node, n.LinkThrowEvent):
        SubElement(parent, _q(BPMN, "linkEventDefinition"), {"name": node.link})
    else:
        SubElement(parent, _q(BPMN, "escalationEventDefinition"))


def _event(parent: Element, ref: n.EventRef | None) -> None:
    """A message or signal definition, for the picture (the name is not needed there)."""
    if ref is not None:
        SubElement(parent, _q(BPMN, f"{ref.kind.value}EventDefinition"))


def _timer(parent: Element, spec: n.TimerSpec | None) -> None:
    definition = SubElement(parent, _q(BPMN, "timerEventDefinition"))
    if spec is not None:
        expr = SubElement(
            definition, _q(BPMN, _TIMER_TAG[spec.kind]), {_q(XSI, "type"): "bpmn:tFormalExpression"}
        )
        expr.text = spec.expression


def model_to_bpmn(model: ProcessModel, placed: Layout | None = None) -> str:
    """``model`` as BPMN 2.0 XML with a generated diagram (shapes and orthogonal edges)."""
    placed = placed or layout(model)
    root = Element(_q(BPMN, "definitions"), {"id": f"defs_{model.key}", "targetNamespace": BPMN})
    process = SubElement(root, _q(BPMN, "process"), {"id": model.key, "isExecutable": "true"})
    if model.name:
        process.set("name", model.name)
    for node in model.nodes.values():
        _node_element(process, node)
    for flow in model.flows:
        attrs = {"id": flow.id, "sourceRef": flow.source, "targetRef": flow.target}
        if flow_label(flow):  # drawn as its label: the name, else the condition
            attrs["name"] = flow_label(flow)
        el = SubElement(process, _q(BPMN, "sequenceFlow"), attrs)
        if flow.condition:
            cond = SubElement(
                el, _q(BPMN, "conditionExpression"), {_q(XSI, "type"): "bpmn:tFormalExpression"}
            )
            cond.text = flow.condition
    for node in model.nodes.values():  # a compensation event points at its handler
        if isinstance(node, n.BoundaryEvent) and node.compensate_with:
            attrs = {
                "id": f"{node.id}_association",
                "associationDirection": "One",
                "sourceRef": node.id,
                "targetRef": node.compensate_with,
            }
            SubElement(process, _q(BPMN, "association"), attrs)
    diagram = SubElement(root, _q(BPMNDI, "BPMNDiagram"), {"id": f"diagram_{model.key}"})
    plane = SubElement(
        diagram, _q(BPMNDI, "BPMNPlane"), {"id": f"plane_{model.key}", "bpmnElement": model.key}
    )
    for node_id, box in placed.shapes.items():
        attrs = {"id": f"{node_id}_di", "bpmnElement": node_id}
        if isinstance(model.nodes[node_id], n.ExclusiveGateway):
            attrs["isMarkerVisible"] = "true"
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
