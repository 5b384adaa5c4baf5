"""Tasks: service, send and business-rule (bound as :mod:`bpm.bpmn.bindings` says), script
(CEL or Zeebe's FEEL evaluated, anything else a handler), user, and ``task`` /
``manualTask`` (pass through).
"""

from __future__ import annotations

from xml.etree.ElementTree import Element

from bpm.bpmn import bindings, usertasks
from bpm.bpmn.context import Context, base, event_definitions
from bpm.bpmn.extensions import Extensions, read_extensions, warn_attributes
from bpm.bpmn.listeners import (
    LISTENER_USES,
    USER_TASK_LISTENER_USES,
    parse_listeners,
    parse_user_listeners,
)
from bpm.bpmn.mappings import IO_USES
from bpm.bpmn.namespaces import java_engine, local, ours
from bpm.bpmn.scopes import activity_fields
from bpm.errors import ExpressionError
from bpm.expressions import native_feel
from bpm.handlers import RESULT_VARIABLE
from bpm.model import nodes as n
from bpm.scripts import PYTHON_SCRIPT, is_python
from bpm.timeexpr import TimerError, parse_duration

FOREIGN_SCRIPTS = frozenset(
    {"groovy", "javascript", "js", "ecmascript", "nashorn", "graal.js", "jruby", "ruby", "jython"}
)
"""Script languages this engine does not run: such a task is an inline handler."""

__all__ = ["FOREIGN_SCRIPTS", "parse_pass_through", "parse_script", "parse_service", "parse_user"]


def _priority(el: Element, ctx: Context) -> int:
    found = java_engine(el, "taskPriority")
    if found is None:
        return 0
    try:
        return int(found[1])
    except ValueError:
        ctx.report(el, f"{found[0]} '{found[1]}' must be a whole number")
        return 0


def _lease(el: Element, ctx: Context) -> float | None:
    text = ours(el, "lease")
    if text is None:
        return None
    try:
        return parse_duration(text).total_seconds()
    except TimerError as exc:
        ctx.report(el, f"bpm:lease: {exc}")
        return None


def _listeners(
    el: Element, ctx: Context, ext: Extensions, *, inline: bool
) -> tuple[n.Listener, ...]:
    """The execution listeners of a task: an inline task's worker runs them in its step;
    any other task's (external, CEL) run in a listener step of their own
    (:mod:`bpm.runtime.listening`)."""
    return parse_listeners(el, ctx, ext)


def parse_service(el: Element, ctx: Context) -> n.Node:
    """``serviceTask``, ``sendTask``, a ``businessRuleTask`` that names no decision
    (:mod:`bpm.bpmn.business_rules`): inline or external work."""
    event_definitions(el, ctx, frozenset(), activity=True)
    node_id, name, line = base(el, ctx)
    ext = read_extensions(el, ctx, bindings.ZEEBE_USES | IO_USES | LISTENER_USES)
    warn_attributes(el, ctx, bindings.USES)
    binding = bindings.bind(el, ctx, ext)
    return n.ServiceTask(
        node_id,
        name,
        line,
        handler=binding.handler,
        topic=binding.topic,
        retry=binding.retry,
        priority=_priority(el, ctx),
        properties={**ext.properties, **binding.properties},
        lease_seconds=_lease(el, ctx),
        listeners=_listeners(el, ctx, ext, inline=binding.topic is None),
        **activity_fields(el, ext, ctx),
    )


def _script_text(el: Element) -> str | None:
    for child in el:
        if local(child) == "script":
            return child.text or ""
    return None


