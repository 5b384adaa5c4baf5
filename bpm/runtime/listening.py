"""Where a token stands with the execution listeners a worker runs for it.

An inline task's worker runs the task's listeners in its own step. Every other element
(events, gateways, sub-processes, call activities, user, receive and external tasks, CEL
script tasks, decision tasks), a sequence flow's ``take`` listeners and the process's own
listeners have no worker step of their own: the token becomes one. The walker leaves it
Ready for a worker (published after commit, as an inline step), never running a listener in
the transaction, so a listener never runs in the API process either (a gateway reached by a
user task completed over REST waits for a worker like an inline task after it would):

* **first** (before the token enters its element): the ``take`` listeners of the flow it
  came by, the process's ``start`` listeners (the instance's first token), the element's
  ``start`` listeners; the finish enters the element (its behaviour runs then);
* **end** (before the token leaves): the element's ``end`` listeners (or the process's,
  before the instance completes); the finish leaves along the flows chosen before the
  listeners ran (a gateway's choice is made once).

The token carries which, as JSON text in ``token.listening`` (:class:`Pending`), so a
failed attempt, a lost worker's reclaim and an operator's retry of the incident run the same
listeners again: the same attempt count rule as any inline step. A token taken on a flow with
``take`` listeners to an inline task keeps the flow there too: the task's step runs them first.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from bpm.runtime.records import Token

__all__ = ["FIRST", "LAST", "Pending", "pending", "with_pending"]

FIRST = "first"
"""Phase: the listeners run before the token enters its element."""
LAST = "end"
"""Phase: the listeners run before the token leaves its element."""


@dataclass(frozen=True)
class Pending:
    """What ``token.listening`` says (all defaults: nothing pending).

    ``via``: the flow the token came by (its ``take`` listeners; a parallel join's arrival);
    ``phase``: :data:`FIRST` or :data:`LAST` when the token waits for a listener step;
    ``start``: the element's own start listeners are part of the FIRST step (not for a
    multi-instance body: its inner instances run them); ``process``: ``start`` or ``end``
    when the process's listeners are part of it; ``flows`` (None: every outgoing flow, or the
    conditions decide), ``scope_id`` and ``keep_scope``: how the token leaves after LAST;
    ``again``: after LAST the element's behaviour runs (an end event), not a leave."""

    via: str | None = None
    phase: str | None = None
    start: bool = False
    process: str | None = None
    flows: tuple[str, ...] | None = None
    scope_id: str | None = None
    keep_scope: bool = True
    again: bool = False


_EMPTY = Pending()


def pending(tok: Token) -> Pending:
    """The listener state of ``tok``."""
    if not tok.listening:
        return _EMPTY
    data: dict[str, Any] = json.loads(tok.listening)
    flows = data.get("flows")
    return Pending(
        via=data.get("via"),
        phase=data.get("phase"),
        start=bool(data.get("start", False)),
        process=data.get("process"),
        flows=None if flows is None else tuple(flows),
        scope_id=data.get("scope_id"),
        keep_scope=bool(data.get("keep_scope", True)),
        again=bool(data.get("again", False)),
    )


def encode(state: Pending) -> str | None:
    """``token.listening`` for ``state`` (None: nothing pending)."""
    if state == _EMPTY:
        return None
    data: dict[str, Any] = {}
    for key, value in (
        ("via", state.via),
        ("phase", state.phase),
        ("start", state.start or None),
        ("process", state.process),
        ("scope_id", state.scope_id),
        ("again", state.again or None),
    ):
        if value is not None:
            data[key] = value
    if state.flows is not None:
        data["flows"] = list(state.flows)
    if not state.keep_scope:
        data["keep_scope"] = False
    return json.dumps(data, separators=(",", ":"), sort_keys=True)


def with_pending(tok: Token, state: Pending) -> Token:
    """``tok`` carrying ``state``."""
    return replace(tok, listening=encode(state))


def take_listeners(model: ProcessModel, flow_id: str | None) -> tuple[n.Listener, ...]:
    """The ``take`` listeners of the flow ``flow_id`` (none when it is None or unknown)."""
    if flow_id is None:
        return ()
    flow = model.flow(flow_id)
    return flow.listeners if flow is not None else ()


def process_listeners(model: ProcessModel, event: str) -> tuple[n.Listener, ...]:
    return tuple(x for x in model.listeners if x.event == event)


def first_listeners(model: ProcessModel, node: n.Node, state: Pending) -> tuple[n.Listener, ...]:
    """What the FIRST step of a token in ``state`` at ``node`` runs, in order."""
    out = take_listeners(model, state.via)
    if state.process == "start":
        out += process_listeners(model, "start")
    if state.start:
        out += node.listens_first
    return out


def last_listeners(model: ProcessModel, node: n.Node, state: Pending) -> tuple[n.Listener, ...]:
    """What the LAST step of a token in ``state`` at ``node`` runs."""
    if state.process == "end":
        return process_listeners(model, "end")
    return node.listens_last


def listeners_of_step(
    model: ProcessModel, node: n.Node, state: Pending
) -> tuple[n.Listener, ...] | None:
    """The listeners of the listener step a token in ``state`` waits for (None: it waits
    for no listener step)."""
    if state.phase == FIRST:
        return first_listeners(model, node, state)
    if state.phase == LAST:
        return last_listeners(model, node, state)
    return None
