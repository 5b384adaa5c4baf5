"""Deploy-time checks of scopes: sub-processes, event sub-processes, call activities,
multi-instance markers, variable mappings and inclusive gateways.

Called by :func:`bpm.model.validate.check_model`; each problem names its element.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from bpm.errors import ExpressionError, Problem
from bpm.expressions import compile_condition, compile_expression
from bpm.model import nodes as n
from bpm.model.element_types import element_type
from bpm.model.process import ProcessModel
from bpm.model.reach import join_cycles

__all__ = ["check_scopes"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _at(node: n.Node | n.Flow, message: str) -> Problem:
    return Problem(message, node.id, node.line, element_type=element_type(node))


def check_scopes(model: ProcessModel, warnings: list[str]) -> Iterator[Problem]:
    """Every problem of the model's scopes (none for a process without any)."""
    yield from _containers(model)
    yield from _event_subprocesses(model)
    yield from _start_events(model)
    for node in model.nodes.values():
        if isinstance(node, n.Activity):
            if isinstance(node.loop, n.StandardLoop):
                yield from _standard_loop(node, node.loop)
            elif node.loop is not None:
                yield from _multi_instance(node, node.loop, warnings)
            yield from _mappings(node, node.inputs, "input")
            yield from _mappings(node, node.outputs, "output")
        if isinstance(node, n.CallActivity):
            yield from _call(node)
        if isinstance(node, n.InclusiveGateway):
            yield from gateway_flows(model, node)
    for gateway_id, other in join_cycles(model):
        yield _at(
            model.nodes[gateway_id],
            f"inclusive gateway '{gateway_id}' joins inside a loop with parallel gateway "
            f"'{other}': '{other}' waits for the token '{gateway_id}' sends, while a token "
            f"waiting at '{other}' can still reach '{gateway_id}', so '{gateway_id}' could "
            "never fire; join those branches with one kind of gateway, or take the "
            "parallel join out of the loop",
        )


def _containers(model: ProcessModel) -> Iterator[Problem]:
    for node in model.nodes.values():
        if node.container is None:
            continue
        host = model.nodes.get(node.container)
        if not isinstance(host, n.SubProcess | n.EventSubProcess):
            yield _at(node, f"'{node.id}' is inside '{node.container}', which is no sub-process")
    for flow in model.flows:
        source, target = model.nodes.get(flow.source), model.nodes.get(flow.target)
        if source is None or target is None or source.container == target.container:
            continue
        yield _at(
            flow,
            f"sequence flow '{flow.id}' connects '{source.id}' and '{target.id}', which are "
            "not in the same (sub-)process: a flow may not cross a sub-process border; "
            "connect the sub-process itself",
        )


def _event_subprocesses(model: ProcessModel) -> Iterator[Problem]:
    for node in model.nodes.values():
        if not isinstance(node, n.EventSubProcess):
            continue
        if model.incoming.get(node.id) or model.outgoing.get(node.id):
            yield _at(
                node,
                f"event sub-process '{node.id}' has incoming or outgoing sequence flows: an "
                "event sub-process is started by its start event, remove the flows",
            )
        if model.boundaries.get(node.id):
            yield _at(node, f"event sub-process '{node.id}' cannot have boundary events")
        starts = [x for x in model.members.get(node.id, ()) if isinstance(x, n.StartEvent)]
        if len(starts) != 1:
            yield _at(
                node,
                f"event sub-process '{node.id}' needs exactly one start event (found "
                f"{len(starts)}): a timer or error start event",
            )
        elif not starts[0].is_trigger:
            yield _at(
                starts[0],
                f"start event '{starts[0].id}' of event sub-process '{node.id}' has no "
                "trigger: give it a timer, error, escalation, message or signal event definition",
            )


def _start_events(model: ProcessModel) -> Iterator[Problem]:
    for node in model.nodes.values():
        if not isinstance(node, n.StartEvent):
            continue
        host = model.nodes.get(node.container) if node.container else None
        in_event_sub = isinstance(host, n.EventSubProcess)
        if node.error_start and not in_event_sub:
            yield _at(
                node,
                f"error start event '{node.id}' is not in an event sub-process: only an "
                'event sub-process (triggeredByEvent="true") starts on an error',
            )
        if node.escalation_start and not in_event_sub:
            yield _at(
                node,
                f"escalation start event '{node.id}' is not in an event sub-process: only an "
                'event sub-process (triggeredByEvent="true") starts on an escalation',
            )
        if node.error_start and not node.interrupting:
            yield _at(
                node,
                f"error start event '{node.id}' is non-interrupting: errors always interrupt, "
                'remove isInterrupting="false"',
            )
        if isinstance(host, n.SubProcess) and node.timer is not None:
            yield _at(
                node,
                f"start event '{node.id}' of sub-process '{host.id}' has a timer: an embedded "
                "sub-process starts when a token enters it; use a timer event after its "
                "start event, or an event sub-process",
            )


