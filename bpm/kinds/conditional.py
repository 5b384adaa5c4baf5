"""The conditional trigger (BPMN 2.0.2, 10.5.4; Camunda 7's semantics): a start event of
an event sub-process (interrupting or not), an intermediate catch event, a boundary event
(interrupting or not) that fires when its ``condition`` holds.

Its wait is a subscription of kind ``conditional``, opened where a message's would be (the
catch event's token, the activity's token for a boundary, a listener token at an event
sub-process's start), and fired through :func:`bpm.runtime.messages.deliver`, which
consumes it under the instance lock: at most once.

When it is evaluated: before a unit of work is written (the registry's ``settle_unit``
hook), over every instance the unit changed, in rounds until nothing more fires:

* every conditional wait opened in the unit, whatever changed (already true when the wait
  opens: an intermediate event passes, a boundary fires as its activity is entered);
* every open conditional wait that sees a variable change of the unit: a change in its
  scope or in a scope around it (a local variable of a sibling or inner scope is not
  seen), filtered by ``camunda:variableName`` and ``camunda:variableEvents`` (``create``
  when the scope did not hold the name before, ``update``, ``delete``).

A wait is evaluated once per round, outer scopes first, so each change fires it at most
once; a non-interrupting event's renewed wait is not "opened" again in the unit that fired
it (it fires again on the next change). A condition that cannot be evaluated (a variable it
reads is not set) is false, as Camunda's ``tryEvaluate``; the failure is in the history.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from xml.etree.ElementTree import Element, SubElement

from bpm.bpmn.context import Context
from bpm.bpmn.namespaces import BPMN_NS, CAMUNDA_NS, XSI_NS, camunda, local
from bpm.cockpit.diagram import Drawing
from bpm.errors import ExpressionError
from bpm.expressions import compile_condition, to_cel
from bpm.kinds.spec import TriggerKind
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from bpm.runtime import messages
from bpm.runtime.hooks import Walk
from bpm.runtime.records import Subscription, Token
from bpm.runtime.states import BlockKind, SubscriptionState
from bpm.runtime.variables import chain, visible
from bpm.runtime.work import InstanceWork

__all__ = [
    "DEFINITION",
    "KIND",
    "TRIGGER",
    "VARIABLE_EVENTS",
    "parse_definition",
    "settle",
    "start_holds",
]

DEFINITION = "conditionalEventDefinition"
KIND = n.EventKind.CONDITIONAL.value
"""The subscriptions' ``kind``."""
VARIABLE_EVENTS = ("create", "update", "delete")
MAX_ROUNDS = 100
"""Rounds of one unit of work (each fires what the last one's changes satisfy): a bound
on conditions that keep satisfying each other."""
_LANGUAGES = frozenset({"", "cel", "juel", "feel", "http://www.omg.org/spec/feel/20140401"})


# -- parse and draw -----------------------------------------------------------------------


def parse_definition(defn: Element, owner: Element, ctx: Context) -> n.EventRef | None:
    """``conditionalEventDefinition``: its ``condition`` (CEL, ``${JUEL}`` or ``=FEEL``,
    stored as CEL), ``camunda:variableName`` and ``camunda:variableEvents``."""
    event_id = owner.get("id") or ""
    found = [child for child in defn if local(child) == "condition"]
    text = (found[0].text or "").strip() if found else ""
    if not text:
        ctx.report_in(
            owner,
            defn,
            f"conditional event '{event_id}' has no condition: add <bpmn:condition "
            'xsi:type="bpmn:tFormalExpression">${x > 5}</bpmn:condition> to its '
            "conditionalEventDefinition",
        )
        return None
    language = (found[0].get("language") or "").strip().lower()
    if language not in _LANGUAGES:
        ctx.report_in(
            owner,
            found[0],
            f"the condition of conditional event '{event_id}' is in '{language}': remove the "
            "language attribute and write it in CEL, e.g. ${x > 5}",
        )
        return None
    try:
        condition = to_cel(text)
        compile_condition(condition)
    except ExpressionError as exc:
        ctx.report_in(owner, found[0], f"the condition of conditional event '{event_id}': {exc}")
        return None
    events = tuple(
        dict.fromkeys(e.strip().lower() for e in (camunda(defn, "variableEvents") or "").split(","))
    )
    events = tuple(e for e in events if e)
    bad = [e for e in events if e not in VARIABLE_EVENTS]
    if bad:
        ctx.report_in(
            owner,
            defn,
            f"camunda:variableEvents of conditional event '{event_id}' names "
            f"{', '.join(bad)}: write some of create, update, delete (comma separated)",
        )
        return None
    name = (camunda(defn, "variableName") or "").strip()
    return n.EventRef(n.EventKind.CONDITIONAL, name, condition=condition, variable_events=events)


