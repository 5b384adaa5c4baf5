"""Engine extensions of an element (Camunda 7/8, Activiti, Flowable): what is read, and a
warning for every setting understood but not honoured.

Each parse function says which extension attributes and elements it uses; every other one
in an engine namespace deploys with a warning naming it, so nothing is dropped silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from xml.etree.ElementTree import Element

from bpm.bpmn.context import Context
from bpm.bpmn.namespaces import JAVA_ENGINE_NS, PREFIXES, ZEEBE_NS, local, split

__all__ = ["ALWAYS_READ", "Extensions", "read_extensions", "warn_attributes"]

ALWAYS_READ = frozenset({"executionListener", "executionListeners"})
"""Extension elements every element may carry and the parser reads for any kind
(:func:`bpm.bpmn.listeners.attach`): never warned about here."""

_ENGINE_NS = (*JAVA_ENGINE_NS, ZEEBE_NS)

# Why a setting has no effect here, for the warning.
_REASONS = {
    "asyncBefore": "inline steps already run in their own transaction on a worker",
    "asyncAfter": "inline steps already run in their own transaction on a worker",
    "async": "inline steps already run in their own transaction on a worker",
    "exclusive": "the instance lock already runs one step of an instance at a time",
    "jobPriority": "use camunda:taskPriority on external tasks",
    "historyTimeToLive": "retention is global here (BPM_HISTORY_RETENTION_DAYS)",
    "taskListener": "react to the task over the API instead",
    "taskListeners": "react to the task over the API instead",
    "inputOutput": "variable mappings are honoured on activities only",
    "ioMapping": "variable mappings are honoured on activities only",
    "in": "variable mappings into a called process belong on a call activity",
    "out": "variable mappings out of a called process belong on a call activity",
    "field": "pass settings as extension properties instead",
    "initiator": "set the variable when starting the instance",
    "resultVariable": "return the result from the handler as a variable",
    "formData": "forms are not rendered by this engine",
    "formKey": "start forms are not rendered by this engine",
    "formDefinition": "start forms are not rendered by this engine",
    "userTaskForm": "forms are not rendered by this engine (user tasks keep their formKey)",
    "formRef": "start forms are not rendered by this engine",
    "formProperty": "forms are not rendered by this engine",
}


@dataclass
class Extensions:
    """What an element's ``extensionElements`` hold that this engine reads."""

    properties: dict[str, str] = field(default_factory=dict)
    retry_cycle: str | None = None
    connector_id: str | None = None
    zeebe: dict[str, Element] = field(default_factory=dict)
    """Used ``zeebe:`` children by local name."""
    java: dict[str, Element] = field(default_factory=dict)
    """Used ``camunda:`` / ``activiti:`` / ``flowable:`` children by local name (the last)."""
    java_all: dict[str, list[Element]] = field(default_factory=dict)
    """Every used ``camunda:`` / ``activiti:`` / ``flowable:`` child, by local name."""


def _label(ns: str, name: str) -> str:
    return f"{PREFIXES.get(ns, ns)}:{name}"


def _ignored(ctx: Context, owner: Element, el: Element, ns: str, name: str) -> None:
    reason = _REASONS.get(name)
    label = _label(ns, name)
    if reason is None:
        ctx.warn(owner, el, f"{label} is not understood by this engine and is ignored")
    else:
        ctx.warn(owner, el, f"{label} is ignored by this engine: {reason}")


def read_extensions(el: Element, ctx: Context, uses: frozenset[str] = frozenset()) -> Extensions:
    """Read the ``extensionElements`` of ``el``; ``uses`` names the extension elements the
    caller honours (``properties`` and ``failedJobRetryTimeCycle`` are always read)."""
    out = Extensions()
    for ext in el:
        if local(ext) != "extensionElements":
            continue
        for item in ext:
            ns, name = split(item.tag)
            if ns in JAVA_ENGINE_NS:
                _java_item(el, item, name, ctx, uses, out)
            elif ns == ZEEBE_NS:
                if name == "properties":
                    for prop in item:
                        if prop.get("name"):
                            out.properties[prop.get("name", "")] = prop.get("value", "")
                elif name in uses or name in ALWAYS_READ:
                    out.zeebe[name] = item
                else:
                    _ignored(ctx, el, item, ns, name)
    return out


def _java_item(
    owner: Element, item: Element, name: str, ctx: Context, uses: frozenset[str], out: Extensions
) -> None:
    ns = split(item.tag)[0]
    if name == "properties":
        for prop in item:
            if split(prop.tag)[1] == "property" and prop.get("name"):
                out.properties[prop.get("name", "")] = prop.get("value", "")
    elif name == "failedJobRetryTimeCycle":
        out.retry_cycle = (item.text or "").strip() or None
    elif name == "connector" and "connector" in uses:
        for child in item:
            if split(child.tag)[1] == "connectorId":
                out.connector_id = (child.text or "").strip() or None
            elif split(child.tag)[1] == "inputOutput":
                _ignored(ctx, owner, child, ns, "inputOutput")
    elif name in uses or name in ALWAYS_READ:
        out.java[name] = item
        out.java_all.setdefault(name, []).append(item)
    else:
        _ignored(ctx, owner, item, ns, name)


def warn_attributes(el: Element, ctx: Context, uses: frozenset[str] = frozenset()) -> None:
    """Warn about every engine attribute of ``el`` that is not in ``uses``."""
    for key in el.attrib:
        ns, name = split(key)
        if ns not in _ENGINE_NS or name in uses or name.startswith("modelerTemplate"):
            continue
        if name in ("async", "asyncBefore", "asyncAfter", "exclusive") and (
            el.attrib[key].strip().lower() in ("false", "")
            or (name == "exclusive" and el.attrib[key].strip().lower() == "true")
        ):
            continue  # the default: nothing is lost
        _ignored(ctx, el, el, ns, name)