def _compiles(
    node: n.Node, what: str, text: str | None, *, condition: bool = False
) -> Iterator[Problem]:
    if text is None:
        return
    try:
        if condition:
            compile_condition(text)
        else:
            compile_expression(text)
    except ExpressionError as exc:
        yield _at(node, f"{what} of '{node.id}': {exc}")


def _multi_instance(
    node: n.Activity, loop: n.MultiInstance, warnings: list[str]
) -> Iterator[Problem]:
    if loop.collection is None and loop.cardinality is None:
        yield _at(
            node,
            f"multi-instance '{node.id}' has neither a loopCardinality nor a collection: "
            "say how many instances to run",
        )
    if loop.collection is not None and loop.cardinality is not None:
        warnings.append(
            f"multi-instance '{node.id}' has a collection and a loopCardinality: one "
            "instance runs per item of the collection, the cardinality is ignored"
        )
    yield from _compiles(node, "the collection", loop.collection)
    yield from _compiles(node, "the loop cardinality", loop.cardinality)
    yield from _compiles(node, "the completion condition", loop.completion, condition=True)
    yield from _compiles(node, "the output element", loop.output_element)
    for what, name in (
        ("element variable", loop.element),
        ("output collection", loop.output_collection),
    ):
        if name is not None and not _NAME.match(name):
            yield _at(node, f"the {what} '{name}' of '{node.id}' is not a variable name")
    if loop.output_element is not None and loop.output_collection is None:
        yield _at(
            node,
            f"multi-instance '{node.id}' has an output element but no output collection: "
            "name the variable that collects the outputs",
        )


def _standard_loop(node: n.Activity, loop: n.StandardLoop) -> Iterator[Problem]:
    """A condition that compiles, or a maximum: without either it would loop for ever."""
    if loop.condition is None and loop.maximum is None:
        yield _at(
            node,
            f"the standard loop of '{node.id}' has neither a loopCondition nor a loopMaximum: "
            "it would run for ever; say while it runs again, or how often at most",
        )
    if loop.maximum is not None and loop.maximum < 0:
        yield _at(node, f"the loopMaximum of '{node.id}' is {loop.maximum}: give a number >= 0")
    yield from _compiles(node, "the loop condition", loop.condition, condition=True)


def _mappings(
    node: n.Node, mappings: tuple[n.VariableMapping, ...], kind: str
) -> Iterator[Problem]:
    for mapping in mappings:
        if not mapping.target:
            yield _at(node, f"an {kind} mapping of '{node.id}' has no target variable")
        yield from _compiles(node, f"{kind} '{mapping.target}'", mapping.source)


_VARIABLE = re.compile(r"^[$#]\{\s*[A-Za-z_][A-Za-z0-9_]*\s*\}$")
"""``${name}``: a version (tag) read from a variable when the call activity is reached."""


def _call(node: n.CallActivity) -> Iterator[Problem]:
    if not node.called_element.strip():
        yield _at(
            node,
            f"call activity '{node.id}' has no calledElement: name the process it starts "
            '(calledElement="processKey", or zeebe:calledElement processId="...")',
        )
    version = (node.version or "").strip()
    if node.binding is n.CallBinding.VERSION and not (
        version.isdigit() or _VARIABLE.match(version)
    ):
        yield _at(
            node,
            f"call activity '{node.id}' binds a version but '{node.version or ''}' is not a "
            "version number: set calledElementVersion to a number (or ${variable})",
        )
    if node.binding is n.CallBinding.VERSION_TAG and not (node.version or "").strip():
        yield _at(node, f"call activity '{node.id}' binds a version tag but names none")
    yield from _mappings(node, node.call_inputs, "input")
    yield from _mappings(node, node.call_outputs, "output")
    yield from _compiles(node, "the business key", node.business_key)


def gateway_flows(
    model: ProcessModel, node: n.InclusiveGateway | n.ComplexGateway
) -> Iterator[Problem]:
    """A gateway that takes every true condition: its default among its outgoing flows,
    and conditions that compile (the inclusive gateway's checks; the complex one's too)."""
    outgoing = model.outgoing.get(node.id, ())
    ids = [f.id for f in outgoing]
    if node.default_flow is not None and node.default_flow not in ids:
        yield _at(
            node,
            f"the default flow '{node.default_flow}' of gateway '{node.id}' is not one of "
            f"its outgoing flows ({', '.join(ids) or 'none'}): pick one of them",
        )
    for flow in outgoing:
        if flow.condition is not None:
            try:
                compile_condition(flow.condition)
            except ExpressionError as exc:
                yield _at(flow, f"flow '{flow.id}': {exc}")
