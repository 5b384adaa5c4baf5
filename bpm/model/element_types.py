"""The BPMN element a model node stands for, as problems and messages name it."""

from __future__ import annotations

from bpm.model import nodes as n

__all__ = ["element_type"]


def element_type(node: n.Node | n.Flow) -> str:
    """The BPMN element a node stands for (``bpmn:serviceTask``), for messages."""
    if isinstance(node, n.PassThrough):
        return f"bpmn:{node.element}"
    kind = {
        n.Flow: "sequenceFlow",
        n.TimerCatchEvent: "intermediateCatchEvent",
        n.CompensationThrowEvent: "intermediateThrowEvent",
        n.LinkCatchEvent: "intermediateCatchEvent",
        n.EscalationThrowEvent: "intermediateThrowEvent",
        n.LinkThrowEvent: "intermediateThrowEvent",
        n.CatchEvent: "intermediateCatchEvent",
        n.SignalThrow: "intermediateThrowEvent",
        n.EventSubProcess: "subProcess",
        n.DecisionTask: "businessRuleTask",
    }.get(type(node), type(node).__name__[:1].lower() + type(node).__name__[1:])
    return f"bpmn:{kind}"
