"""Ad-hoc sub-processes (BPMN 2.0.2, 10.3.6; Camunda 8's ``adHocSubProcess``,
SpiffWorkflow's ad-hoc tasks).

**What starts.** An ad-hoc sub-process has no start event (one is refused at deploy,
naming the sub-process). Entering it opens its scope, as a sub-process does, and starts:

- the elements Camunda 8's ``zeebe:adHoc activeElementsCollection`` names (an expression
  giving a list of element ids, evaluated when it is entered; an id that is not one of its
  activities without incoming flows is an incident on the sub-process), or else
- every inner activity without incoming flows (compensation handlers aside), in document
  order: SpiffWorkflow makes these ready at once; here, with no person choosing among
  them, they run.

With ``ordering="Parallel"`` (the default) they all start at once; with
``ordering="Sequential"`` one at a time, the next when nothing runs inside any more (the
path it started, with whatever its flows lead to, has ended).

**Completion.** After an inner element completed, the ``completionCondition`` (CEL,
``${JUEL}`` or ``=FEEL``, over the sub-process's variables) is evaluated, once the walk has
nothing else to move (the registry's release hook, under the instance lock); when true, no
further element starts and, with ``cancelRemainingInstances`` (default true), what still
runs inside is cancelled; the sub-process then completes as a sub-process does. Without a
condition it completes when nothing runs inside and nothing is left to start. A condition
that cannot be evaluated ends the sub-process with a ``failedAdHoc`` incident on its token.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from xml.etree.ElementTree import Element, SubElement

from bpm.bpmn.context import Context, base, event_definitions
from bpm.bpmn.extensions import read_extensions, warn_attributes
from bpm.bpmn.mappings import IO_USES
from bpm.bpmn.namespaces import XSI_NS, ZEEBE_NS, local
from bpm.bpmn.scopes import activity_fields
from bpm.cockpit.diagram import BPMN, Drawing
from bpm.errors import BpmError, ExpressionError, Problem
from bpm.expressions import compile_condition, compile_expression, to_cel
from bpm.kinds.spec import ElementKind
from bpm.model import nodes as n
from bpm.model.element_types import element_type
from bpm.model.process import ProcessModel
from bpm.runtime import scopes
from bpm.runtime import variables as v
from bpm.runtime.hooks import Walk
from bpm.runtime.records import Scope, Token
from bpm.runtime.states import LIVE_TOKEN_STATES, BlockKind, ScopeKind, ScopeState, TokenState

__all__ = ["AD_HOC_INCIDENT", "KIND"]

AD_HOC_INCIDENT = "failedAdHoc"
"""Incident type of an active elements collection or completion condition that failed."""


def parse(el: Element, ctx: Context) -> n.Node:
    """``adHocSubProcess`` with ``ordering``, ``cancelRemainingInstances``, a
    ``completionCondition`` child and ``zeebe:adHoc activeElementsCollection``."""
    event_definitions(el, ctx, frozenset(), activity=True)
    node_id, name, line = base(el, ctx)
    ext = read_extensions(el, ctx, IO_USES | {"adHoc"})
    warn_attributes(el, ctx)
    condition = active = None
    for child in el:
        text = (child.text or "").strip()
        if local(child) == "completionCondition" and text:
            condition = _expression(el, child, "completion condition", text, ctx)
    zeebe = ext.zeebe.get("adHoc")
    if zeebe is not None and (zeebe.get("activeElementsCollection") or "").strip():
        text = (zeebe.get("activeElementsCollection") or "").strip()
        active = _expression(el, zeebe, "active elements collection", text, ctx)
    return n.AdHocSubProcess(
        node_id,
        name,
        line,
        completion_condition=condition,
        sequential=(el.get("ordering") or "").strip().lower() == "sequential",
        cancel_remaining=(el.get("cancelRemainingInstances") or "").strip().lower() != "false",
        active_elements=active,
        **activity_fields(el, ext, ctx),
    )


def _expression(owner: Element, el: Element, what: str, text: str, ctx: Context) -> str | None:
    try:
        return to_cel(text)
    except ExpressionError as exc:
        ctx.report_in(owner, el, f"the {what} of ad-hoc sub-process '{owner.get('id')}': {exc}")
        ctx.placeholders.add(owner.get("id", ""))
        return None


def _at(node: n.Node, message: str) -> Problem:
    return Problem(message, node.id, node.line, element_type=element_type(node))


def checks(model: ProcessModel, node: n.AdHocSubProcess) -> Iterator[Problem]:
    """No start event inside; no multi-instance or loop marker; expressions compile."""
    for member in model.members.get(node.id, ()):
        if isinstance(member, n.StartEvent):
            yield _at(
                node,
                f"ad-hoc sub-process '{node.id}' holds start event '{member.id}': an ad-hoc "
                "sub-process has none (BPMN 2.0.2, 10.3.6), its activities without incoming "
                "flows are where it starts; remove the start event",
            )
    if node.loop is not None:
        yield _at(
            node,
            f"ad-hoc sub-process '{node.id}' has a loop or multi-instance marker, which this "
            "engine does not run on an ad-hoc sub-process: wrap it in a sub-process",
        )
    for what, text, compile_ in (
        ("completion condition", node.completion_condition, compile_condition),
        ("active elements collection", node.active_elements, compile_expression),
    ):
        if text is None:
            continue
        try:
            compile_(text)
        except ExpressionError as exc:
            yield _at(node, f"the {what} of ad-hoc sub-process '{node.id}': {exc}")


def draw(parent: Element, node: n.AdHocSubProcess, attrs: dict[str, str], d: Drawing) -> Element:
    attrs["ordering"] = "Sequential" if node.sequential else "Parallel"
    if not node.cancel_remaining:
        attrs["cancelRemainingInstances"] = "false"
    el = d.element(parent, "adHocSubProcess", attrs)
    if node.active_elements is not None:
        ext = SubElement(el, f"{{{BPMN}}}extensionElements")
        SubElement(ext, f"{{{ZEEBE_NS}}}adHoc", {"activeElementsCollection": node.active_elements})
    if node.completion_condition is not None:
        cond = d.element(el, "completionCondition", {f"{{{XSI_NS}}}type": "bpmn:tFormalExpression"})
        cond.text = node.completion_condition
    return el


# -- running ------------------------------------------------------------------------------


def _startable(model: ProcessModel, node: n.AdHocSubProcess) -> list[str]:
    """Its activities without incoming flows, in document order (handlers aside)."""
    return [
        x.id
        for x in model.starts_in(node.id)
        if not (isinstance(x, n.Activity) and x.for_compensation)
    ]


def _activated(model: ProcessModel, node: n.AdHocSubProcess, seen: dict[str, Any]) -> list[str]:
    startable = _startable(model, node)
    if node.active_elements is None:
        return startable
    value = compile_expression(node.active_elements).evaluate(seen)
    if not isinstance(value, list | tuple) or not all(isinstance(x, str) for x in value):
        raise ExpressionError(
            f"the active elements collection gave {value!r}, not a list of element ids"
        )
    unknown = [x for x in value if x not in startable]
    if unknown:
        raise ExpressionError(
            f"the active elements collection names {', '.join(map(repr, unknown))}, not among "
            f"its activities without incoming flows ({', '.join(startable) or 'none'})"
        )
    return list(dict.fromkeys(value))


def ad_hoc(walker: Walk, tok: Token, node: n.AdHocSubProcess) -> None:
    """Enter the sub-process and start what is activated (see the module docstring)."""
    if not walker.enter_activity(tok):
        return
    work = walker.work
    seen = v.visible(work, tok.scope_id)
    try:
        inputs = v.evaluate(node.inputs, seen)
    except BpmError as exc:
        scopes.fail_mapping(walker, tok, exc, "input mapping")
        return
    try:
        chosen = _activated(walker.model, node, {**seen, **inputs})
    except BpmError as exc:
        walker.fail_token(
            tok, f"ad-hoc sub-process '{node.id}': {exc}", incident_type=AD_HOC_INCIDENT
        )
        return
    now, later = (chosen[:1], chosen[1:]) if node.sequential else (chosen, [])
    scope = scopes.open_scope(
        work,
        ScopeKind.SUBPROCESS,
        node.id,
        parent_id=tok.scope_id,
        token_id=tok.id,
        variables=inputs,
        items=later,
    )
    work.transition(tok.id, TokenState.WAITING, blocked=(BlockKind.SCOPE, scope.id))
    work.record("ad_hoc_activated", token_id=tok.id, node_id=node.id, payload={"elements": now})
    for element in now:
        walker.continue_tokens([work.create_token(element, scope_id=scope.id, parent_id=tok.id)])
    walker.hooks.arm(walker, node.id, scope.id)


def release(walker: Walk) -> bool:
    """After a walk: complete, cancel or go on in each active ad-hoc sub-process; True
    when something changed (the walk then goes on)."""
    model = walker.model
    for scope in list(walker.work.scope_changes.records.values()):
        if scope.state is not ScopeState.ACTIVE or scope.kind is not ScopeKind.SUBPROCESS:
            continue
        node = model.nodes.get(scope.node_id)
        if isinstance(node, n.AdHocSubProcess) and _advance(walker, scope, node):
            return True
    return False


def _advance(walker: Walk, scope: Scope, node: n.AdHocSubProcess) -> bool:
    work = walker.work
    running = [
        t
        for t in work.tokens.values()
        if t.state in LIVE_TOKEN_STATES
        and scopes.inside(work, t, scope.id)
        and not scopes.is_listener(walker, t)
    ]
    pending = list(scope.items or [])
    if node.completion_condition is not None and _completed_here(walker, scope):
        try:
            done = compile_condition(node.completion_condition).evaluate(v.visible(work, scope.id))
        except BpmError as exc:
            _fail(walker, scope, node, exc)
            return True
        if done:
            cancel = node.cancel_remaining and bool(running)
            if not pending and not cancel:
                return False  # completes once what runs has ended (or at once: settle)
            work.change(
                scope,
                event="ad_hoc_completed",
                payload={"cancelled": [t.node_id for t in running] if cancel else []},
                items=[],
            )
            if cancel:
                scopes.stop_inside(walker, scope.id, f"ad-hoc sub-process '{node.id}' completed")
            return True
    if running or not pending:
        return False
    first, rest = pending[0], pending[1:]
    work.change(scope, event="ad_hoc_activated", payload={"elements": [first]}, items=rest)
    walker.continue_tokens([work.create_token(first, scope_id=scope.id, parent_id=scope.token_id)])
    return True


def _completed_here(walker: Walk, scope: Scope) -> bool:
    """Whether a token inside the sub-process completed in this transaction."""
    work = walker.work
    changes = work.token_changes
    for token_id in (*changes.new, *changes.dirty):
        tok = work.tokens.get(token_id)
        if (
            tok is not None
            and tok.state is TokenState.COMPLETED
            and tok.node_id != scope.node_id
            and scopes.inside(work, tok, scope.id)
        ):
            return True
    return False


def _fail(walker: Walk, scope: Scope, node: n.AdHocSubProcess, exc: BpmError) -> None:
    work = walker.work
    scopes.terminate(walker, scope.id, f"ad-hoc sub-process '{node.id}' failed")
    opener = work.tokens.get(scope.token_id or "")
    if opener is None or opener.state is not TokenState.WAITING:
        return
    work.transition(opener.id, TokenState.READY)
    walker.fail_token(
        work.token(opener.id),
        f"ad-hoc sub-process '{node.id}', completion condition: {exc}",
        incident_type=AD_HOC_INCIDENT,
    )


KIND = ElementKind(
    node=n.AdHocSubProcess,
    parse={"adHocSubProcess": parse},
    behave=ad_hoc,
    activity_type=lambda node: "adHocSubProcess",
    draw=draw,
    build=("ad_hoc",),
    checks=checks,
    release=release,
)
