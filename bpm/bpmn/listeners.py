"""Execution listeners of every element, of sequence flows and of the process.

* ``<camunda:executionListener event="start|end" class="com.acme.Audit"/>``,
  ``expression="${audit.log(execution)}"``, ``delegateExpression="${audit}"`` (and the same
  in ``activiti:``/``flowable:``): the inline handler of that name, as a service task's
  binding names one (:func:`bpm.bpmn.bindings.handler_name`); ``event="take"`` on a
  sequence flow;
* ``<camunda:executionListener event="start"><camunda:script scriptFormat="python">...``:
  a Python script, sandboxed (:mod:`bpm.scripts`);
* Zeebe ``<zeebe:executionListeners><zeebe:executionListener eventType="start"
  type="audit"/>``: the inline handler named by the job type.

A user task's (:func:`parse_user_listeners`) also: ``start`` and ``end`` execution listeners,
``camunda:taskListener`` of every event (``timeout`` with the ``timerEventDefinition`` inside
it), Zeebe's ``zeebe:taskListeners`` as those events.

Tasks read their own (:func:`parse_listeners`, :func:`parse_user_listeners`); the parser reads
every other element's, the flows' and the process's (:func:`attach`). What is not run deploys
with a warning naming it: other events, scripts in other languages, field injections, the end
listeners of an event-based gateway.
"""

from __future__ import annotations

from dataclasses import replace
from xml.etree.ElementTree import Element

from bpm.bpmn.bindings import handler_name
from bpm.bpmn.context import Context
from bpm.bpmn.events import timer
from bpm.bpmn.extensions import Extensions
from bpm.bpmn.namespaces import JAVA_ENGINE_NS, PREFIXES, ZEEBE_NS, split
from bpm.model import nodes as n
from bpm.scripts import is_python

__all__ = [
    "LISTENER_USES",
    "USER_TASK_LISTENER_USES",
    "attach",
    "parse_flow_listeners",
    "parse_listeners",
    "parse_process_listeners",
    "parse_user_listeners",
]

LISTENER_USES = frozenset({"executionListener", "executionListeners"})
"""The extension elements an inline task reads for its listeners."""

USER_TASK_LISTENER_USES = LISTENER_USES | {"taskListener", "taskListeners"}
"""A user task's: its execution listeners, task listeners and Zeebe task listeners run."""

TASK_EVENTS = frozenset({"create", "assignment", "update", "complete", "delete", "timeout"})
"""The events of Camunda 7's task listeners."""

ZEEBE_TASK_EVENTS = {
    "creating": "create",
    "assigning": "assignment",
    "updating": "update",
    "completing": "complete",
    "canceling": "delete",
}
"""Zeebe 8.8's task listener event types, as the Camunda 7 events they run as."""

_EVENTS = frozenset({"start", "end"})


def _label(item: Element) -> str:
    ns, name = split(item.tag)
    return f"{PREFIXES.get(ns, ns)}:{name}"


