"""Events: start (none, timer, message, signal; error, escalation or compensation in an
event sub-process), end (none, terminate, error, escalation, compensation, message, signal,
cancel), intermediate catch (timer, link, message, signal), intermediate throw (none: pass
through; escalation; link; compensation; message: an inline step; signal), boundary (timer,
error, escalation, compensation, message, signal, cancel)."""

from __future__ import annotations

import re
from dataclasses import replace
from xml.etree.ElementTree import Element

from bpm.bpmn import bindings
from bpm.bpmn.compensation import COMPENSATE, UNLINKED, activity_ref
from bpm.bpmn.context import Context, base, event_definitions
from bpm.bpmn.event_refs import catch_variables, escalation_code, link_name
from bpm.bpmn.extensions import Extensions, read_extensions, warn_attributes
from bpm.bpmn.mappings import IO_USES
from bpm.bpmn.messages import EVENT_DEFINITIONS, catch_definitions, event_ref, is_event
from bpm.bpmn.namespaces import local, pretty
from bpm.bpmn.scopes import activity_fields
from bpm.bpmn.usertasks import (
    FORM_DATA_USES,
    FORM_USES,
    ZEEBE_FORM_USES,
    form_fields,
    form_settings,
)
from bpm.model import nodes as n

__all__ = [
    "parse_boundary",
    "parse_catch",
    "parse_end",
    "parse_event_gateway",
    "parse_receive",
    "parse_start",
    "parse_throw",
]

_TIMER_KINDS = {
    "timeDuration": n.TimerKind.DURATION,
    "timeDate": n.TimerKind.DATE,
    "timeCycle": n.TimerKind.CYCLE,
}
_TIMER = frozenset({"timerEventDefinition"})
_ESCALATION = "escalationEventDefinition"
_LINK = "linkEventDefinition"
_CANCEL = "cancelEventDefinition"  # a transaction's (bpm.kinds.transaction)


def _common(el: Element, ctx: Context, uses: frozenset[str] = frozenset()) -> None:
    read_extensions(el, ctx)
    warn_attributes(el, ctx, uses)


def error_code(defn: Element, owner: Element, ctx: Context, *, required: bool) -> str | None:
    """The ``errorCode`` of the ``bpmn:error`` that ``defn`` (an error definition) names."""
    ref = defn.get("errorRef")
    if not ref:
        if required:
            ctx.report_in(owner, defn, "an error end event needs errorRef to a bpmn:error")
        return None
    error = ctx.errors.get(ref) or ctx.errors.get(ref.rpartition(":")[2])
    if error is None:
        # Camunda 7 reads an errorRef that names no bpmn:error as the error code itself.
        return ref
    code = error.get("errorCode") or None
    if code is None and required:
        ctx.report_in(owner, defn, f"bpmn:error '{ref}' has no errorCode: add errorCode=\"...\"")
    return code


def timer(defn: Element, owner: Element, ctx: Context) -> n.TimerSpec | None:
    """The one ``timeDuration``, ``timeDate`` or ``timeCycle`` of a timer definition."""
    found = [(kind, child) for child in defn if (kind := _TIMER_KINDS.get(local(child)))]
    if len(found) != 1:
        ctx.report_in(
            owner,
            defn,
            f"timer of '{owner.get('id')}' needs exactly one of timeDuration, timeDate or "
            f"timeCycle (found {len(found)})",
        )
        return None
    kind, child = found[0]
    text = (child.text or "").strip()
    if not text:
        ctx.report_in(owner, child, f"timer of '{owner.get('id')}' is empty: write e.g. PT5M")
        return None
    text = _literal(text)
    if ctx.zeebe and kind is n.TimerKind.CYCLE:
        text = _spring_weekdays(text)
    return n.TimerSpec(kind, text)


def _literal(text: str) -> str:
    """Other spellings of the same timer: a quoted literal (SpiffWorkflow's Python, Zeebe's
    ``="PT5M"``) is its text; ``#{name}`` and Zeebe's ``=name`` read variable ``name``; any
    other ``=...`` is FEEL, kept as it is (evaluated when the timer starts)."""
    body = text[1:].strip() if text.startswith("=") else text
    if len(body) >= 2 and body[0] == body[-1] and body[0] in "\"'":
        return body[1:-1].strip()
    if text.startswith("=") and re.fullmatch(r"[A-Za-z_]\w*", body):
        return f"${{{body}}}"
    if match := re.fullmatch(r"#\{\s*([A-Za-z_]\w*)\s*\}", text):
        return f"${{{match[1]}}}"
    return text