def parse_script(el: Element, ctx: Context) -> n.Node:
    """``scriptTask``: ``scriptFormat="cel"`` is evaluated by the engine; ``python`` runs
    sandboxed on a worker (:mod:`bpm.scripts`; with ``bpm:handler``, that handler); any other
    language runs as the inline handler named by the task id (the script on ``ctx.script``);
    ``zeebe:script`` (FEEL) is evaluated as FEEL; ``zeebe:taskDefinition`` is a job."""
    event_definitions(el, ctx, frozenset(), activity=True)
    node_id, name, line = base(el, ctx)
    ext = read_extensions(el, ctx, bindings.ZEEBE_USES | IO_USES | LISTENER_USES | {"script"})
    warn_attributes(el, ctx, bindings.USES | {"resultVariable", "resource"})
    result = java_engine(el, "resultVariable")
    priority, lease = _priority(el, ctx), _lease(el, ctx)
    extra = activity_fields(el, ext, ctx)
    feel = ext.zeebe.get("script")
    if "taskDefinition" in ext.zeebe:
        binding = bindings.bind(el, ctx, ext)
        return n.ServiceTask(
            node_id,
            name,
            line,
            handler=binding.handler,
            topic=binding.topic,
            retry=binding.retry,
            properties={**ext.properties, **binding.properties},
            priority=priority,
            lease_seconds=lease,
            listeners=_listeners(el, ctx, ext, inline=binding.topic is None),
            **extra,
        )
    if feel is not None:
        extra["listeners"] = _listeners(el, ctx, ext, inline=False)
        expression = (feel.get("expression") or "").strip()
        try:
            text = native_feel(expression)
        except ExpressionError as exc:
            ctx.report(el, f"zeebe:script of '{node_id}': {exc}")
            text = ""
        return n.ScriptTask(
            node_id,
            name,
            line,
            script=text,
            script_format="feel",
            result_variable=(feel.get("resultVariable") or "").strip() or None,
            properties=ext.properties,
            priority=priority,
            lease_seconds=lease,
            **extra,
        )
    script_format = (el.get("scriptFormat") or "").strip() or None
    script = _script_text(el)
    resource = java_engine(el, "resource")
    is_cel = (script_format or "").lower() == "cel"
    bound = None if is_cel else bindings.bind(el, ctx, ext)  # bpm:handler; else the id
    named = any(
        found is not None
        for found in (
            ours(el, "handler"),
            *(java_engine(el, a) for a in ("delegateExpression", "class")),
        )
    )
    defaulted = bound is not None and bound.topic is None and not named
    sandboxed = defaulted and is_python(script_format)
    if resource is not None:
        if is_cel or sandboxed:
            ctx.report(el, f"{resource[0]} on a {script_format} script task: write it inline")
        else:
            ctx.warn(el, el, f"{resource[0]} '{resource[1]}' is not loaded: ctx.script is None")
    if result is not None and not is_cel and not sandboxed:
        ctx.warn(
            el,
            el,
            f"{result[0]} on a {script_format or 'script'} task run by a handler is "
            f"ignored: return {{'{result[1]}': value}} from the handler",
        )
    if defaulted and (script_format or "").strip().lower() in FOREIGN_SCRIPTS:
        ctx.warn(
            el,
            el,
            f"scriptFormat '{script_format}' is not run by this engine: the task runs as the "
            f"inline handler '{node_id}' (register it with @service_task('{node_id}'); the "
            'script is on ctx.script), or rewrite the script in Python (scriptFormat="python", '
            'run sandboxed on a worker) or CEL (scriptFormat="cel")',
        )
    if sandboxed:
        result_variable = (result[1].strip() or None) if result is not None else None
        into = {RESULT_VARIABLE: result_variable} if result_variable else {}
        return n.ScriptTask(
            node_id,
            name,
            line,
            handler=PYTHON_SCRIPT,
            retry=bound.retry if bound else None,
            listeners=_listeners(el, ctx, ext, inline=True),
            properties={**ext.properties, **into},
            script=script or "",
            script_format=script_format,
            result_variable=result_variable,
            priority=priority,
            lease_seconds=lease,
            **extra,
        )
    if is_cel:
        extra["listeners"] = _listeners(el, ctx, ext, inline=False)
        return n.ScriptTask(
            node_id,
            name,
            line,
            properties=ext.properties,
            script=(script or "").strip(),
            script_format=script_format,
            result_variable=(result[1].strip() or None) if result is not None else None,
            priority=priority,
            lease_seconds=lease,
            **extra,
        )
    assert bound is not None
    return n.ScriptTask(
        node_id,
        name,
        line,
        handler=bound.handler,
        topic=bound.topic,
        retry=bound.retry,
        listeners=_listeners(el, ctx, ext, inline=bound.topic is None),
        properties=ext.properties,
        script=script,
        script_format=script_format,
        priority=priority,
        lease_seconds=lease,
        **extra,
    )


def parse_user(el: Element, ctx: Context) -> n.Node:
    """``userTask`` with its assignee, candidates, dates, priority and form."""
    event_definitions(el, ctx, frozenset(), activity=True)
    node_id, name, line = base(el, ctx)
    ext = read_extensions(
        el,
        ctx,
        usertasks.ZEEBE_USES | usertasks.FORM_DATA_USES | IO_USES | USER_TASK_LISTENER_USES,
    )
    warn_attributes(el, ctx, usertasks.USES)
    return n.UserTask(
        node_id,
        name,
        line,
        properties=ext.properties,
        listeners=parse_user_listeners(el, ctx, ext),
        **usertasks.user_settings(el, ctx, ext),
        **activity_fields(el, ext, ctx),
    )


def parse_pass_through(el: Element, ctx: Context) -> n.Node:
    """``task`` and ``manualTask``: no work for the engine, the token moves on."""
    event_definitions(el, ctx, frozenset(), activity=True)
    node_id, name, line = base(el, ctx)
    ext = read_extensions(el, ctx, IO_USES)
    warn_attributes(el, ctx)
    return n.PassThrough(node_id, name, line, element=local(el), **activity_fields(el, ext, ctx))
