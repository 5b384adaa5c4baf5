"""Execution listeners of the tasks a worker runs (inline service and script tasks).

* ``<camunda:executionListener event="start|end" class="com.acme.Audit"/>``,
  ``expression="${audit.log(execution)}"``, ``delegateExpression="${audit}"`` (and the same
  in ``activiti:``/``flowable:``): the inline handler of that name, as a service task's
  binding names one (:func:`bpm.bpmn.bindings.handler_name`);
* ``<camunda:executionListener event="start"><camunda:script scriptFormat="python">...``:
  a Python script, sandboxed (:mod:`bpm.scripts`);
* Zeebe ``<zeebe:executionListeners><zeebe:executionListener eventType="start"
  type="audit"/>``: the inline handler named by the job type.

What is not run deploys with a warning naming it: other events (``take``), listeners of
other elements (read by :func:`bpm.bpmn.extensions.read_extensions`), scripts in other
languages, field injections.
"""

from __future__ import annotations

from xml.etree.ElementTree import Element

from bpm.bpmn.bindings import handler_name
from bpm.bpmn.context import Context
from bpm.bpmn.extensions import Extensions
from bpm.bpmn.namespaces import PREFIXES, split
from bpm.model import nodes as n
from bpm.scripts import is_python

__all__ = ["LISTENER_USES", "USER_TASK_LISTENER_USES", "parse_listeners", "parse_user_listeners"]

LISTENER_USES = frozenset({"executionListener", "executionListeners"})
"""The extension elements an inline task reads for its listeners."""

USER_TASK_LISTENER_USES = LISTENER_USES | {"taskListener"}
"""A user task's: its start execution listeners and its create task listeners run."""

_EVENTS = frozenset({"start", "end"})


def _label(item: Element) -> str:
    ns, name = split(item.tag)
    return f"{PREFIXES.get(ns, ns)}:{name}"


def _java(
    el: Element,
    ctx: Context,
    item: Element,
    events: frozenset[str] = _EVENTS,
    runs: str = "only start and end listeners of inline tasks run",
) -> n.Listener | None:
    label = _label(item)
    event = (item.get("event") or "").strip()
    if event not in events:
        ctx.warn(el, item, f"{label} event '{event}' is ignored by this engine: {runs}")
        return None
    script: Element | None = None
    for child in item:
        if split(child.tag)[1] == "script":
            script = child
        elif split(child.tag)[1] == "field":
            ctx.warn(el, child, f"{_label(child)} of a listener is ignored: use properties")
    cls = (item.get("class") or "").strip()
    expression = (item.get("delegateExpression") or item.get("expression") or "").strip()
    if cls:
        return n.Listener(event, handler=cls)
    if expression:
        name = handler_name(expression)
        if name is None:
            ctx.report_in(
                el,
                item,
                f"{label} '{expression}' cannot name a handler: write ${{handlerName}} and "
                "register a handler under that name",
            )
            return None
        return n.Listener(event, handler=name)
    if script is not None:
        language = (script.get("scriptFormat") or "").strip()
        if script.get("resource") is not None:
            ctx.report_in(el, script, f"a {label} script must be written inline")
            return None
        if not is_python(language):
            ctx.warn(
                el,
                script,
                f"a {language or 'script'} {label} is not run by this engine: rewrite it "
                'in Python (scriptFormat="python", run sandboxed on the worker)',
            )
            return None
        return n.Listener(event, script=script.text or "")
    ctx.report_in(el, item, f"{label} names nothing to run: set class, expression or a script")
    return None


def _zeebe(el: Element, ctx: Context, group: Element) -> list[n.Listener]:
    out = []
    for item in group:
        if split(item.tag)[1] != "executionListener":
            continue
        event = (item.get("eventType") or "").strip()
        kind = (item.get("type") or "").strip()
        if event not in _EVENTS or not kind or kind.startswith("="):
            ctx.warn(
                el,
                item,
                f"zeebe:executionListener eventType '{event}' type '{kind}' is ignored by "
                "this engine: only start and end listeners with a fixed type run",
            )
            continue
        out.append(n.Listener(event, handler=kind))
    return out


def parse_listeners(el: Element, ctx: Context, ext: Extensions) -> tuple[n.Listener, ...]:
    """The listeners of an inline task, in document order; warnings for what is not run."""
    out: list[n.Listener] = []
    for item in ext.java_all.get("executionListener", []):
        listener = _java(el, ctx, item)
        if listener is not None:
            out.append(listener)
    group = ext.zeebe.get("executionListeners")
    if group is not None:
        out.extend(_zeebe(el, ctx, group))
    return tuple(out)


def parse_user_listeners(el: Element, ctx: Context, ext: Extensions) -> tuple[n.Listener, ...]:
    """A user task's listeners that run: ``start`` execution listeners and ``create`` task
    listeners, both on a worker before the task is created (their variables are there for
    its ``${...}`` settings); the others deploy with a warning."""
    out: list[n.Listener] = []
    runs = "a user task runs its start execution listeners and its create task listeners"
    for item in ext.java_all.get("executionListener", []):
        listener = _java(el, ctx, item, frozenset({"start"}), runs)
        if listener is not None:
            out.append(listener)
    for item in ext.java_all.get("taskListener", []):
        listener = _java(el, ctx, item, frozenset({"create"}), runs)
        if listener is not None:
            out.append(n.Listener("create", listener.handler, listener.script, kind="task"))
    group = ext.zeebe.get("executionListeners")
    if group is not None:
        out.extend(x for x in _zeebe(el, ctx, group) if x.event == "start")
    return tuple(out)