def _spring_weekdays(text: str) -> str:
    """Zeebe's cron counts weekdays from Sunday = 0 (or 7); store names, which mean the
    same in every dialect, so the model reads alike whoever wrote it."""
    fields = text.split()
    if len(fields) != 6:
        return text
    names = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN")
    out = []
    for part in fields[5].split(","):
        step = ""
        if "/" in part:
            part, step = part.split("/", 1)
            step = "/" + step
        bounds = part.split("-")
        if all(b.isdigit() and int(b) <= 7 for b in bounds):
            part = "-".join(names[int(b)] for b in bounds)
        out.append(part + step)
    return " ".join([*fields[:5], ",".join(out)])


def parse_start(el: Element, ctx: Context) -> n.Node:
    """``startEvent``: none, with a timer (instances start on its schedule), or, starting
    an event sub-process, with a timer, an error or an escalation (``isInterrupting``)."""
    node_id, name, line = base(el, ctx)
    before = len(ctx.problems)
    defs = event_definitions(
        el,
        ctx,
        _TIMER | catch_definitions() | {"errorEventDefinition", _ESCALATION, COMPENSATE},
    )
    form_key: str | None = None
    form_ref: dict[str, str] = {}
    fields: tuple[n.FormFieldSpec, ...] = ()
    if defs:
        _common(el, ctx)
    else:  # a none start event may have a start form
        ext = read_extensions(el, ctx, ZEEBE_FORM_USES | FORM_DATA_USES)
        warn_attributes(el, ctx, FORM_USES)
        form_key, form_ref = form_settings(el, ctx, ext)
        fields = form_fields(el, ctx, ext)
    interrupting = (el.get("isInterrupting") or "true").strip().lower() != "false"
    if len(ctx.problems) > before:
        # Reported (a conditional start...): still a start event, blamed for nothing else.
        ctx.placeholders.add(node_id)
    if not defs:
        return n.StartEvent(
            node_id, name, line, form_key=form_key, form_ref=form_ref, form_fields=fields
        )
    if is_event(defs[0]):
        ref = event_ref(defs[0], el, ctx)
        if ref is None:
            return ctx.placeholder(el)
        return n.StartEvent(node_id, name, line, event=ref, interrupting=interrupting)
    if local(defs[0]) == COMPENSATE:
        return n.StartEvent(node_id, name, line, compensation_start=True)
    code_var, message_var = catch_variables(defs[0])
    if local(defs[0]) == "errorEventDefinition":
        code = error_code(defs[0], el, ctx, required=False)
        return n.StartEvent(
            node_id,
            name,
            line,
            error_start=True,
            error_code=code,
            interrupting=interrupting,
            code_variable=code_var,
            message_variable=message_var,
        )
    if local(defs[0]) == _ESCALATION:
        code = escalation_code(defs[0], el, ctx, required=False)
        return n.StartEvent(
            node_id,
            name,
            line,
            escalation_start=True,
            escalation_code=code,
            interrupting=interrupting,
            code_variable=code_var,
        )
    spec = timer(defs[0], el, ctx)
    if spec is None:
        return ctx.placeholder(el)
    return n.StartEvent(node_id, name, line, timer=spec, interrupting=interrupting)


def parse_end(el: Element, ctx: Context) -> n.Node:
    """``endEvent``: none, terminate, error, escalation, compensation, message (an inline
    step) or signal."""
    allowed = (
        frozenset(
            {"terminateEventDefinition", "errorEventDefinition", _ESCALATION, COMPENSATE, _CANCEL}
        )
        | EVENT_DEFINITIONS
    )
    if _throws_message(el):
        return _message_throw(el, ctx)
    _common(el, ctx)
    node_id, name, line = base(el, ctx)
    before = len(ctx.problems)
    defs = event_definitions(el, ctx, allowed)
    if len(ctx.problems) > before:
        return ctx.placeholder(el)
    if not defs:
        return n.EndEvent(node_id, name, line)
    if is_event(defs[0]):
        return _signal_throw(el, defs[0], ctx)
    if local(defs[0]) == COMPENSATE:
        ref = activity_ref(defs[0], el, ctx)
        return n.EndEvent(node_id, name, line, kind=n.EndKind.COMPENSATE, activity_ref=ref)
    if local(defs[0]) == "terminateEventDefinition":
        return n.EndEvent(node_id, name, line, kind=n.EndKind.TERMINATE)
    if local(defs[0]) == _CANCEL:
        return n.CancelEndEvent(node_id, name, line)
    if local(defs[0]) == _ESCALATION:
        esc = escalation_code(defs[0], el, ctx, required=True)
        if esc is None:
            return ctx.placeholder(el)
        return n.EndEvent(node_id, name, line, kind=n.EndKind.ESCALATION, escalation_code=esc)
    code = error_code(defs[0], el, ctx, required=True)
    return n.EndEvent(node_id, name, line, kind=n.EndKind.ERROR, error_code=code)