def draw(parent: Element, node: Any, d: Drawing) -> None:
    ref: n.EventRef = node.event
    attrs: dict[str, str] = {}
    if ref.name:
        attrs[f"{{{CAMUNDA_NS}}}variableName"] = ref.name
    if ref.variable_events:
        attrs[f"{{{CAMUNDA_NS}}}variableEvents"] = ",".join(ref.variable_events)
    defn = SubElement(parent, f"{{{BPMN_NS}}}{DEFINITION}", attrs)
    condition = SubElement(
        defn, f"{{{BPMN_NS}}}condition", {f"{{{XSI_NS}}}type": "bpmn:tFormalExpression"}
    )
    condition.text = ref.condition or ""


TRIGGER = TriggerKind(
    name=KIND,
    definition=DEFINITION,
    activity_types={
        "start": "conditionalStartEvent",
        "intermediate_catch": "intermediateConditional",
        "boundary": "boundaryConditional",
    },
    draw=draw,
)


# -- running ------------------------------------------------------------------------------


def _conditional(node: n.Node | None) -> n.EventRef | None:
    ref = getattr(node, "event", None)
    return ref if isinstance(ref, n.EventRef) and ref.kind is n.EventKind.CONDITIONAL else None


def holders(model: ProcessModel) -> frozenset[str]:
    """Nodes whose tokens may own a conditional wait (catch events, the gateways before
    them, activities with a conditional boundary, conditional starts of event
    sub-processes); empty: the model has no conditional event. Kept on the model."""
    cached = model.__dict__.get("_conditional_holders")  # as a cached_property keeps it
    if cached is None:
        found: set[str] = set()
        for node in model.nodes.values():
            if _conditional(node) is None:
                continue
            found.add(node.host or node.id)
            found.update(  # an event-based gateway's token owns the waits after it
                f.source
                for f in model.incoming.get(node.id, ())
                if isinstance(model.nodes.get(f.source), n.EventBasedGateway)
            )
        cached = frozenset(found)
        model.__dict__["_conditional_holders"] = cached
    return frozenset(cached)


@dataclass
class _Seen:
    """What one instance's evaluation has looked at in this unit of work."""

    names: dict[str | None, set[str]]  # variable names each scope holds, as changes go
    events: int = 0  # history events of the unit already read for changes
    opened: set[str] = field(default_factory=set)  # waits evaluated as opened
    fired: set[tuple[str, str]] = field(default_factory=set)  # (token, node) fired


@dataclass(frozen=True)
class _Change:
    scope: str | None
    name: str
    op: str


def settle(
    works: Callable[[], Iterable[InstanceWork]],
    walker_of: Callable[[InstanceWork], Walk],
    before: Mapping[str, frozenset[str]],
) -> None:
    """The registry's ``settle_unit`` hook (see the module docstring)."""
    seen: dict[str, _Seen] = {}
    for _ in range(MAX_ROUNDS):
        fired = False
        for work in works():
            iid = work.instance.id
            state = seen.setdefault(
                iid, _Seen(names={None: set(before.get(iid, frozenset(work.instance.variables)))})
            )
            fired = _round(work, walker_of, state) or fired
        if not fired:
            return


