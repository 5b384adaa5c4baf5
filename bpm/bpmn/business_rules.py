"""``businessRuleTask``: a DMN decision the engine evaluates, or work bound like a service task.

A business rule task that names a decision evaluates it in the step's own transaction (no
worker, no round trip) and writes the result to a variable:

* Camunda 7: ``camunda:decisionRef="d"`` (or ``${var}``), ``camunda:decisionRefBinding``
  (``latest``, the default; ``deployment``: the one deployed with the process; ``version``
  with ``camunda:decisionRefVersion``; ``versionTag`` with
  ``camunda:decisionRefVersionTag``), ``camunda:resultVariable`` and
  ``camunda:mapDecisionResult`` (``singleEntry``, ``singleResult``, ``collectEntries``,
  ``resultList``, the default);
* Camunda 8: ``<zeebe:calledDecision decisionId="d" resultVariable="r"/>`` (optionally
  ``bindingType`` ``latest``/``deployment``/``versionTag`` with ``versionTag``): the
  decision's value goes to ``r`` as it is; ``decisionId="=..."`` is FEEL giving the id.

Without either, the task keeps its meaning as a service task (a handler or an external
task: :mod:`bpm.bpmn.bindings`).
"""

from __future__ import annotations

from typing import Any
from xml.etree.ElementTree import Element

from bpm.bpmn.context import Context, base, event_definitions
from bpm.bpmn.extensions import read_extensions, warn_attributes
from bpm.bpmn.mappings import IO_USES
from bpm.bpmn.namespaces import ZEEBE_NS, java_engine, local, ours, split
from bpm.bpmn.scopes import activity_fields
from bpm.bpmn.tasks import parse_service
from bpm.errors import ExpressionError
from bpm.expressions import native_feel
from bpm.model import nodes as n

__all__ = ["parse_business_rule"]

USES = frozenset(
    {
        "decisionRef", "decisionRefBinding", "decisionRefVersion", "decisionRefVersionTag",
        "resultVariable", "mapDecisionResult",
    }
)  # fmt: skip
"""Engine attributes a decision task reads."""

_BINDINGS = {b.value: b for b in n.CallBinding}
_ZEEBE_BINDINGS = {"latest": n.CallBinding.LATEST, "deployment": n.CallBinding.DEPLOYMENT,
                   "versionTag": n.CallBinding.VERSION_TAG}  # fmt: skip
_CAMUNDA_MAPPINGS = ("singleEntry", "singleResult", "collectEntries", "resultList")
# What would also bind the task to a handler or a worker: a decision task has neither.
_JAVA_BINDINGS = ("class", "expression", "delegateExpression", "type", "topic")


def _called_decision(el: Element) -> Element | None:
    for ext in el:
        if local(ext) == "extensionElements":
            for item in ext:
                if split(item.tag) == (ZEEBE_NS, "calledDecision"):
                    return item
    return None


def _has_zeebe(el: Element, name: str) -> bool:
    return any(
        split(item.tag) == (ZEEBE_NS, name)
        for ext in el
        if local(ext) == "extensionElements"
        for item in ext
    )


def parse_business_rule(el: Element, ctx: Context) -> n.Node:
    """A :class:`~bpm.model.nodes.DecisionTask` when the task names a decision, else
    what :func:`~bpm.bpmn.tasks.parse_service` makes of it."""
    ref = java_engine(el, "decisionRef")
    zeebe = _called_decision(el)
    if ref is None and zeebe is None:
        return parse_service(el, ctx)
    event_definitions(el, ctx, frozenset(), activity=True)
    node_id, name, line = base(el, ctx)
    ext = read_extensions(el, ctx, IO_USES | {"calledDecision"})
    warn_attributes(el, ctx, USES)
    _refuse_second_binding(el, ctx, node_id)
    if ref is not None and zeebe is not None:
        ctx.report(
            el,
            f"'{node_id}' names a decision twice ({ref[0]} and zeebe:calledDecision): keep one",
        )
    if zeebe is not None and ref is None:
        fields = _zeebe(el, zeebe, ctx, node_id)
    else:
        fields = _camunda(el, ctx, node_id)
    return n.DecisionTask(node_id, name, line, **fields, **activity_fields(el, ext, ctx))


