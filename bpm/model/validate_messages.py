"""Deploy checks of message and signal events and of event-based gateways."""

from __future__ import annotations

from collections.abc import Iterator

from bpm.errors import ExpressionError, Problem
from bpm.expressions import compile_condition, compile_expression
from bpm.model import nodes as n
from bpm.model.process import ProcessModel

# What may follow an event-based gateway: the events it races.
_RACERS = (n.CatchEvent, n.ReceiveTask, n.TimerCatchEvent)  # a conditional catch too


def _at(node: n.Node, message: str) -> Problem:
    return Problem(message, node.id, node.line)


def check_messages(model: ProcessModel) -> Iterator[Problem]:
    """Names present, correlation keys that compile, gateways followed by events only."""
    for node in model.nodes.values():
        ref = getattr(node, "event", None)
        if isinstance(ref, n.EventRef) and ref.kind is n.EventKind.CONDITIONAL:
            yield from _conditional(node, ref)
        elif isinstance(ref, n.EventRef):
            if not ref.name.strip():
                yield _at(
                    node,
                    f"{ref.kind.value} event '{node.id}' has no {ref.kind.value} name: "
                    f'reference a <bpmn:{ref.kind.value} name="..."> with a name',
                )
            if ref.correlation_key is not None:
                try:
                    compile_expression(ref.correlation_key)
                except ExpressionError as exc:
                    yield _at(node, f"correlation key of '{node.id}': {exc}")
        if isinstance(node, n.SignalThrow) and not node.signal.strip():
            yield _at(node, f"signal throw event '{node.id}' has no signal name")
        if isinstance(node, n.EventBasedGateway):
            yield from _gateway(model, node)
    yield from _twin_message_boundaries(model)
    yield from _twin_message_starts(model)


def _twin_message_starts(model: ProcessModel) -> Iterator[Problem]:
    """Two message start events of one name in the process: a message of that name would
    start at either, and which one is arbitrary. Camunda 7 refuses it too (one message
    subscription per name and scope)."""
    first: dict[str, str] = {}
    for node in model.members.get(None, ()):
        ref = node.event if isinstance(node, n.StartEvent) else None
        if ref is None or ref.kind is not n.EventKind.MESSAGE or not ref.name.strip():
            continue
        if ref.name not in first:
            first[ref.name] = node.id
            continue
        yield _at(
            node,
            f"message start events '{first[ref.name]}' and '{node.id}' of process "
            f"'{model.key}' both wait for message '{ref.name}': a message of that name "
            "would match both, give each its own message",
        )


def _twin_message_boundaries(model: ProcessModel) -> Iterator[Problem]:
    """Two message boundary events of one name on one activity: a message of that name
    would match both, and which one it goes to is arbitrary. Camunda 7 refuses it too
    ("Cannot have more than one message event subscription with name ... for scope")."""
    for host, boundaries in model.boundaries.items():
        first: dict[str, str] = {}
        for boundary in boundaries:
            ref = boundary.event
            if ref is None or ref.kind is not n.EventKind.MESSAGE or not ref.name.strip():
                continue
            if ref.name not in first:
                first[ref.name] = boundary.id
                continue
            yield _at(
                boundary,
                f"message boundary events '{first[ref.name]}' and '{boundary.id}' on "
                f"'{host}' both wait for message '{ref.name}': a message of that name would "
                "match both, give each its own message",
            )


def _conditional(node: n.Node, ref: n.EventRef) -> Iterator[Problem]:
    """A conditional event's condition (bpm.kinds.conditional): present, compiling."""
    if not (ref.condition or "").strip():
        yield _at(node, f"conditional event '{node.id}' has no condition: give it one, e.g. x > 5")
        return
    try:
        compile_condition(ref.condition or "")
    except ExpressionError as exc:
        yield _at(node, f"the condition of conditional event '{node.id}': {exc}")


def _gateway(model: ProcessModel, node: n.EventBasedGateway) -> Iterator[Problem]:
    outgoing = model.outgoing.get(node.id, ())
    if len(outgoing) < 2:
        yield _at(
            node,
            f"event-based gateway '{node.id}' needs at least two outgoing flows, each to a "
            "message, signal or timer catch event or a receive task",
        )
    for flow in outgoing:
        target = model.nodes.get(flow.target)
        if target is None:
            continue  # reported with the flow
        if not isinstance(target, _RACERS) or (
            isinstance(target, n.ReceiveTask) and bool(model.boundaries.get(target.id))
        ):
            yield _at(
                node,
                f"event-based gateway '{node.id}' leads to '{target.id}', which is not a "
                "message, signal or timer catch event or a receive task: put one of those "
                "right after the gateway",
            )
        elif len(model.incoming.get(target.id, ())) > 1:
            yield _at(
                target,
                f"'{target.id}' follows event-based gateway '{node.id}' and has other "
                "incoming flows: give it only the flow from the gateway",
            )