def parse_catch(el: Element, ctx: Context) -> n.Node:
    """``intermediateCatchEvent``: a timer, a message, a signal, or the target of a link."""
    _common(el, ctx)
    node_id, name, line = base(el, ctx)
    before = len(ctx.problems)
    defs = event_definitions(el, ctx, _TIMER | catch_definitions() | {_LINK})
    if defs and local(defs[0]) == _LINK:
        link = link_name(defs[0], el, ctx)
        if not link:
            return ctx.placeholder(el)
        return n.LinkCatchEvent(node_id, name, line, link=link)
    if defs and is_event(defs[0]):
        ref = event_ref(defs[0], el, ctx)
        if ref is None:
            return ctx.placeholder(el)
        return n.CatchEvent(node_id, name, line, event=ref)
    spec = timer(defs[0], el, ctx) if defs else None
    if spec is None:
        if len(ctx.problems) == before:
            ctx.report(
                el,
                f"intermediate catch event '{node_id}' needs a timer, message, signal or "
                "link event definition",
            )
        return ctx.placeholder(el)
    return n.TimerCatchEvent(node_id, name, line, timer=spec)


def parse_throw(el: Element, ctx: Context) -> n.Node:
    """``intermediateThrowEvent``: without a definition the token passes through; an
    escalation is thrown to the nearest catcher; a link jumps to its catch event; a message
    is sent by an inline step (like a service task); a signal is broadcast."""
    if _throws_message(el):
        return _message_throw(el, ctx)
    _common(el, ctx)
    node_id, name, line = base(el, ctx)
    before = len(ctx.problems)
    defs = event_definitions(
        el, ctx, frozenset({_ESCALATION, _LINK, COMPENSATE, "signalEventDefinition"})
    )
    if len(ctx.problems) > before:
        return ctx.placeholder(el)
    if not defs:
        return n.PassThrough(node_id, name, line, element=local(el))
    if local(defs[0]) == "signalEventDefinition":
        return _signal_throw(el, defs[0], ctx)
    if local(defs[0]) == COMPENSATE:
        ref = activity_ref(defs[0], el, ctx)
        return n.CompensationThrowEvent(node_id, name, line, activity_ref=ref)
    if local(defs[0]) == _LINK:
        link = link_name(defs[0], el, ctx)
        return n.LinkThrowEvent(node_id, name, line, link=link) if link else ctx.placeholder(el)
    code = escalation_code(defs[0], el, ctx, required=True)
    if code is None:
        return ctx.placeholder(el)
    return n.EscalationThrowEvent(node_id, name, line, escalation_code=code)


def _throws_message(el: Element) -> bool:
    return any(local(child) == "messageEventDefinition" for child in el)


def _message_throw(el: Element, ctx: Context) -> n.Node:
    """A message throw or end event sends its message from code: the inline handler (or
    external topic) bound to the event or to its message definition, by default the
    handler named by the event id, exactly like a service task or send task."""
    node_id, name, line = base(el, ctx)
    before = len(ctx.problems)
    event_definitions(el, ctx, frozenset({"messageEventDefinition"}))
    if len(ctx.problems) > before:
        return ctx.placeholder(el)
    ext = read_extensions(el, ctx, bindings.ZEEBE_USES)
    warn_attributes(el, ctx, bindings.USES)
    binding = bindings.bind(el, ctx, ext)
    if binding.topic is None and binding.handler == node_id:
        defn = next(c for c in el if local(c) == "messageEventDefinition")
        on_definition = bindings.bind(defn, ctx, Extensions())
        if on_definition.topic is not None or on_definition.handler is not None:
            binding = on_definition
    return n.ServiceTask(
        node_id,
        name,
        line,
        handler=binding.handler,
        topic=binding.topic,
        retry=binding.retry,
        properties=dict(ext.properties),
    )


