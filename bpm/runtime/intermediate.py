"""Escalation and link events: what a token does at them.

An escalation is thrown like an error (:mod:`bpm.runtime.throwing` finds the nearest
catcher around the thrower, across sub-processes and call activities) but it is a
notification, not a failure: a non-interrupting catcher runs its path beside the activity,
and an escalation nobody catches is only recorded. A link throw event is a jump to the
link catch event of the same name in the same (sub-)process (resolved at deploy:
:attr:`~bpm.model.process.ProcessModel.link_targets`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bpm.model import nodes as n
from bpm.runtime.records import Token
from bpm.runtime.states import TokenState
from bpm.runtime.throwing import EventKind, find, throw

if TYPE_CHECKING:
    from bpm.runtime.hooks import Walk

__all__ = ["escalate", "escalation_throw_event", "link_catch_event", "link_throw_event"]


def escalate(walker: Walk, tok: Token, code: str, node_id: str) -> None:
    """Record the escalation of ``code`` from ``tok`` (at ``node_id``) with who catches it,
    then throw it (the trail reads in the order things happened)."""
    catcher = find(walker, tok, code, EventKind.ESCALATION)
    walker.work.record(
        "escalation_thrown",
        token_id=tok.id,
        node_id=node_id,
        payload={
            "escalation_code": code,
            "caught_by": catcher.node.id if catcher else None,
            "interrupting": catcher.interrupting if catcher else None,
        },
    )
    # thrown even when nobody catches it: the call activities it passes still pass their
    # outputs up (throwing.throw), as in Camunda 7
    throw(walker, tok, code, f"escalation {code} from {node_id}", EventKind.ESCALATION)


def escalation_throw_event(walker: Walk, tok: Token, node: n.EscalationThrowEvent) -> None:
    """Throw, then move on unless an interrupting catcher ended this token (it sits
    inside the scope or activity that catcher interrupted)."""
    escalate(walker, tok, node.escalation_code, node.id)
    if walker.work.token(tok.id).state is TokenState.READY:
        walker.leave(walker.work.token(tok.id))


def link_throw_event(walker: Walk, tok: Token, node: n.LinkThrowEvent) -> None:
    """Jump: this token completes, a new one starts at the link's catch event."""
    target = walker.model.link_targets[node.id]
    done = walker.work.transition(tok.id, TokenState.COMPLETED, payload={"link": target})
    new = walker.work.create_token(target, scope_id=done.scope_id, parent_id=done.id)
    walker.continue_tokens([new])


def link_catch_event(walker: Walk, tok: Token, node: n.LinkCatchEvent) -> None:
    walker.leave(tok)