def _refuse_second_binding(el: Element, ctx: Context, node_id: str) -> None:
    found = [prefixed for attr in _JAVA_BINDINGS if (prefixed := java_engine(el, attr))]
    found += [
        (f"bpm:{attr}", value)
        for attr in ("handler", "topic", "celeryTask")
        if (value := ours(el, attr))
    ]
    if _has_zeebe(el, "taskDefinition"):
        found.append(("zeebe:taskDefinition", ""))
    if found:
        listed = ", ".join(label for label, _ in found)
        ctx.report(
            el,
            f"'{node_id}' evaluates a decision and is also bound to work ({listed}): keep one "
            "(a decision task has no handler or worker)",
        )


def _camunda(el: Element, ctx: Context, node_id: str) -> dict[str, Any]:
    ref = java_engine(el, "decisionRef")
    decision = (ref[1] if ref else "").strip().replace("#{", "${")
    binding = n.CallBinding.LATEST
    binding_text = java_engine(el, "decisionRefBinding")
    if binding_text is not None and binding_text[1].strip():
        found = _BINDINGS.get(binding_text[1].strip())
        if found is None:
            ctx.report(
                el,
                f"{binding_text[0]} '{binding_text[1]}' of '{node_id}' is not one of latest, "
                "deployment, version, versionTag",
            )
        else:
            binding = found
    version: str | None = None
    if binding is n.CallBinding.VERSION:
        version = (java_engine(el, "decisionRefVersion") or ("", ""))[1].strip() or None
    elif binding is n.CallBinding.VERSION_TAG:
        version = (java_engine(el, "decisionRefVersionTag") or ("", ""))[1].strip() or None
    result = java_engine(el, "resultVariable")
    result_variable = result[1].strip() if result is not None else None
    mapping = java_engine(el, "mapDecisionResult")
    map_result = (mapping[1].strip() if mapping is not None else "") or "resultList"
    if map_result not in _CAMUNDA_MAPPINGS:
        assert mapping is not None
        ctx.report(
            el,
            f"{mapping[0]} '{map_result}' of '{node_id}' is not a decision result mapping: "
            "use singleEntry, singleResult, collectEntries or resultList",
        )
        map_result = "resultList"  # reported: the model's own check stays quiet
    if mapping is not None and result is None:
        ctx.warn(
            el,
            el,
            f"{mapping[0]} on '{node_id}' without camunda:resultVariable: the decision's "
            "result is not stored",
        )
    return {
        "decision": decision,
        "binding": binding,
        "version": version,
        "result_variable": result_variable,
        "map_result": map_result,
    }


def _zeebe(el: Element, item: Element, ctx: Context, node_id: str) -> dict[str, Any]:
    decision = (item.get("decisionId") or "").strip()
    if decision.startswith("="):
        body = decision[1:].strip()
        if len(body) >= 2 and body[0] == body[-1] == '"':
            decision = body[1:-1]
        elif body.replace("_", "a").isalnum():
            decision = "${" + body + "}"
        else:
            try:
                decision = native_feel(decision)  # evaluated when the task is reached
            except ExpressionError as exc:
                ctx.report_in(el, item, f"zeebe:calledDecision decisionId of '{node_id}': {exc}")
    result_variable = (item.get("resultVariable") or "").strip()
    if not result_variable:
        ctx.report_in(
            el,
            item,
            f"zeebe:calledDecision of '{node_id}' has no resultVariable: name the variable "
            "the decision's value goes to",
        )
    binding = n.CallBinding.LATEST
    binding_text = (item.get("bindingType") or "").strip()
    if binding_text:
        found = _ZEEBE_BINDINGS.get(binding_text)
        if found is None:
            ctx.report_in(
                el,
                item,
                f"zeebe:calledDecision bindingType '{binding_text}' of '{node_id}' is not one "
                "of latest, deployment, versionTag",
            )
        else:
            binding = found
    version = (item.get("versionTag") or "").strip() or None
    return {
        "decision": decision,
        "binding": binding,
        "version": version if binding is n.CallBinding.VERSION_TAG else None,
        "result_variable": result_variable or None,
        "map_result": "value",
    }
