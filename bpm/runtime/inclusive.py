"""Inclusive gateways: fork along every true condition, join what can still arrive.

Fork: one token per outgoing flow whose condition is true (a flow without a condition is
always taken), the default flow when none is, an incident when there is no default.

Join (more than one incoming flow): an arriving token waits ``Waiting(join)``. The join
fires when no live token of the same scope (the nearest sub-process, inner instance or
the process) sits on a node from which the gateway can still be reached: the set of
those nodes is computed once per model (:attr:`ProcessModel.upstream`), the live tokens
are checked under the instance lock after every walk (a token that ends elsewhere can
release the join), so exactly one transaction fires it. Firing completes every token
waiting there and forks from the gateway once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bpm.errors import ExpressionError
from bpm.expressions import compile_condition
from bpm.model import nodes as n
from bpm.runtime import scopes
from bpm.runtime.records import Token
from bpm.runtime.states import LIVE_TOKEN_STATES, BlockKind, TokenState

if TYPE_CHECKING:
    from bpm.runtime.hooks import Walk

__all__ = ["inclusive_gateway", "release"]


def _region_id(walker: Walk, tok: Token) -> str | None:
    region = scopes.region_of(walker.work, tok.scope_id)
    return region.id if region else None


def inclusive_gateway(walker: Walk, tok: Token, node: n.InclusiveGateway) -> None:
    if node.id not in walker.model.upstream:
        fork(walker, tok, node)
        return
    walker.work.transition(
        tok.id, TokenState.WAITING, blocked=(BlockKind.JOIN, _region_id(walker, tok) or "root")
    )
    # Whether it fires is decided once the walk has nothing else to move (release()).


def release(walker: Walk) -> bool:
    """Fire one inclusive join that nothing can reach any more; True when one fired."""
    upstream = walker.model.upstream
    if not upstream:
        return False
    work = walker.work
    waiting: dict[tuple[str, str | None], list[Token]] = {}
    for tok in work.tokens.values():
        if (
            tok.state is TokenState.WAITING
            and tok.blocked_kind is BlockKind.JOIN
            and tok.node_id in upstream
        ):
            waiting.setdefault((tok.node_id, _region_id(walker, tok)), []).append(tok)
    for (gateway_id, region), arrived in sorted(waiting.items(), key=lambda x: x[0][0]):
        before = upstream[gateway_id]
        blocked = any(
            t.state in LIVE_TOKEN_STATES
            and t.node_id in before
            and not scopes.is_listener(walker, t)
            and _region_id(walker, t) == region
            for t in work.tokens.values()
        )
        if blocked:
            continue
        _fire(walker, walker.model.node(gateway_id), arrived)
        return True
    return False


def _fire(walker: Walk, node: n.Node, arrived: list[Token]) -> None:
    assert isinstance(node, n.InclusiveGateway)
    work = walker.work
    arrived.sort(key=lambda t: (t.updated_at, t.id))
    last = arrived[-1]
    chosen = choose(walker, last, node)
    if isinstance(chosen, str):  # its condition failed: the last arrival gets the incident
        work.transition(last.id, TokenState.READY)
        walker.fail_token(work.token(last.id), chosen)
        return
    for t in arrived:
        work.transition(t.id, TokenState.COMPLETED, payload={"joined": True})
    work.record(
        "join_fired",
        token_id=last.id,
        node_id=node.id,
        payload={"tokens": [t.id for t in arrived], "inclusive": True},
    )
    shared = {t.scope_id for t in arrived}
    scope_id = shared.pop() if len(shared) == 1 else _region_id(walker, last)
    walker.leave(work.token(last.id), chosen, scope_id=scope_id, keep_scope=False)


def choose(walker: Walk, tok: Token, node: n.InclusiveGateway) -> list[n.Flow] | str:
    """Every outgoing flow whose condition is true (the default when none is), or why
    there is none. Without outgoing flows: none, an implicit end."""
    if not walker.model.outgoing[node.id]:
        return []
    return take(
        walker.model.outgoing[node.id],
        node.default_flow,
        walker.variables(tok),
        f"gateway {node.id}",
    )


def take(
    outgoing: tuple[n.Flow, ...], default_flow: str | None, variables: Mapping[str, Any], where: str
) -> list[n.Flow] | str:
    """The flows an inclusive gateway or a completed activity leaves along: every one
    without a condition and every one whose condition is true; the default only when no
    other is taken. A string: why none is (``where`` names the node)."""
    chosen: list[n.Flow] = []
    default: n.Flow | None = None
    for flow in outgoing:
        if flow.id == default_flow:
            default = flow
            continue
        if flow.condition is None:
            chosen.append(flow)
            continue
        try:
            if compile_condition(flow.condition).evaluate(variables):
                chosen.append(flow)
        except ExpressionError as exc:
            return f"{where}, flow {flow.id}: {exc}"
    if not chosen and default is not None:
        chosen = [default]
    if not chosen:
        return f"{where}: no condition matched and there is no default flow"
    return chosen


def fork(walker: Walk, tok: Token, node: n.InclusiveGateway) -> None:
    """Leave along every flow whose condition is true (the default when none is)."""
    chosen = choose(walker, tok, node)
    if isinstance(chosen, str):
        walker.fail_token(tok, chosen)
        return
    walker.leave(tok, chosen)
