"""Variable mappings of activities in every spelling, as CEL: ``camunda:inputOutput``
(and ``activiti:``/``flowable:``), ``zeebe:ioMapping``, and a call activity's
``camunda:in`` / ``camunda:out``.

A Camunda parameter's text is a string unless it holds ``${...}``: ``${a + 1}`` is an
expression (JUEL translated to CEL), ``Dear ${name}`` a string with the value inserted,
``camunda:list`` / ``camunda:map`` a list or map of such values. A Zeebe ``source`` that
starts with ``=`` is FEEL (translated), any other text a string.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from xml.etree.ElementTree import Element

from bpm.bpmn.context import Context
from bpm.bpmn.extensions import Extensions
from bpm.bpmn.namespaces import split
from bpm.errors import ExpressionError
from bpm.expressions import native_feel, to_cel
from bpm.model import nodes as n

__all__ = [
    "IO_USES",
    "CallMappings",
    "cel_value",
    "feel_value",
    "read_call_mappings",
    "read_io",
]

IO_USES = frozenset({"inputOutput", "ioMapping"})
"""The extension elements :func:`read_io` reads."""

_PART = re.compile(r"[$#]\{(?P<body>[^{}]*)\}")


def cel_value(text: str) -> str:
    """A Camunda parameter text as CEL: an expression, a string, or a string with values."""
    stripped = text.strip()
    parts = list(_PART.finditer(stripped))
    if not parts:
        return json.dumps(text)
    if len(parts) == 1 and parts[0].span() == (0, len(stripped)):
        return to_cel(stripped)
    out: list[str] = []
    at = 0
    for part in parts:
        if part.start() > at:
            out.append(json.dumps(stripped[at : part.start()]))
        out.append(f"string({to_cel('${' + part['body'] + '}')})")
        at = part.end()
    if at < len(stripped):
        out.append(json.dumps(stripped[at:]))
    return " + ".join(out)


def feel_value(text: str) -> str:
    """A Zeebe ``source``: ``=`` FEEL (kept, run as FEEL), else a string (as CEL)."""
    stripped = text.strip()
    if stripped.startswith("="):
        return native_feel(stripped)
    return json.dumps(text)


def _parameter(param: Element) -> str:
    """The CEL of a ``camunda:inputParameter`` / ``outputParameter`` value."""
    children = list(param)
    if not children:
        return cel_value(param.text or "") if (param.text or "").strip() else "null"
    return _structured(children[0])


def _structured(el: Element) -> str:
    kind = split(el.tag)[1]
    if kind == "list":
        return "[" + ", ".join(_structured_item(x) for x in el) + "]"
    if kind == "map":
        entries = [
            f"{json.dumps(x.get('key', ''))}: {_structured_item(x)}"
            for x in el
            if split(x.tag)[1] == "entry"
        ]
        return "{" + ", ".join(entries) + "}"
    if kind == "script":
        raise ExpressionError(
            "a camunda:script value is not evaluated by this engine: write a ${...} "
            "expression (CEL) instead"
        )
    raise ExpressionError(f"unknown parameter value <{kind}>")


def _structured_item(el: Element) -> str:
    children = list(el)
    if children:
        return _structured(children[0])
    return cel_value(el.text or "") if (el.text or "").strip() else "null"


def _java_io(
    owner: Element, io: Element, ctx: Context
) -> tuple[list[n.VariableMapping], list[n.VariableMapping]]:
    inputs: list[n.VariableMapping] = []
    outputs: list[n.VariableMapping] = []
    for param in io:
        kind = split(param.tag)[1]
        if kind not in ("inputParameter", "outputParameter"):
            continue
        name = (param.get("name") or "").strip()
        if not name:
            ctx.report_in(owner, param, f"a {kind} of '{owner.get('id')}' has no name")
            continue
        try:
            source = _parameter(param)
        except ExpressionError as exc:
            ctx.report_in(owner, param, f"{kind} '{name}' of '{owner.get('id')}': {exc}")
            continue
        target = inputs if kind == "inputParameter" else outputs
        target.append(n.VariableMapping(name, source))
    return inputs, outputs


def _zeebe_io(
    owner: Element, io: Element, ctx: Context
) -> tuple[list[n.VariableMapping], list[n.VariableMapping]]:
    inputs: list[n.VariableMapping] = []
    outputs: list[n.VariableMapping] = []
    for item in io:
        kind = split(item.tag)[1]
        if kind not in ("input", "output"):
            continue
        target = (item.get("target") or "").strip()
        try:
            source = feel_value(item.get("source") or "")
        except ExpressionError as exc:
            ctx.report_in(owner, item, f"zeebe:{kind} '{target}' of '{owner.get('id')}': {exc}")
            continue
        if not target:
            ctx.report_in(owner, item, f"a zeebe:{kind} of '{owner.get('id')}' has no target")
            continue
        (inputs if kind == "input" else outputs).append(n.VariableMapping(target, source))
    return inputs, outputs


def read_io(
    owner: Element, ext: Extensions, ctx: Context
) -> tuple[tuple[n.VariableMapping, ...], tuple[n.VariableMapping, ...]]:
    """``(inputs, outputs)`` of an activity's ``inputOutput`` and ``ioMapping``."""
    inputs: list[n.VariableMapping] = []
    outputs: list[n.VariableMapping] = []
    for io in ext.java_all.get("inputOutput", []):
        found = _java_io(owner, io, ctx)
        inputs += found[0]
        outputs += found[1]
    if "ioMapping" in ext.zeebe:
        found = _zeebe_io(owner, ext.zeebe["ioMapping"], ctx)
        inputs += found[0]
        outputs += found[1]
    return tuple(inputs), tuple(outputs)


