"""One small parse function per BPMN element kind, registered in :data:`ELEMENTS`.

Each function reads one element into a node or flow and reports what it cannot use to
the :class:`Context`; it still returns its best reading (or a placeholder), so the graph
checks that run afterwards see the whole process and blame nothing twice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from xml.etree.ElementTree import Element

from bpm.bpmn.context import Context, base
from bpm.bpmn.extensions import read_extensions, warn_attributes
from bpm.bpmn.namespaces import java_engine, local
from bpm.errors import ExpressionError
from bpm.expressions import to_cel
from bpm.model import nodes as n
from bpm.scripts import is_python
from bpm.scripts.conditions import PYTHON_CONDITION

__all__ = ["ELEMENTS", "Context", "ElementParser"]

ElementParser = Callable[[Element, Context], n.Node | n.Flow]

# Languages a conditionExpression may declare; the text is then CEL, ${JUEL} or =FEEL.
_CONDITION_LANGUAGES = frozenset(
    {"", "cel", "juel", "feel", "http://www.omg.org/spec/feel/20140401"}
)


def parse_exclusive(el: Element, ctx: Context) -> n.Node:
    """``exclusiveGateway`` with its optional ``default`` flow."""
    read_extensions(el, ctx)
    warn_attributes(el, ctx)
    node_id, name, line = base(el, ctx)
    return n.ExclusiveGateway(node_id, name, line, default_flow=el.get("default") or None)


def parse_parallel(el: Element, ctx: Context) -> n.Node:
    """``parallelGateway``: fork and/or join."""
    read_extensions(el, ctx)
    warn_attributes(el, ctx)
    node_id, name, line = base(el, ctx)
    return n.ParallelGateway(node_id, name, line)


def _condition(el: Element, child: Element, ctx: Context) -> str | None:
    # BPMN's definitions@expressionLanguage is the default of every formal expression: a
    # model that says Python there (SpiffWorkflow's convention) means its conditions.
    default = (ctx.doc.root.get("expressionLanguage") or "").strip().lower()
    language = (child.get("language") or (default if is_python(default) else "")).strip().lower()
    if is_python(language):
        if java_engine(child, "resource") is not None:
            ctx.report_in(el, child, "a Python condition must be written inline")
            return None
        # Compiled (and refused) at deploy by the validator; run in the script sandbox.
        text = (child.text or "").strip()
        return PYTHON_CONDITION + text if text else None
    if language not in _CONDITION_LANGUAGES:
        ctx.report_in(
            el,
            child,
            f"condition language '{language}' is not supported: remove the language "
            "attribute and write a CEL expression such as ${amount > 100}",
        )
        return None
    resource = java_engine(child, "resource")
    if resource is not None:
        ctx.report_in(el, child, f"{resource[0]}: write the condition inline, in CEL")
        return None
    text = (child.text or "").strip()
    if not text:
        return None  # an empty condition element: no condition
    try:
        return to_cel(text)
    except ExpressionError as exc:
        ctx.report_in(el, child, f"flow '{el.get('id') or ''}': {exc}")
        return None


def parse_flow(el: Element, ctx: Context) -> n.Flow:
    """``sequenceFlow`` with an optional ``conditionExpression`` (CEL, ``${JUEL}`` or
    ``=FEEL``, stored as CEL). A flow without ``id`` gets one from the parser."""
    flow_id, name, line = base(el, ctx)
    condition: str | None = None
    for child in el:
        if local(child) == "conditionExpression":
            condition = _condition(el, child, ctx)
    warn_attributes(el, ctx)
    read_extensions(el, ctx)
    for ref in ("sourceRef", "targetRef"):
        if not el.get(ref):
            ctx.report(el, f"sequence flow '{flow_id}' has no {ref}: connect both ends")
    return n.Flow(flow_id, el.get("sourceRef", ""), el.get("targetRef", ""), condition, name, line)


ELEMENTS: dict[str, ElementParser] = {}
"""BPMN local name -> parse function, for the flow elements this engine runs.

Filled by the registry of kinds when it is built (:func:`install`, called by
:mod:`bpm.kinds`, which ``import bpm`` always loads first): each kind declares the tags it
parses, so a new kind is parsed without an edit here. This package does not import the
kinds; they import it."""


def install(parsers: Mapping[str, ElementParser]) -> None:
    """Hand the parser the registry's tag table (every kind's ``parse`` and ``sequenceFlow``)."""
    ELEMENTS.clear()
    ELEMENTS.update(parsers)
