"""The BPMN element a model node stands for, as problems and messages name it."""

from __future__ import annotations

from bpm.model import nodes as n

__all__ = ["element_type"]


def element_type(node: n.Node | n.Flow) -> str:
    """The BPMN element a node stands for (``bpmn:serviceTask``), for messages."""
    if isinstance(node, n.PassThrough):
        return f"bpmn:{node.element}"
    return f"bpmn:{node.tag}" if isinstance(node, n.Node) else "bpmn:sequenceFlow"