@dataclass
class CallMappings:
    """What a call activity passes to the called process and takes back."""

    inputs: list[n.VariableMapping] = field(default_factory=list)
    outputs: list[n.VariableMapping] = field(default_factory=list)
    all_in: bool = False
    all_out: bool = False
    business_key: str | None = None
    inherit_key: bool = False
    all_in_local: bool = False
    all_out_local: bool = False
    local_inputs: list[str] = field(default_factory=list)
    """Targets of ``camunda:in local="true"``: their source is read from the call
    activity's own variables only."""
    local_outputs: list[str] = field(default_factory=list)
    """Targets of ``camunda:out local="true"``: written into the call activity's own
    variables (where only its output parameters read them)."""


def _business_key(
    owner: Element, item: Element, text: str, ctx: Context, out: CallMappings
) -> None:
    if "processBusinessKey" in text or "getBusinessKey" in text:
        out.inherit_key = True  # #{execution.processBusinessKey}: the caller's own key
        return
    try:
        out.business_key = cel_value(text)
    except ExpressionError as exc:
        ctx.report_in(owner, item, f"businessKey of '{owner.get('id')}': {exc}")


def read_call_mappings(owner: Element, ext: Extensions, ctx: Context) -> CallMappings:
    """``camunda:in`` / ``camunda:out`` of a call activity (``variables="all"``,
    ``businessKey``, ``source``, ``sourceExpression``, ``target``, ``local``). A
    ``sourceExpression`` is read as Camunda reads any expression text: without ``${}`` it is
    the text itself (``sourceExpression="done"`` passes the string ``done``)."""
    out = CallMappings()
    for direction in ("in", "out"):
        for item in ext.java_all.get(direction, []):
            local = (item.get("local") or "").strip().lower() == "true"
            if (item.get("variables") or "").strip() == "all":
                if direction == "in":
                    out.all_in = True
                    out.all_in_local = local
                else:
                    out.all_out = True
                    out.all_out_local = local
                continue
            if direction == "in" and item.get("businessKey") is not None:
                _business_key(owner, item, item.get("businessKey") or "", ctx, out)
                continue
            target = (item.get("target") or "").strip()
            source, expression = item.get("source"), item.get("sourceExpression")
            try:
                if expression is not None:
                    cel = cel_value(expression)
                elif source is not None and source.strip():
                    cel = source.strip()
                else:
                    ctx.report_in(
                        owner, item, f"camunda:{direction} of '{owner.get('id')}' needs a source"
                    )
                    continue
            except ExpressionError as exc:
                ctx.report_in(owner, item, f"camunda:{direction} of '{owner.get('id')}': {exc}")
                continue
            if not target:
                target = (source or "").strip()
            mapping = n.VariableMapping(target, cel)
            (out.inputs if direction == "in" else out.outputs).append(mapping)
            if local:
                (out.local_inputs if direction == "in" else out.local_outputs).append(target)
    return out