def _signal_throw(el: Element, defn: Element, ctx: Context) -> n.Node:
    node_id, name, line = base(el, ctx)
    ref = event_ref(defn, el, ctx)
    if ref is None:
        return ctx.placeholder(el)
    return n.SignalThrow(node_id, name, line, signal=ref.name)


def parse_boundary(el: Element, ctx: Context) -> n.Node:
    """``boundaryEvent``: a timer, escalation, message or signal catch (interrupting or
    not), an error catch, or a compensation boundary (its handler from an association)."""
    _common(el, ctx)
    node_id, name, line = base(el, ctx)
    allowed = (
        frozenset({"timerEventDefinition", "errorEventDefinition", _ESCALATION, COMPENSATE})
        | catch_definitions()
        | {_CANCEL}
    )
    before = len(ctx.problems)
    defs = event_definitions(el, ctx, allowed)
    if len(ctx.problems) > before:
        return ctx.placeholder(el)  # an unsupported definition, already reported
    if defs and local(defs[0]) == COMPENSATE:  # its handler comes from an association
        return n.BoundaryEvent(
            node_id, name, line, attached_to=el.get("attachedToRef", ""), compensate_with=UNLINKED
        )
    if defs and local(defs[0]) == _CANCEL:
        interrupting = el.get("cancelActivity", "true").strip().lower() != "false"
        return n.CancelBoundaryEvent(
            node_id,
            name,
            line,
            attached_to=el.get("attachedToRef", ""),
            cancel_activity=interrupting,
        )
    if not defs:
        ctx.report(
            el,
            f"{pretty(el.tag)} '{node_id}' has no event definition: add a timer, error, "
            "escalation, message or signal event definition",
        )
        return ctx.placeholder(el)
    event = n.BoundaryEvent(
        node_id,
        name,
        line,
        attached_to=el.get("attachedToRef", ""),
        cancel_activity=el.get("cancelActivity", "true").strip().lower() != "false",
    )
    kind = local(defs[0])
    if is_event(defs[0]):
        ref = event_ref(defs[0], el, ctx)
        return ctx.placeholder(el) if ref is None else replace(event, event=ref)
    if kind == "timerEventDefinition":
        spec = timer(defs[0], el, ctx)
        return ctx.placeholder(el) if spec is None else replace(event, timer=spec)
    code_var, message_var = catch_variables(defs[0])
    if kind == _ESCALATION:
        before = len(ctx.problems)
        esc = escalation_code(defs[0], el, ctx, required=False)
        if len(ctx.problems) > before:
            return ctx.placeholder(el)
        return replace(event, escalation=True, escalation_code=esc, code_variable=code_var)
    code = error_code(defs[0], el, ctx, required=False)
    return replace(event, error_code=code, code_variable=code_var, message_variable=message_var)


def parse_receive(el: Element, ctx: Context) -> n.Node:
    """``receiveTask``: waits for the message its ``messageRef`` names (without one, for a
    message named after the task: Camunda's trigger of a plain receive task)."""
    event_definitions(el, ctx, frozenset(), activity=True)
    node_id, name, line = base(el, ctx)
    ext = read_extensions(el, ctx, IO_USES)
    warn_attributes(el, ctx, frozenset({"messageRef"}))
    if not el.get("messageRef"):
        # Camunda 7 runs such a task as a plain wait state that code triggers; here the
        # trigger is a message named after the task, correlated like any other.
        ctx.warn(
            el,
            el,
            f"receive task '{node_id}' has no messageRef: it waits for a message named "
            f"'{node_id}' (engine.correlate('{node_id}', instance_id=...))",
        )
        ref: n.EventRef | None = n.EventRef(n.EventKind.MESSAGE, node_id)
    else:
        ref = event_ref(el, el, ctx)
    if ref is None:
        return ctx.placeholder(el)
    return n.ReceiveTask(node_id, name, line, event=ref, **activity_fields(el, ext, ctx))


def parse_event_gateway(el: Element, ctx: Context) -> n.Node:
    """``eventBasedGateway``: the first event after it wins (exclusive, not instantiating)."""
    _common(el, ctx, frozenset({"eventGatewayType", "instantiate"}))
    node_id, name, line = base(el, ctx)
    if (el.get("instantiate") or "false").strip().lower() == "true":
        ctx.report(
            el,
            f"event-based gateway '{node_id}' starts instances (instantiate=\"true\"), which "
            "this engine does not run: use message or signal start events",
        )
        return ctx.placeholder(el)
    return n.EventBasedGateway(node_id, name, line)
