"""Message and signal event definitions: ``messageRef`` -> ``<bpmn:message name=...>``,
``signalRef`` -> ``<bpmn:signal name=...>``, and Zeebe's
``<zeebe:subscription correlationKey="=orderId"/>`` on the message (FEEL, run as FEEL)."""

from __future__ import annotations

from xml.etree.ElementTree import Element

from bpm.bpmn.context import Context
from bpm.bpmn.namespaces import ZEEBE_NS, local, split
from bpm.errors import ExpressionError
from bpm.expressions import native_feel
from bpm.model import nodes as n

__all__ = ["EVENT_DEFINITIONS", "event_ref", "is_event", "top_level"]

EVENT_DEFINITIONS = frozenset({"messageEventDefinition", "signalEventDefinition"})


def is_event(defn: Element) -> bool:
    return local(defn) in EVENT_DEFINITIONS


def top_level(root: Element, name: str) -> dict[str, Element]:
    """The ``bpmn:message`` (or ``bpmn:signal``) elements of a file by id."""
    return {e.get("id", ""): e for e in root if local(e) == name and e.get("id")}


def event_ref(defn: Element, owner: Element, ctx: Context) -> n.EventRef | None:
    """The message or signal a definition names; reports a dangling or nameless one."""
    signal = local(defn) == "signalEventDefinition"
    kind = n.EventKind.SIGNAL if signal else n.EventKind.MESSAGE
    attr = "signalRef" if signal else "messageRef"
    table = ctx.signals if signal else ctx.messages
    ref = defn.get(attr)
    if not ref:
        ctx.report_in(
            owner,
            defn,
            f"{kind.value} event '{owner.get('id')}' has no {attr}: add {attr}=\"...\" naming "
            f"a <bpmn:{kind.value}>",
        )
        return None
    target = table.get(ref) or table.get(ref.rpartition(":")[2])
    if target is None:
        ctx.report_in(
            owner,
            defn,
            f"{attr} '{ref}' names no bpmn:{kind.value}: add <bpmn:{kind.value} id=\"{ref}\" "
            'name="...">',
        )
        return None
    name = (target.get("name") or "").strip()
    if not name:
        ctx.report_in(owner, defn, f"bpmn:{kind.value} '{ref}' has no name: add name=\"...\" to it")
        return None
    if name.startswith("="):
        name = name[1:].strip().strip("\"'")  # Zeebe's literal ="name"
    return n.EventRef(kind, name, _correlation_key(target, owner, ctx) if not signal else None)


def _correlation_key(message: Element, owner: Element, ctx: Context) -> str | None:
    for ext in message:
        if local(ext) != "extensionElements":
            continue
        for item in ext:
            if split(item.tag) != (ZEEBE_NS, "subscription"):
                continue
            text = (item.get("correlationKey") or "").strip()
            if not text:
                return None
            try:
                return native_feel(text)
            except ExpressionError as exc:
                ctx.report_in(
                    owner, item, f"correlationKey of message '{message.get('id')}': {exc}"
                )
                return None
    return None
