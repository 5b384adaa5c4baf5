"""Message and signal event definitions: ``messageRef`` -> ``<bpmn:message name=...>``,
``signalRef`` -> ``<bpmn:signal name=...>``, and Zeebe's
``<zeebe:subscription correlationKey="=orderId"/>`` on the message (FEEL, run as FEEL)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from xml.etree.ElementTree import Element

from bpm.bpmn.context import Context
from bpm.bpmn.namespaces import ZEEBE_NS, local, split
from bpm.errors import ExpressionError
from bpm.expressions import native_feel
from bpm.model import nodes as n

__all__ = [
    "CATCHES",
    "EVENT_DEFINITIONS",
    "catch_definitions",
    "event_ref",
    "install_catches",
    "is_event",
    "top_level",
]

EVENT_DEFINITIONS = frozenset({"messageEventDefinition", "signalEventDefinition"})

CatchParser = Callable[[Element, Element, Context], n.EventRef | None]
"""Reads a definition (``defn``, of ``owner``) into the :class:`~bpm.model.nodes.EventRef`
its catch waits for; reports what it cannot use and returns None."""

CATCHES: dict[str, CatchParser] = {}
"""Event definitions that only catch (start, intermediate catch, boundary) and wait on a
subscription like messages do, by tag: filled by the registry of kinds (conditional)."""


def install_catches(parsers: Mapping[str, CatchParser]) -> None:
    """Hand the parser the registry's catch-only definitions (see :data:`CATCHES`)."""
    CATCHES.clear()
    CATCHES.update(parsers)


def catch_definitions() -> frozenset[str]:
    """The definitions a start, intermediate catch or boundary event may hold that wait on
    a subscription (messages, signals and the registry's :data:`CATCHES`)."""
    return EVENT_DEFINITIONS | frozenset(CATCHES)


def is_event(defn: Element) -> bool:
    return local(defn) in EVENT_DEFINITIONS or local(defn) in CATCHES


def top_level(root: Element, name: str) -> dict[str, Element]:
    """The ``bpmn:message`` (or ``bpmn:signal``) elements of a file by id."""
    return {e.get("id", ""): e for e in root if local(e) == name and e.get("id")}


def event_ref(defn: Element, owner: Element, ctx: Context) -> n.EventRef | None:
    """The message or signal a definition names; reports a dangling or nameless one."""
    if (parse := CATCHES.get(local(defn))) is not None:
        return parse(defn, owner, ctx)
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
