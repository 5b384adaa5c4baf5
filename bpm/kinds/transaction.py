"""Transaction sub-processes, cancel end events and cancel boundary events (BPMN 2.0.2,
10.3.4 and 10.5; Camunda 7's ``TransactionSubProcessTest`` is the reference).

A transaction runs as an embedded sub-process (its own scope, ``ScopeKind.SUBPROCESS``)
and completes as one. A token reaching a cancel end event inside it cancels it, in one
transaction of the engine's, in this order:

1. the token of the transaction is ended as an interrupting boundary ends its activity:
   everything still live inside is stopped first (an external task of a running branch
   is cancelled, so a worker's later complete is refused as for any cancelled task; user
   tasks, timers, message and signal waits, nested scopes and event sub-process
   listeners go), and the transaction's scope is terminated;
2. a token is put at the transaction's cancel boundary event, and the activities the
   transaction completed are compensated newest first, with the compensation machinery
   (:func:`bpm.runtime.compensation.compensate_region`): their handlers run one at a
   time, each a normal step (a user task handler waits for its person);
3. when the last handler ended, the boundary token takes the boundary's flows.

Unlike Camunda 7, the handlers do not run inside the transaction's activity instance
(it ended in step 1): the boundary event's token is what waits for them. Refused at
deploy, each naming the element: a cancel end event outside a transaction (or in one
without a cancel boundary event), a cancel boundary event not on a transaction or
non-interrupting, a second cancel boundary on one transaction, a multi-instance
transaction.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any
from xml.etree.ElementTree import Element, SubElement

from bpm.bpmn.context import Context
from bpm.bpmn.events import parse_boundary, parse_end
from bpm.bpmn.scopes import parse_subprocess
from bpm.cockpit.diagram import BPMN, Drawing
from bpm.errors import Problem
from bpm.kinds.spec import ElementKind, TriggerKind
from bpm.model import nodes as n
from bpm.model.element_types import element_type
from bpm.model.process import ProcessModel
from bpm.runtime import compensation, scopes
from bpm.runtime.behaviours import boundary_event
from bpm.runtime.hooks import Walk
from bpm.runtime.records import Token
from bpm.runtime.states import TokenState

__all__ = ["CANCEL_BOUNDARY", "CANCEL_END", "KIND", "TRIGGER", "cancel_boundary_of"]


def parse(el: Element, ctx: Context) -> n.Node:
    """``transaction``: read as an embedded sub-process (its members are parsed by the
    parser's container loop, as a sub-process's); ``method`` is not read (it only says how
    a transaction protocol would commit, which no engine performs)."""
    node = parse_subprocess(el, ctx)
    if type(node) is not n.SubProcess:
        ctx.report(el, f"transaction '{node.id}' cannot be triggered by an event: remove it")
        return ctx.placeholder(el)
    return n.Transaction(**{f.name: getattr(node, f.name) for f in dataclasses.fields(node)})


def cancel_boundary_of(model: ProcessModel, transaction: str | None) -> n.BoundaryEvent | None:
    """The cancel boundary event of ``transaction`` (None: it has none)."""
    return next(
        (
            b
            for b in model.boundaries.get(transaction or "", ())
            if isinstance(b, n.CancelBoundaryEvent)
        ),
        None,
    )


# -- deploy checks ------------------------------------------------------------------------


def _at(node: n.Node, message: str) -> Problem:
    return Problem(message, node.id, node.line, element_type=element_type(node))


def checks(model: ProcessModel, node: n.Transaction) -> Iterator[Problem]:
    """A transaction runs once per entry (no multi-instance marker); at most one cancel
    boundary event."""
    if node.loop is not None:
        yield _at(
            node,
            f"transaction '{node.id}' has a multi-instance marker, which this engine does not "
            "run on a transaction: wrap the transaction in a multi-instance sub-process",
        )
    cancels = [b for b in model.boundaries.get(node.id, ()) if isinstance(b, n.CancelBoundaryEvent)]
    for extra in cancels[1:]:
        yield _at(
            extra,
            f"cancel boundary event '{extra.id}' is the second on transaction '{node.id}' "
            f"(the first is '{cancels[0].id}'): a transaction has at most one, remove one",
        )


def end_checks(model: ProcessModel, node: n.CancelEndEvent) -> Iterator[Problem]:
    """In a transaction, which has a cancel boundary event; no outgoing flows."""
    host = model.nodes.get(node.container or "")
    if not isinstance(host, n.Transaction):
        yield _at(
            node,
            f"cancel end event '{node.id}' is not inside a transaction: a cancel end event "
            "cancels the bpmn:transaction it stands in; move it into one, or use a terminate "
            "or error end event",
        )
    elif cancel_boundary_of(model, host.id) is None:
        yield _at(
            node,
            f"cancel end event '{node.id}' cancels transaction '{host.id}', which has no "
            "cancel boundary event: attach one (cancelEventDefinition) to say where the "
            "instance goes once the transaction is undone",
        )
    if model.outgoing.get(node.id):
        yield _at(node, f"end event '{node.id}' has outgoing flows: remove them")


def boundary_checks(model: ProcessModel, node: n.CancelBoundaryEvent) -> Iterator[Problem]:
    """On a transaction; interrupting."""
    host = model.nodes.get(node.attached_to)
    if host is not None and not isinstance(host, n.Transaction):
        yield _at(
            node,
            f"cancel boundary event '{node.id}' is attached to '{host.id}', which is not a "
            "transaction: only a bpmn:transaction is cancelled, attach it to one or use an "
            "error boundary event",
        )
    if not node.cancel_activity:
        yield _at(
            node,
            f"cancel boundary event '{node.id}' is non-interrupting: a cancelled transaction "
            "always ends, remove cancelActivity=false",
        )


# -- drawing ------------------------------------------------------------------------------


def draw(parent: Element, node: n.Transaction, attrs: dict[str, str], d: Drawing) -> Element:
    return d.element(parent, "transaction", attrs)


def draw_end(parent: Element, node: n.CancelEndEvent, attrs: dict[str, str], d: Drawing) -> Element:
    return d.element(parent, "endEvent", attrs)


def draw_boundary(
    parent: Element, node: n.CancelBoundaryEvent, attrs: dict[str, str], d: Drawing
) -> Element:
    attrs["attachedToRef"] = node.attached_to
    return d.element(parent, "boundaryEvent", attrs)


def draw_trigger(parent: Element, node: Any, d: Drawing) -> None:
    SubElement(parent, f"{{{BPMN}}}cancelEventDefinition")


# -- running ------------------------------------------------------------------------------


def cancel_end(walker: Walk, tok: Token, node: n.CancelEndEvent) -> None:
    """Cancel the transaction ``tok`` stands in (see the module docstring)."""
    work = walker.work
    region = scopes.region_of(work, tok.scope_id)
    opener = work.tokens.get(region.token_id or "") if region is not None else None
    boundary = cancel_boundary_of(walker.model, node.container)
    if region is None or opener is None or boundary is None or region.node_id != node.container:
        # The deploy checks make this unreachable; a model that slips through says so.
        walker.fail_token(tok, f"cancel end event {node.id}: no transaction to cancel")
        return
    work.record(
        "transaction_cancelled",
        token_id=tok.id,
        node_id=node.id,
        payload={"transaction": region.node_id, "scope": region.id, "boundary": boundary.id},
    )
    work.transition(tok.id, TokenState.COMPLETED)
    outer = scopes.outer_scope_id(work, opener)
    reason = {"caught_by": boundary.id, "cancelled_by": node.id}
    walker.stop_token(work.token(opener.id), payload=reason)
    # Inline steps inside that were to be published after commit ended with the rest.
    work.to_dispatch[:] = [x for x in work.to_dispatch if work.token(x).state is TokenState.READY]
    caught = work.create_token(boundary.id, scope_id=outer, parent_id=opener.id)
    if not compensation.compensate_region(walker, caught, region.id):
        walker.continue_tokens([caught])  # nothing completed inside: straight on


KIND = ElementKind(
    node=n.Transaction,
    parse={"transaction": parse},
    behave=scopes.sub_process,
    activity_type=lambda node: "transaction",
    draw=draw,
    build=("transaction",),
    checks=checks,
)
CANCEL_END = ElementKind(
    node=n.CancelEndEvent,
    parse={"endEvent": parse_end},
    behave=cancel_end,
    activity_type=lambda node: "cancelEndEvent",
    draw=draw_end,
    build=("cancel_end",),
    position="end",
    trigger=lambda node: "cancel",
    checks=end_checks,
)
CANCEL_BOUNDARY = ElementKind(
    node=n.CancelBoundaryEvent,
    parse={"boundaryEvent": parse_boundary},
    behave=boundary_event,
    activity_type=lambda node: "cancelBoundaryCatch",
    draw=draw_boundary,
    build=("boundary_cancel",),
    position="boundary",
    trigger=lambda node: "cancel",
    checks=boundary_checks,
)
TRIGGER = TriggerKind(
    name="cancel",
    definition="cancelEventDefinition",
    activity_types={"end": "cancelEndEvent", "boundary": "cancelBoundaryCatch"},
    draw=draw_trigger,
)
