"""Scopes: embedded and event sub-processes, call activities, inclusive gateways, and the
multi-instance markers and variable mappings every activity may carry.

A sub-process's children are parsed by the parser's container loop
(:func:`bpm.bpmn.parser`), which marks each with the sub-process as its ``container``.
"""

from __future__ import annotations

from typing import Any
from xml.etree.ElementTree import Element

from bpm.bpmn.compensation import is_for_compensation
from bpm.bpmn.context import Context, base, event_definitions
from bpm.bpmn.extensions import Extensions, read_extensions, warn_attributes
from bpm.bpmn.loops import read_loop
from bpm.bpmn.mappings import IO_USES, read_call_mappings, read_io
from bpm.bpmn.namespaces import java_engine, local
from bpm.errors import ExpressionError
from bpm.expressions import native_feel
from bpm.model import nodes as n
from bpm.timeexpr import variable_name

__all__ = ["activity_fields", "parse_call", "parse_inclusive", "parse_subprocess"]

_CALL_USES = frozenset({"calledElementBinding", "calledElementVersion", "calledElementVersionTag"})
_BINDINGS = {b.value: b for b in n.CallBinding}


def activity_fields(el: Element, ext: Extensions, ctx: Context) -> dict[str, Any]:
    """``loop``, ``inputs`` and ``outputs`` of an activity element."""
    inputs, outputs = read_io(el, ext, ctx)
    return {
        "loop": read_loop(el, ctx),
        "inputs": inputs,
        "outputs": outputs,
        "for_compensation": is_for_compensation(el),
    }


def parse_subprocess(el: Element, ctx: Context) -> n.Node:
    """``subProcess``: embedded, or an event sub-process (``triggeredByEvent="true"``)."""
    event_definitions(el, ctx, frozenset(), activity=True)
    node_id, name, line = base(el, ctx)
    ext = read_extensions(el, ctx, IO_USES)
    warn_attributes(el, ctx)
    if (el.get("triggeredByEvent") or "").strip().lower() == "true":
        fields = activity_fields(el, ext, ctx)
        if fields.pop("loop") is not None:
            ctx.report(
                el,
                f"event sub-process '{node_id}' has a multi-instance marker: an event "
                "sub-process runs once per event, remove it",
            )
        if fields.pop("for_compensation"):
            # Redundant on a compensation event sub-process (Camunda Modeler writes it
            # there): its compensation start makes it the handler. Elsewhere it means
            # nothing: said, and ignored.
            compensates = any(
                local(start) == "startEvent"
                and any(local(d) == "compensateEventDefinition" for d in start)
                for start in el
            )
            if not compensates:
                ctx.warn(
                    el,
                    el,
                    f"isForCompensation=\"true\" on event sub-process '{node_id}' is ignored: "
                    "an event sub-process runs when its start event's trigger happens",
                )
        return n.EventSubProcess(node_id, name, line, **fields)
    return n.SubProcess(node_id, name, line, **activity_fields(el, ext, ctx))


def parse_inclusive(el: Element, ctx: Context) -> n.Node:
    """``inclusiveGateway`` with its optional ``default`` flow."""
    read_extensions(el, ctx)
    warn_attributes(el, ctx)
    node_id, name, line = base(el, ctx)
    return n.InclusiveGateway(node_id, name, line, default_flow=el.get("default") or None)


def _called_element(el: Element, ext: Extensions, ctx: Context) -> str:
    """The called process key: ``calledElement`` or ``zeebe:calledElement processId``;
    ``${name}`` (Zeebe ``=name``) reads the key from a variable, any other ``=...`` is FEEL
    evaluated when the activity starts."""
    zeebe = ext.zeebe.get("calledElement")
    text = (zeebe.get("processId") or "") if zeebe is not None else (el.get("calledElement") or "")
    text = text.strip()
    if text.startswith("="):
        body = text[1:].strip()
        if len(body) >= 2 and body[0] == body[-1] == '"' and '"' not in body[1:-1]:
            return body[1:-1]
        if variable_name("${" + body + "}") is not None:
            return "${" + body + "}"
        try:
            return native_feel(text)
        except ExpressionError as exc:
            ctx.report(el, f"the called process of '{el.get('id')}': {exc}")
            return ""
    if ("${" in text or "#{" in text) and variable_name(text.replace("#{", "${")) is None:
        ctx.report(
            el,
            f"calledElement '{text}' of '{el.get('id')}' is an expression: write the process "
            "key, or ${name} to read it from a variable",
        )
        return ""
    return text.replace("#{", "${")


def parse_call(el: Element, ctx: Context) -> n.Node:
    """``callActivity``: starts an instance of another process and waits for it."""
    event_definitions(el, ctx, frozenset(), activity=True)
    node_id, name, line = base(el, ctx)
    ext = read_extensions(el, ctx, IO_USES | {"in", "out", "calledElement"})
    warn_attributes(el, ctx, _CALL_USES)
    if java_engine(el, "caseRef") is not None:
        ctx.report(el, f"'{node_id}' calls a CMMN case (caseRef): only processes can be called")
    binding_text = java_engine(el, "calledElementBinding")
    binding = n.CallBinding.LATEST
    version: str | None = None
    if binding_text is not None:
        found = _BINDINGS.get(binding_text[1].strip())
        if found is None:
            ctx.report(
                el,
                f"{binding_text[0]} '{binding_text[1]}' is not one of latest, deployment, "
                "version, versionTag",
            )
        else:
            binding = found
    if binding is n.CallBinding.VERSION:
        version = (java_engine(el, "calledElementVersion") or ("", ""))[1].strip() or None
    elif binding is n.CallBinding.VERSION_TAG:
        version = (java_engine(el, "calledElementVersionTag") or ("", ""))[1].strip() or None
    calls = read_call_mappings(el, ext, ctx)
    zeebe = ext.zeebe.get("calledElement")
    all_in, all_out = calls.all_in, calls.all_out
    if zeebe is not None:  # Zeebe passes every variable both ways unless told otherwise
        all_in = (zeebe.get("propagateAllParentVariables") or "true").strip().lower() != "false"
        all_out = (zeebe.get("propagateAllChildVariables") or "true").strip().lower() != "false"
    return n.CallActivity(
        node_id,
        name,
        line,
        called_element=_called_element(el, ext, ctx),
        binding=binding,
        version=version,
        call_inputs=tuple(calls.inputs),
        call_outputs=tuple(calls.outputs),
        all_in=all_in,
        all_out=all_out,
        business_key=calls.business_key,
        inherit_key=calls.inherit_key,
        all_in_local=calls.all_in_local,
        all_out_local=calls.all_out_local,
        local_inputs=tuple(calls.local_inputs),
        local_outputs=tuple(calls.local_outputs),
        **activity_fields(el, ext, ctx),
    )