def _round(work: InstanceWork, walker_of: Callable[[InstanceWork], Walk], state: _Seen) -> bool:
    changes = list(_changes(work, work.events[state.events :], state))
    state.events = len(work.events)
    opened = [
        sub
        for sub in work.item_changes[Subscription].records.values()
        if sub.kind == KIND
        and sub.state is SubscriptionState.OPEN
        and sub.id not in state.opened
        and (sub.token_id, sub.node_id) not in state.fired
        and sub.id in work.item_changes[Subscription].new
    ]
    if not changes and not opened:
        return False
    walker = walker_of(work)
    holding = holders(walker.model)
    if not holding:
        return False
    candidates = {sub.id: sub for sub in opened}
    if changes:
        for tok in work.live_tokens():
            if tok.node_id in holding:
                for sub in work.items_of(Subscription, tok.id):
                    if sub.kind == KIND and sub.state is SubscriptionState.OPEN:
                        candidates.setdefault(sub.id, sub)
    fresh = {sub.id for sub in opened}
    waits = [w for sub in candidates.values() if (w := _wait(walker, sub)) is not None]
    fired = False
    for _, sub, tok, home in sorted(waits, key=lambda w: (w[0], w[1].created_at, w[1].id)):
        current = work.item(Subscription, sub.id)
        if current is None or current.state is not SubscriptionState.OPEN:
            continue  # an event fired before it in this round ended its token
        if messages.applies(walker, current) is None:
            continue
        ref = _conditional(walker.model.nodes.get(sub.node_id))
        if ref is None:
            continue
        scopes = {s.id for s in chain(work, home)}
        if sub.id not in fresh and not any(_counts(ref, c, scopes) for c in changes):
            continue
        state.opened.add(sub.id)
        if not _holds(walker, ref, tok, sub.node_id, home):
            continue
        state.fired.add((tok.id, sub.node_id))
        work.record(
            "condition_satisfied",
            token_id=tok.id,
            node_id=sub.node_id,
            payload={"subscription": sub.id, "condition": ref.condition},
        )
        messages.deliver(walker, sub.id, {})
        fired = True
    if fired:
        walker.run()
    return fired


def _wait(walker: Walk, sub: Subscription) -> tuple[int, Subscription, Token, str | None] | None:
    """(depth, the wait, its token, the scope it sees): None when it no longer waits."""
    tok = messages.applies(walker, sub)
    if tok is None:
        return None
    home = tok.scope_id
    node = walker.model.nodes.get(sub.node_id)
    if node is not None and node.host is not None and tok.blocked_kind is BlockKind.SCOPE:
        home = tok.blocked_id  # a boundary of a sub-process sees the sub-process's scope
    return len(chain(walker.work, home)), sub, tok, home


def _changes(work: InstanceWork, events: Iterable[Any], state: _Seen) -> Iterator[_Change]:
    """The variable changes the history events of the unit record, in order, each a
    ``create``, an ``update`` or a ``delete`` of the scope it was written in."""
    for event in events:
        if event.type not in ("variables_updated", "variables_deleted"):
            continue
        scope: str | None = event.payload.get("scope")
        names = state.names.get(scope)
        if names is None:
            loaded = work.loader.scope(scope) if work.loader is not None and scope else None
            names = state.names[scope] = set(loaded.variables) if loaded is not None else set()
        for name in event.payload.get("names", ()):
            if event.type == "variables_deleted":
                names.discard(name)
                yield _Change(scope, name, "delete")
            else:
                yield _Change(scope, name, "update" if name in names else "create")
                names.add(name)


def _counts(ref: n.EventRef, change: _Change, scopes: set[str]) -> bool:
    """Whether a change is seen by a wait whose scope chain is ``scopes`` and passes its
    variable filters."""
    if change.scope is not None and change.scope not in scopes:
        return False
    if ref.name and change.name != ref.name:
        return False
    return not ref.variable_events or change.op in ref.variable_events


def start_holds(ref: n.EventRef, variables: Mapping[str, Any]) -> bool:
    """Whether a conditional start event of a process starts an instance for the variables
    given (Camunda's ``evaluateStartConditions``): with ``camunda:variableName``, only when
    that variable is among them; a condition that cannot be evaluated is false."""
    if ref.name and ref.name not in variables:
        return False
    try:
        return bool(compile_condition(ref.condition or "").evaluate(variables))
    except ExpressionError:
        return False


def _holds(walker: Walk, ref: n.EventRef, tok: Token, node_id: str, home: str | None) -> bool:
    try:
        return bool(compile_condition(ref.condition or "").evaluate(visible(walker.work, home)))
    except ExpressionError as exc:
        walker.work.record(
            "condition_failed",
            token_id=tok.id,
            node_id=node_id,
            payload={"condition": ref.condition, "error": str(exc)},
        )
        return False
