"""Multi-instance markers in every spelling, as a :class:`~bpm.model.nodes.MultiInstance`,
and standard loop markers, as a :class:`~bpm.model.nodes.StandardLoop`.

* BPMN: ``isSequential``, ``loopCardinality``, ``completionCondition``,
  ``loopDataInputRef`` (the collection variable) and ``inputDataItem name`` (the element);
* Camunda 7, Activiti, Flowable: ``camunda:collection`` (a variable name or ``${...}``)
  and ``camunda:elementVariable``;
* Zeebe: ``zeebe:loopCharacteristics inputCollection inputElement outputCollection
  outputElement`` (FEEL after ``=``).

Expressions become CEL the way conditions do (``${JUEL}``, ``=FEEL``, or CEL).
"""

from __future__ import annotations

from xml.etree.ElementTree import Element

from bpm.bpmn.context import Context
from bpm.bpmn.extensions import read_extensions, warn_attributes
from bpm.bpmn.namespaces import java_engine, local
from bpm.errors import ExpressionError
from bpm.expressions import native_feel, to_cel
from bpm.model import nodes as n

__all__ = ["read_loop"]

_USES = frozenset({"collection", "elementVariable"})


def _child_text(el: Element, name: str) -> str | None:
    for child in el:
        if local(child) == name:
            return (child.text or "").strip() or None
    return None


def _cel(owner: Element, where: Element, what: str, text: str | None, ctx: Context) -> str | None:
    if text is None or not text.strip():
        return None
    try:
        return to_cel(text)
    except ExpressionError as exc:
        ctx.report_in(owner, where, f"the {what} of '{owner.get('id')}': {exc}")
        ctx.placeholders.add(owner.get("id", ""))  # refused already: blamed for nothing else
        return None


def _feel(owner: Element, where: Element, what: str, text: str | None, ctx: Context) -> str | None:
    """A Zeebe expression attribute: ``=`` FEEL, or (for names) the text itself."""
    if text is None or not text.strip():
        return None
    body = text.strip()
    try:
        return native_feel(body) if body.startswith("=") else to_cel(body)
    except ExpressionError as exc:
        ctx.report_in(owner, where, f"the {what} of '{owner.get('id')}': {exc}")
        ctx.placeholders.add(owner.get("id", ""))  # refused already: blamed for nothing else
        return None


def _name(text: str | None) -> str | None:
    if text is None:
        return None
    body = text.strip().lstrip("=").strip()
    return body or None


def read_loop(owner: Element, ctx: Context) -> n.MultiInstance | None:
    """The multi-instance or standard loop marker of an activity, if it has one."""
    found: n.MultiInstance | None = None
    for el in owner:
        name = local(el)
        if name == "standardLoopCharacteristics":
            found = _standard_loop(owner, el, ctx)
        elif name == "multiInstanceLoopCharacteristics":
            found = _multi_instance(owner, el, ctx)
    return found


def _standard_loop(owner: Element, el: Element, ctx: Context) -> n.StandardLoop:
    """``standardLoopCharacteristics``: ``loopCondition`` (an expression, as conditions
    are written), ``testBefore``, ``loopMaximum`` (a whole number)."""
    read_extensions(el, ctx)
    warn_attributes(el, ctx)
    maximum: int | None = None
    text = (el.get("loopMaximum") or "").strip()
    if text:
        try:
            maximum = int(text)
        except ValueError:
            maximum = -1  # reported just below, as a negative one is
        if maximum < 0:
            ctx.report_in(
                owner,
                el,
                f"the loopMaximum '{text}' of '{owner.get('id')}' is not a whole number >= 0",
            )
            ctx.placeholders.add(owner.get("id", ""))
            maximum = None
    condition = _cel(owner, el, "loop condition", _child_text(el, "loopCondition"), ctx)
    if not text and _child_text(el, "loopCondition") is None:
        # Said here, at the marker's line (the deploy check says it of builder models).
        ctx.report_in(
            owner,
            el,
            f"the standard loop marker of '{owner.get('id')}' has neither a loopCondition "
            "nor a loopMaximum: it would run for ever; say while it runs again, or how often "
            "at most",
        )
        ctx.placeholders.add(owner.get("id", ""))
    return n.StandardLoop(
        condition=condition,
        test_before=(el.get("testBefore") or "").strip().lower() == "true",
        maximum=maximum,
    )


def _multi_instance(owner: Element, el: Element, ctx: Context) -> n.MultiInstance:
    ext = read_extensions(el, ctx, frozenset({"loopCharacteristics"}))
    warn_attributes(el, ctx, _USES)
    sequential = (el.get("isSequential") or "").strip().lower() == "true"
    collection = java_engine(el, "collection")
    element = java_engine(el, "elementVariable")
    out = {
        "cardinality": _cel(owner, el, "loop cardinality", _child_text(el, "loopCardinality"), ctx),
        "completion": _cel(
            owner, el, "completion condition", _child_text(el, "completionCondition"), ctx
        ),
        "collection": _cel(owner, el, "collection", collection[1] if collection else None, ctx),
        "element": _name(element[1]) if element else None,
        "output_collection": None,
        "output_element": None,
    }
    data_input = _child_text(el, "loopDataInputRef")
    if out["collection"] is None and data_input is not None:
        out["collection"] = _cel(owner, el, "collection", data_input, ctx)
    for child in el:
        if local(child) == "inputDataItem" and out["element"] is None:
            out["element"] = _name(child.get("name") or child.get("id"))
    zeebe = ext.zeebe.get("loopCharacteristics")
    if zeebe is not None:
        out["collection"] = (
            _feel(owner, zeebe, "inputCollection", zeebe.get("inputCollection"), ctx)
            or out["collection"]
        )
        out["element"] = _name(zeebe.get("inputElement")) or out["element"]
        out["output_collection"] = _name(zeebe.get("outputCollection"))
        out["output_element"] = _feel(
            owner, zeebe, "outputElement", zeebe.get("outputElement"), ctx
        )
    return n.MultiInstance(parallel=not sequential, **out)
