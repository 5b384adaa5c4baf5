"""Complex gateways (BPMN 2.0.2, 13.3.5; Camunda 7 has none, SpiffWorkflow's
``ComplexGateway`` is the reference).

Fork: as an inclusive gateway, one token per outgoing flow whose condition is true (a flow
without a condition is always taken), the default flow when none is, an incident when
there is no default.

Join (more than one incoming flow), in rounds. An arriving token waits
``Waiting(join, "complex")``. After every walk (the registry's release hook, under the
instance lock) the ``activationCondition`` is evaluated over the variables the last
arrival sees plus ``activationCount``, the number of tokens arrived in this round; when
it holds the gateway fires once: the arrived tokens complete and it forks. If tokens of
its scope can still arrive (they stand upstream, :func:`bpm.model.reach.upstream_of`) and
fewer tokens came than it has incoming flows, the gateway waits for reset: a marker
token ``Waiting(join, "reset N")`` (N: tokens the round may still bring) stands at it, and
tokens arriving meanwhile are consumed without firing. The round ends when N tokens came
or nothing upstream is left; the next token starts a new round. Without an activation
condition the gateway joins as an inclusive one (fires when nothing can still arrive); a
condition still false when nothing can still arrive opens an incident on the last arrival.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any
from xml.etree.ElementTree import Element

from bpm.bpmn.context import Context, base
from bpm.bpmn.extensions import read_extensions, warn_attributes
from bpm.bpmn.namespaces import XSI_NS, local
from bpm.cockpit.diagram import Drawing
from bpm.errors import ExpressionError, Problem
from bpm.expressions import compile_condition, to_cel
from bpm.kinds.spec import ElementKind
from bpm.model import nodes as n
from bpm.model.element_types import element_type
from bpm.model.process import ProcessModel
from bpm.model.reach import upstream_of
from bpm.model.validate_scopes import gateway_flows
from bpm.runtime import scopes
from bpm.runtime.hooks import Walk
from bpm.runtime.inclusive import take
from bpm.runtime.records import Token
from bpm.runtime.states import LIVE_TOKEN_STATES, BlockKind, TokenState

__all__ = ["ACTIVATION_COUNT", "KIND"]

ACTIVATION_COUNT = "activationCount"
"""The variable the activation condition sees: tokens arrived in the current round."""
_ARRIVED = "complex"  # blocked id of a token waiting for the activation condition
_RESET = "reset "  # blocked id of the reset marker: "reset <tokens the round may still bring>"


def parse(el: Element, ctx: Context) -> n.Node:
    """``complexGateway`` with its optional ``default`` flow and ``activationCondition``
    (CEL, ``${JUEL}`` or ``=FEEL``, stored as CEL)."""
    read_extensions(el, ctx)
    warn_attributes(el, ctx)
    node_id, name, line = base(el, ctx)
    condition: str | None = None
    for child in el:
        text = (child.text or "").strip()
        if local(child) != "activationCondition" or not text:
            continue
        try:
            condition = to_cel(text)
        except ExpressionError as exc:
            ctx.report_in(el, child, f"the activation condition of gateway '{node_id}': {exc}")
    return n.ComplexGateway(
        node_id, name, line, default_flow=el.get("default") or None, activation_condition=condition
    )


def checks(model: ProcessModel, node: n.ComplexGateway) -> Iterator[Problem]:
    """Outgoing flows (at least one; the default among them), conditions that compile."""
    outgoing = model.outgoing.get(node.id, ())
    if not outgoing:
        yield _at(
            node,
            f"complex gateway '{node.id}' has no outgoing sequence flow: connect it to the "
            "next step or to an end event",
        )
    yield from gateway_flows(model, node)
    if node.activation_condition is not None:
        try:
            compile_condition(node.activation_condition)
        except ExpressionError as exc:
            yield _at(node, f"the activation condition of gateway '{node.id}': {exc}")


def _at(item: n.Node | n.Flow, message: str) -> Problem:
    return Problem(message, item.id, item.line, element_type=element_type(item))


def draw(parent: Element, node: n.ComplexGateway, attrs: dict[str, str], d: Drawing) -> Element:
    if node.default_flow:
        attrs["default"] = node.default_flow
    el = d.element(parent, "complexGateway", attrs)
    if node.activation_condition is not None:
        cond = d.element(el, "activationCondition", {f"{{{XSI_NS}}}type": "bpmn:tFormalExpression"})
        cond.text = node.activation_condition
    return el


# -- running ----------------------------------------------------------------------------


def _region(walker: Walk, tok: Token) -> str | None:
    region = scopes.region_of(walker.work, tok.scope_id)
    return region.id if region else None


def _waiting_here(walker: Walk, gateway_id: str, region: str | None) -> list[Token]:
    return [
        t
        for t in walker.work.tokens.values()
        if t.node_id == gateway_id
        and t.state is TokenState.WAITING
        and t.blocked_kind is BlockKind.JOIN
        and _region(walker, t) == region
    ]


def _is_marker(tok: Token) -> bool:
    return (tok.blocked_id or "").startswith(_RESET)


def complex_gateway(walker: Walk, tok: Token, node: n.ComplexGateway) -> None:
    if len(walker.model.incoming.get(node.id, ())) <= 1:
        _leave(walker, tok, node, walker.variables(tok))
        return
    work = walker.work
    markers = [t for t in _waiting_here(walker, node.id, _region(walker, tok)) if _is_marker(t)]
    if not markers:
        work.transition(tok.id, TokenState.WAITING, blocked=(BlockKind.JOIN, _ARRIVED))
        return  # whether it fires is decided once the walk has nothing else to move
    # The reset phase: a token of the round that already fired is consumed.
    marker = markers[0]
    work.transition(tok.id, TokenState.COMPLETED, payload={"joined": True, "reset": True})
    work.record("join_reset", token_id=tok.id, node_id=node.id, payload={"marker": marker.id})
    left = int((marker.blocked_id or _RESET).removeprefix(_RESET) or 0) - 1
    work.transition(marker.id, TokenState.READY if left > 0 else TokenState.COMPLETED)
    if left > 0:
        work.transition(marker.id, TokenState.WAITING, blocked=(BlockKind.JOIN, f"{_RESET}{left}"))


def release(walker: Walk) -> bool:
    """Fire one complex join whose activation condition holds, or end one reset phase
    nothing can still arrive for; True when something changed (the walk goes on)."""
    work, nodes = walker.work, walker.model.nodes
    groups: dict[tuple[str, str | None], list[Token]] = {}
    failed: set[tuple[str, str | None]] = set()
    gateways: dict[str, n.ComplexGateway] = {}
    for tok in work.tokens.values():
        if tok.state is not TokenState.WAITING and tok.state is not TokenState.FAILED:
            continue  # most walks end here for every token: the hot path stays a scan
        node = nodes.get(tok.node_id)
        if not isinstance(node, n.ComplexGateway):
            continue
        if len(walker.model.incoming.get(node.id, ())) <= 1:
            continue
        gateways[node.id] = node
        key = (tok.node_id, _region(walker, tok))
        if tok.state is TokenState.FAILED:
            failed.add(key)  # its incident stands: retrying it decides again
        elif tok.blocked_kind is BlockKind.JOIN:
            groups.setdefault(key, []).append(tok)
    for key in sorted(groups, key=lambda k: (k[0], k[1] or "")):
        if key in failed:
            continue
        gateway_id, region = key
        before = upstream_of(walker.model, gateway_id)
        blocked = any(
            t.state in LIVE_TOKEN_STATES
            and t.node_id in before
            and not scopes.is_listener(walker, t)
            and _region(walker, t) == region
            for t in work.tokens.values()
        )
        waiting = groups[key]
        markers = [t for t in waiting if _is_marker(t)]
        if markers:
            if blocked:
                continue
            for marker in markers:  # nothing of the round can still arrive: reset done
                work.transition(marker.id, TokenState.COMPLETED)
            return True
        if _activate(walker, gateways[gateway_id], waiting, region, blocked=blocked):
            return True
    return False


def _activate(
    walker: Walk, node: n.ComplexGateway, arrived: list[Token], region: str | None, *, blocked: bool
) -> bool:
    arrived.sort(key=lambda t: (t.updated_at, t.id))
    last = arrived[-1]
    seen = {**walker.variables(last), ACTIVATION_COUNT: len(arrived)}
    if node.activation_condition is None:
        if blocked:
            return False
    else:
        try:
            ready = compile_condition(node.activation_condition).evaluate(seen)
        except ExpressionError as exc:
            _incident(walker, last, f"gateway {node.id}, activation condition: {exc}")
            return True
        if not ready:
            if blocked:
                return False
            _incident(
                walker,
                last,
                f"gateway {node.id}: its activation condition is false with {len(arrived)} "
                "token(s) arrived and no other can still arrive; change the variables it "
                "reads and retry, or cancel the instance",
            )
            return True
    _fire(walker, node, arrived, seen, region, blocked=blocked)
    return True


def _fire(
    walker: Walk,
    node: n.ComplexGateway,
    arrived: list[Token],
    seen: Mapping[str, Any],
    region: str | None,
    *,
    blocked: bool,
) -> None:
    work, last = walker.work, arrived[-1]
    chosen = take(walker.model.outgoing[node.id], node.default_flow, seen, f"gateway {node.id}")
    if isinstance(chosen, str):  # its condition failed: the last arrival gets the incident
        _incident(walker, last, chosen)
        return
    for t in arrived:
        work.transition(t.id, TokenState.COMPLETED, payload={"joined": True})
    work.record(
        "join_fired",
        token_id=last.id,
        node_id=node.id,
        payload={
            "tokens": [t.id for t in arrived],
            "complex": True,
            ACTIVATION_COUNT: len(arrived),
        },
    )
    shared = {t.scope_id for t in arrived}
    scope_id = shared.pop() if len(shared) == 1 else region
    expected = len(walker.model.incoming[node.id]) - len(arrived)
    if blocked and expected > 0:  # wait for reset: the round's other tokens are consumed
        marker = work.create_token(node.id, scope_id=scope_id, parent_id=last.id)
        work.transition(
            marker.id, TokenState.WAITING, blocked=(BlockKind.JOIN, f"{_RESET}{expected}")
        )
    walker.leave(work.token(last.id), chosen, scope_id=scope_id, keep_scope=False)


def _leave(walker: Walk, tok: Token, node: n.ComplexGateway, seen: Mapping[str, Any]) -> None:
    chosen = take(walker.model.outgoing[node.id], node.default_flow, seen, f"gateway {node.id}")
    if isinstance(chosen, str):
        walker.fail_token(tok, chosen)
        return
    walker.leave(tok, chosen)


def _incident(walker: Walk, tok: Token, error: str) -> None:
    walker.work.transition(tok.id, TokenState.READY)
    walker.fail_token(walker.work.token(tok.id), error)


KIND = ElementKind(
    node=n.ComplexGateway,
    parse={"complexGateway": parse},
    behave=complex_gateway,
    activity_type=lambda node: "complexGateway",
    draw=draw,
    build=("complex",),
    checks=checks,
    release=release,
)
