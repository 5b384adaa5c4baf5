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

from dataclasses import replace
from xml.etree.ElementTree import Element

from bpm.bpmn.bindings import handler_name
from bpm.bpmn.context import Context
from bpm.bpmn.events import timer
from bpm.bpmn.extensions import Extensions
from bpm.bpmn.namespaces import PREFIXES, split
from bpm.model import nodes as n
from bpm.scripts import is_python

__all__ = ["LISTENER_USES", "USER_TASK_LISTENER_USES", "parse_listeners", "parse_user_listeners"]

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
