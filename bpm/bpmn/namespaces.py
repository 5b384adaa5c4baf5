"""XML namespaces of BPMN files and helpers to name elements and attributes in them."""

from __future__ import annotations

from xml.etree.ElementTree import Element

BPMN_NS = "http://www.omg.org/spec/BPMN/20100524/MODEL"
"""The BPMN 2.0 model namespace (``bpmn:`` / ``bpmn2:``)."""
CAMUNDA_NS = "http://camunda.org/schema/1.0/bpmn"
"""Camunda 7 extension attributes and elements (``camunda:``)."""
BPM_NS = "http://bpm-celery.dev/schema/1.0/bpmn"
"""This engine's own extension attributes (``bpm:handler``, ``bpm:retry``, ``bpm:lease``)."""
ZEEBE_NS = "http://camunda.org/schema/zeebe/1.0"
"""Camunda 8 (Zeebe) extension elements (``zeebe:taskDefinition``...)."""
ACTIVITI_NS = "http://activiti.org/bpmn"
"""Activiti (and Camunda 7.0) extensions: read like ``camunda:``."""
FLOWABLE_NS = "http://flowable.org/bpmn"
"""Flowable extensions: read like ``camunda:``."""
JAVA_ENGINE_NS = (CAMUNDA_NS, ACTIVITI_NS, FLOWABLE_NS)
"""Namespaces whose attributes mean the same: Camunda 7, Activiti, Flowable."""
XSI_NS = "http://www.w3.org/2001/XMLSchema-instance"
PREFIXES = {
    BPMN_NS: "bpmn",
    CAMUNDA_NS: "camunda",
    BPM_NS: "bpm",
    ZEEBE_NS: "zeebe",
    ACTIVITI_NS: "activiti",
    FLOWABLE_NS: "flowable",
}


def split(tag: str) -> tuple[str, str]:
    """``{ns}local`` -> ``(ns, local)``; a tag without namespace has ``""``."""
    if tag.startswith("{"):
        ns, _, local = tag[1:].partition("}")
        return ns, local
    return "", tag


def local(el: Element) -> str:
    """The element's local name when it is in the BPMN namespace, else ``""``."""
    ns, name = split(el.tag)
    return name if ns == BPMN_NS else ""


def camunda(el: Element, name: str) -> str | None:
    """The ``camunda:name`` attribute of ``el``."""
    return el.get(f"{{{CAMUNDA_NS}}}{name}")


def java_engine(el: Element, name: str) -> tuple[str, str] | None:
    """``(camunda:name, value)`` for the first of ``camunda:``, ``activiti:``,
    ``flowable:`` that ``el`` sets (with the prefix the file used), else None."""
    for ns in JAVA_ENGINE_NS:
        value = el.get(f"{{{ns}}}{name}")
        if value is not None:
            return f"{PREFIXES[ns]}:{name}", value
    return None


def java_value(el: Element, name: str) -> str | None:
    """The value of :func:`java_engine` only."""
    found = java_engine(el, name)
    return found[1] if found else None


def ours(el: Element, name: str) -> str | None:
    """The ``bpm:name`` attribute of ``el``."""
    return el.get(f"{{{BPM_NS}}}{name}")


def pretty(tag: str) -> str:
    """A readable name for a tag: ``bpmn:subProcess``, ``camunda:field``, or ``{ns}x``."""
    ns, name = split(tag)
    prefix = PREFIXES.get(ns)
    if prefix:
        return f"{prefix}:{name}"
    return f"{{{ns}}}{name}" if ns else name