def _java(
    el: Element,
    ctx: Context,
    item: Element,
    events: frozenset[str] = _EVENTS,
    runs: str = "elements run start and end listeners, sequence flows take listeners",
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
        elif split(child.tag)[1] == "timerEventDefinition":
            pass  # a timeout task listener's: read by parse_user_listeners
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


def _zeebe(
    el: Element, ctx: Context, group: Element, events: frozenset[str] = _EVENTS
) -> list[n.Listener]:
    out = []
    for item in group:
        if split(item.tag)[1] != "executionListener":
            continue
        event = (item.get("eventType") or "").strip()
        kind = (item.get("type") or "").strip()
        if event not in events or not kind or kind.startswith("="):
            ctx.warn(
                el,
                item,
                f"zeebe:executionListener eventType '{event}' type '{kind}' is ignored by "
                f"this engine: only {' and '.join(sorted(events))} listeners with a fixed "
                "type run here",
            )
            continue
        retries: int | None = None
        text = (item.get("retries") or "").strip()
        if text:
            if not text.isdigit() or int(text) < 1:
                ctx.report_in(
                    el, item, f"zeebe:executionListener retries '{text}' must be a count >= 1"
                )
                continue
            retries = int(text)
        out.append(n.Listener(event, handler=kind, retries=retries))
    return out


def parse_listeners(
    el: Element, ctx: Context, ext: Extensions, events: frozenset[str] = _EVENTS
) -> tuple[n.Listener, ...]:
    """The execution listeners of ``el`` among ``events``, in document order; warnings
    for what is not run."""
    ctx.listeners_read.add(el.get("id") or "")
    out: list[n.Listener] = []
    for item in ext.java_all.get("executionListener", []):
        listener = _java(el, ctx, item, events)
        if listener is not None:
            out.append(listener)
    group = ext.zeebe.get("executionListeners")
    if group is not None:
        out.extend(_zeebe(el, ctx, group, events))
    return tuple(out)


def _own(el: Element) -> Extensions:
    """The listener extension elements of ``el`` (the kind's parse read the others)."""
    out = Extensions()
    for ext in el:
        if split(ext.tag)[1] != "extensionElements":
            continue
        for item in ext:
            ns, name = split(item.tag)
            if name == "executionListener" and ns in JAVA_ENGINE_NS:
                out.java_all.setdefault(name, []).append(item)
            elif name == "executionListeners" and ns == ZEEBE_NS:
                out.zeebe[name] = item
    return out


_START_ONLY = {"eventBasedGateway": frozenset({"start"})}
"""Elements whose end listeners cannot run: an event-based gateway is left by the event
that came first, in the transaction that caught it."""


def attach(el: Element, ctx: Context, node: n.Node) -> n.Node:
    """``node`` with the execution listeners of ``el``, when its kind's parse did not read
    them (events, gateways, sub-processes, call activities...)."""
    if (el.get("id") or "") in ctx.listeners_read or node.id in ctx.placeholders:
        return node
    ext = _own(el)
    if not ext.java_all and not ext.zeebe:
        return node
    found = parse_listeners(el, ctx, ext, _START_ONLY.get(split(el.tag)[1], _EVENTS))
    return replace(node, listeners=found) if found else node


def parse_flow_listeners(el: Element, ctx: Context) -> tuple[n.Listener, ...]:
    """A sequence flow's ``take`` listeners."""
    ext = _own(el)
    if not ext.java_all and not ext.zeebe:
        return ()
    return parse_listeners(el, ctx, ext, frozenset({"take"}))


def parse_process_listeners(el: Element, ctx: Context) -> tuple[n.Listener, ...]:
    """The process's own ``start`` and ``end`` listeners."""
    ext = _own(el)
    if not ext.java_all and not ext.zeebe:
        return ()
    return parse_listeners(el, ctx, ext)


def _timeout_timer(el: Element, ctx: Context, item: Element) -> n.TimerSpec | None:
    """The ``timerEventDefinition`` inside a ``timeout`` task listener (reported if missing)."""
    found = [child for child in item if split(child.tag)[1] == "timerEventDefinition"]
    if len(found) != 1:
        ctx.report_in(
            el,
            item,
            f"a timeout {_label(item)} needs one timerEventDefinition (found {len(found)}): "
            "write <bpmn:timerEventDefinition><bpmn:timeDuration>PT1H</bpmn:timeDuration>...",
        )
        return None
    return timer(found[0], el, ctx)


def _zeebe_task(el: Element, ctx: Context, group: Element) -> list[n.Listener]:
    out = []
    for item in group:
        if split(item.tag)[1] != "taskListener":
            continue
        event = ZEEBE_TASK_EVENTS.get((item.get("eventType") or "").strip())
        kind = (item.get("type") or "").strip()
        if event is None or not kind or kind.startswith("="):
            ctx.warn(
                el,
                item,
                f"zeebe:taskListener eventType '{item.get('eventType') or ''}' type '{kind}' is "
                f"ignored by this engine: event types {', '.join(ZEEBE_TASK_EVENTS)} with a "
                "fixed type run",
            )
            continue
        retries: int | None = None
        text = (item.get("retries") or "").strip()
        if text:
            if not text.isdigit() or int(text) < 1:
                ctx.report_in(el, item, f"zeebe:taskListener retries '{text}' must be a count >= 1")
                continue
            retries = int(text)
        out.append(n.Listener(event, handler=kind, kind="task", retries=retries))
    return out


def parse_user_listeners(el: Element, ctx: Context, ext: Extensions) -> tuple[n.Listener, ...]:
    """A user task's listeners, in document order by kind: ``start`` and ``end`` execution
    listeners, task listeners of every Camunda 7 event (``timeout`` with its timer), Zeebe's
    task listeners (as the Camunda 7 events) and execution listeners. ``start`` and
    ``create`` run on a worker before the task is created; the others on a worker while the
    task is open (:mod:`bpm.engine.task_listeners`)."""
    ctx.listeners_read.add(el.get("id") or "")
    out: list[n.Listener] = []
    runs = "a user task runs its start and end execution listeners"
    for item in ext.java_all.get("executionListener", []):
        listener = _java(el, ctx, item, _EVENTS, runs)
        if listener is not None:
            out.append(listener)
    task_runs = f"task listeners of {', '.join(sorted(TASK_EVENTS))} run"
    for item in ext.java_all.get("taskListener", []):
        listener = _java(el, ctx, item, TASK_EVENTS, task_runs)
        if listener is None:
            continue
        spec = _timeout_timer(el, ctx, item) if listener.event == "timeout" else None
        if listener.event == "timeout" and spec is None:
            continue
        out.append(replace(listener, kind="task", timer=spec))
    group = ext.zeebe.get("taskListeners")
    if group is not None:
        out.extend(_zeebe_task(el, ctx, group))
    group = ext.zeebe.get("executionListeners")
    if group is not None:
        out.extend(_zeebe(el, ctx, group))
    return tuple(out)
