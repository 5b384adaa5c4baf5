"""Deploy-time checks of a process model: every problem at once, each with its location.

:func:`validate` is run by the BPMN parser and the builder; a model it returns can run.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from bpm.errors import DeploymentError, ExpressionError, Problem
from bpm.expressions import compile_condition, compile_expression
from bpm.model import nodes as n
from bpm.model.element_types import element_type
from bpm.model.process import ProcessModel
from bpm.model.validate_compensation import check_compensation
from bpm.model.validate_decisions import check_decisions
from bpm.model.validate_events import check_events
from bpm.model.validate_loops import endless_loops
from bpm.model.validate_messages import check_messages
from bpm.model.validate_scopes import check_scopes
from bpm.recurrence import recurrence
from bpm.scripts import ScriptError, compile_python
from bpm.timeexpr import TimerError, check

__all__ = ["KIND_CHECKS", "Check", "check_model", "install", "validate"]

Check = Callable[[ProcessModel, Any], Iterable[Problem]]
"""A kind's own checks of one of its nodes (its ``checks`` facet): the problems, each
naming the element."""

KIND_CHECKS: dict[type[n.Node], Check] = {}
"""Node class -> its kind's checks, filled by the registry of kinds when it is built
(:func:`install`, as :data:`bpm.bpmn.elements.ELEMENTS`): a new kind's checks run at
deploy without an edit here. This package does not import the kinds."""


def install(checks: Mapping[type[n.Node], Check]) -> None:
    """Hand the validator the registry's checks (every kind's ``checks`` facet)."""
    KIND_CHECKS.clear()
    KIND_CHECKS.update(checks)


_ACTIVITIES = (
    n.ServiceTask,
    n.UserTask,
    n.PassThrough,
    n.SubProcess,
    n.CallActivity,
    n.ReceiveTask,
    n.DecisionTask,
)
_GATEWAYS = (n.ExclusiveGateway, n.ParallelGateway, n.InclusiveGateway, n.EventBasedGateway)


def validate(model: ProcessModel) -> ProcessModel:
    """Return ``model`` with its warnings filled in, or raise :class:`DeploymentError`.

    The error lists every problem found (not just the first), each naming the element.
    """
    problems, warnings = check_model(model)
    if problems:
        raise DeploymentError(problems)
    merged = tuple(dict.fromkeys((*model.warnings, *warnings)))
    return dataclasses.replace(model, warnings=merged)


def check_model(
    model: ProcessModel, *, placeholders: frozenset[str] = frozenset()
) -> tuple[list[Problem], list[str]]:
    """All problems and warnings of ``model``, without raising.

    ``placeholders`` are ids of elements the parser already refused (kept as bare nodes so
    flows to them resolve): nothing is reported about them or because of them.
    """
    problems: list[Problem] = []
    warnings: list[str] = []
    problems += _flow_ends(model)
    problems += _boundaries(model, placeholders, warnings)
    _reachability(model, placeholders, warnings)
    problems += _triggers_in_sub_processes(model)
    problems += _degrees(model, placeholders)
    problems += _conditions(model, warnings)
    problems += _tasks(model, warnings)
    problems += _user_tasks(model)
    problems += _timers(model, warnings)
    problems += check_scopes(model, warnings)
    problems += check_compensation(model, warnings)
    problems += check_events(model, warnings)
    problems += check_messages(model)
    problems += check_decisions(model)
    problems += (_at(node, message) for node, message in endless_loops(model))
    for node in model.nodes.values():
        kind_checks = KIND_CHECKS.get(type(node))
        if kind_checks is not None:
            problems += kind_checks(model, node)
    _starts(model, warnings)
    _loop_joins(model, warnings)
    return [p for p in problems if p.element_id not in placeholders], warnings


def _at(node: n.Node | n.Flow, message: str) -> Problem:
    return Problem(message, node.id, node.line, element_type=element_type(node))


MAX_ID = 255
"""Longest process key and element id the store keeps."""


def _flow_ends(model: ProcessModel) -> Iterator[Problem]:
    if len(model.key) > MAX_ID:
        yield Problem(f"the process id is {len(model.key)} characters long: use {MAX_ID} or fewer")
    for node in model.nodes.values():
        if len(node.id) > MAX_ID:
            yield _at(
                node, f"the id of '{node.id[:40]}...' is too long: use {MAX_ID} characters or fewer"
            )
    if not model.start_events:
        yield Problem(f"process '{model.key}' has no start event: add a startEvent")
    for flow in model.flows:
        for end, ref in (("source", flow.source), ("target", flow.target)):
            if ref not in model.nodes:
                yield _at(
                    flow,
                    f"sequence flow '{flow.id}' has {end} '{ref}', which is not a node of "
                    f"the process: fix the {end}Ref or add the missing element",
                )


def _bad_boundary(model: ProcessModel, node: n.Node, placeholders: frozenset[str]) -> bool:
    if not isinstance(node, n.BoundaryEvent) or node.attached_to in placeholders:
        return False
    return not isinstance(model.nodes.get(node.attached_to), _ACTIVITIES)


def _boundaries(
    model: ProcessModel, placeholders: frozenset[str], warnings: list[str]
) -> Iterator[Problem]:
    for node in model.nodes.values():
        if not isinstance(node, n.BoundaryEvent) or node.attached_to in placeholders:
            continue
        host = model.nodes.get(node.attached_to)
        if isinstance(host, n.PassThrough | n.DecisionTask) or (
            isinstance(host, n.ScriptTask) and host.is_cel
        ):
            warnings.append(
                f"boundary event '{node.id}' is attached to '{host.id}', which completes at "
                "once: it never fires"
            )
        if host is None:
            yield _at(
                node,
                f"boundary event '{node.id}' is attached to '{node.attached_to}', which does "
                "not exist: set attachedToRef to a task, sub-process or call activity",
            )
        elif not isinstance(host, _ACTIVITIES):
            yield _at(
                node,
                f"boundary event '{node.id}' is attached to '{host.id}', which is not an "
                "activity: only tasks, sub-processes and call activities have boundary events",
            )
        if node.is_error and not node.cancel_activity:
            yield _at(
                node,
                f"error boundary event '{node.id}' is non-interrupting: error events always "
                "interrupt the task, remove cancelActivity=false",
            )


def _entries(model: ProcessModel, container: str | None) -> list[str]:
    """Where tokens start in a container: its start events (in a sub-process without
    one, its nodes without incoming flows) and its event sub-processes (whose start
    events are their triggers)."""
    found = [x.id for x in model.event_subprocesses(container)]
    if container is None:
        return [*(x.id for x in model.start_events), *found]
    host = model.nodes.get(container)
    if isinstance(host, n.EventSubProcess):
        trigger = model.trigger_of(container)
        return [trigger.id] if trigger else []
    return [*(x.id for x in model.starts_in(container)), *found]


def _reached(model: ProcessModel, starts: Iterable[str], without: str | None = None) -> set[str]:
    """Every node a token can reach from ``starts`` (never passing ``without``)."""
    seen: set[str] = set()
    queue = deque(starts)
    while queue:
        node_id = queue.popleft()
        if node_id in seen or node_id not in model.nodes or node_id == without:
            continue
        seen.add(node_id)
        queue.extend(f.target for f in model.outgoing.get(node_id, ()))
        queue.extend(b.id for b in model.boundaries.get(node_id, ()))
        node = model.nodes[node_id]
        if isinstance(node, n.BoundaryEvent) and node.compensate_with is not None:
            queue.append(node.compensate_with)
        if node_id in model.link_targets:
            queue.append(model.link_targets[node_id])
        if isinstance(node, n.SubProcess | n.EventSubProcess):
            queue.extend(_entries(model, node_id))
    return seen


def _loop_joins(model: ProcessModel, warnings: list[str]) -> None:
    """A parallel join with an incoming flow that only a token which passed the join
    itself can reach (a loop back into it) never fires: BPMN 2.0.2 waits for a token on
    every incoming flow. (Engines that count arrivals instead would fire it.)"""
    entries = _entries(model, None)
    for node in model.nodes.values():
        flows = model.incoming.get(node.id, ())
        if not isinstance(node, n.ParallelGateway) or len(flows) < 2:
            continue
        reached = _reached(model, entries, without=node.id)
        fed = sorted(f.id for f in flows if f.source not in reached)
        if fed and len(fed) < len(flows):
            warnings.append(
                f"parallel gateway '{node.id}' joins flow(s) {', '.join(fed)} that only a "
                f"token which passed '{node.id}' can reach (a loop back into it): it waits "
                "for a token on every incoming flow, so it can never fire; merge the loop "
                "back with an exclusive gateway before it"
            )


def _reachability(model: ProcessModel, placeholders: frozenset[str], warnings: list[str]) -> None:
    """Warn about a node no start event reaches: it can never run, but it harms nothing,
    and Camunda 7 deploys it (its BpmnParse has no such rule; Camunda's own test models
    hold such nodes, e.g. an end event left without an incoming flow)."""
    seen: set[str] = set()
    # What only a refused element leads to is not a second problem: start there too.
    queue = deque([*_entries(model, None), *placeholders])
    while queue:
        node_id = queue.popleft()
        if node_id in seen or node_id not in model.nodes:
            continue
        seen.add(node_id)
        queue.extend(f.target for f in model.outgoing.get(node_id, ()))
        queue.extend(b.id for b in model.boundaries.get(node_id, ()))
        node = model.nodes[node_id]
        if isinstance(node, n.BoundaryEvent) and node.compensate_with is not None:
            queue.append(node.compensate_with)  # a handler is reached through its event
        if node_id in model.link_targets:
            queue.append(model.link_targets[node_id])
        if isinstance(model.nodes[node_id], n.SubProcess | n.EventSubProcess):
            queue.extend(_entries(model, node_id))
    if not model.start_events:
        return  # already reported; every node would be unreachable
    for node in model.nodes.values():
        if isinstance(node, n.Activity) and node.for_compensation:
            continue  # reached through its compensation event (validate_compensation)
        if node.id not in seen and not _bad_boundary(model, node, placeholders):
            warnings.append(
                f"'{node.id}' cannot be reached from a start event, so it never runs: "
                "connect it with a sequence flow or remove it"
            )


def _triggers_in_sub_processes(model: ProcessModel) -> Iterator[Problem]:
    """A message, signal or conditional start event directly in a sub-process (not an
    event sub-process): entering the sub-process never waits for it, so it can never run.
    Camunda 7 refuses it too ("... only allowed on start event if subprocess is an event
    subprocess")."""
    for container, members in model.members.items():
        scope = model.nodes.get(container) if container is not None else None
        if not isinstance(scope, n.SubProcess):
            continue
        for node in members:
            # timer, error, escalation and compensation starts there have their own
            # refusals (validate_scopes, validate_events, validate_compensation)
            if isinstance(node, n.StartEvent) and node.event is not None:
                yield _at(
                    node,
                    f"start event '{node.id}' in sub-process '{scope.id}' waits for an "
                    "event, which only an event sub-process's start event may: make it a "
                    "none start event, or put it in an event sub-process "
                    '(triggeredByEvent="true")',
                )


def _degrees(model: ProcessModel, placeholders: frozenset[str]) -> Iterator[Problem]:
    for node in model.nodes.values():
        if node.id in placeholders:
            continue
        outgoing = model.outgoing.get(node.id, ())
        incoming = model.incoming.get(node.id, ())
        if isinstance(node, n.EndEvent):
            if outgoing:
                yield _at(node, f"end event '{node.id}' has outgoing flows: remove them")
            continue
        # Anything else may end a path (BPMN 2.0 13.2.1: its token is consumed there, an
        # implicit end; a gateway too, as in Camunda). An event-based gateway without
        # events after it would wait for nothing, for ever.
        if not outgoing and isinstance(node, n.EventBasedGateway):
            yield _at(
                node,
                f"event-based gateway '{node.id}' has no outgoing sequence flow: connect it "
                "to the message, signal or timer events it waits for",
            )
        if isinstance(node, n.StartEvent | n.BoundaryEvent | n.EventSubProcess) and incoming:
            if isinstance(node, n.EventSubProcess):
                continue  # reported with the other event sub-process checks
            kind = "start" if isinstance(node, n.StartEvent) else "boundary"
            yield _at(
                node,
                f"{kind} event '{node.id}' has incoming flows: nothing may flow into a "
                f"{kind} event, point them elsewhere",
            )


def _conditions(model: ProcessModel, warnings: list[str]) -> Iterator[Problem]:
    for node in model.nodes.values():
        outgoing = model.outgoing.get(node.id, ())
        if isinstance(node, n.ExclusiveGateway):
            yield from _exclusive(model, node, outgoing, warnings)
            continue
        if isinstance(node, n.Activity):
            yield from _activity_flows(model, node, outgoing)
            continue
        if isinstance(node, n.StartEvent):
            # Camunda's suite uses them: taken as leaving an activity (every true and
            # every unconditioned flow), evaluated over the start's variables.
            for flow in outgoing:
                if flow.condition is not None:
                    try:
                        compile_condition(flow.condition)
                    except ExpressionError as exc:
                        yield _at(flow, f"flow '{flow.id}': {exc}")
            continue
        for flow in outgoing:
            if flow.condition is None:
                continue
            if node.conditional_fork:
                continue  # checked with its gateway (inclusive, complex)
            if isinstance(node, n.ParallelGateway):
                yield _at(
                    flow,
                    f"flow '{flow.id}' leaves parallel gateway '{node.id}' with a condition; "
                    "a parallel gateway takes every path: remove the condition or use an "
                    "exclusive gateway",
                )
            else:
                yield _at(
                    flow,
                    f"flow '{flow.id}' has a condition but leaves '{node.id}', which is not "
                    "a gateway or an activity: conditions are only evaluated there, add an "
                    "exclusive gateway after the element",
                )


def _activity_flows(
    model: ProcessModel, node: n.Activity, outgoing: tuple[n.Flow, ...]
) -> Iterator[Problem]:
    """Conditional flows and the default flow leaving an activity (taken when it
    completes: every unconditioned and every true flow, else the default)."""
    if node.default_flow is not None:
        ids = [f.id for f in outgoing]
        other = next((f for f in model.flows if f.id == node.default_flow), None)
        if other is None:
            yield _at(
                node,
                f"the default flow '{node.default_flow}' of activity '{node.id}' does not "
                f"exist: pick one of its outgoing flows ({', '.join(ids) or 'none'})",
            )
        elif other.source != node.id:
            yield _at(
                node,
                f"the default flow '{node.default_flow}' of activity '{node.id}' leaves "
                f"'{other.source}', not '{node.id}': pick one of its outgoing flows "
                f"({', '.join(ids) or 'none'})",
            )
        elif other.condition is not None:
            yield _at(
                other,
                f"flow '{other.id}' is the default of activity '{node.id}' and has a "
                "condition: a default flow is taken when no condition is true, remove its "
                "condition",
            )
    for flow in outgoing:
        if flow.condition is not None and flow.id != node.default_flow:
            try:
                compile_condition(flow.condition)
            except ExpressionError as exc:
                yield _at(flow, f"flow '{flow.id}': {exc}")


def _exclusive(
    model: ProcessModel,
    node: n.ExclusiveGateway,
    outgoing: tuple[n.Flow, ...],
    warnings: list[str],
) -> Iterator[Problem]:
    ids = [f.id for f in outgoing]
    if node.default_flow is not None and node.default_flow not in ids:
        yield _at(
            node,
            f"the default flow '{node.default_flow}' of gateway '{node.id}' is not one of "
            f"its outgoing flows ({', '.join(ids) or 'none'}): pick one of them",
        )
    always: n.Flow | None = None  # the first flow without a condition (not the default)
    for flow in outgoing:
        if flow.condition is not None:
            try:
                compile_condition(flow.condition)
            except ExpressionError as exc:
                yield _at(flow, f"flow '{flow.id}': {exc}")
            if flow.id == node.default_flow:
                warnings.append(
                    f"flow '{flow.id}' is the default of gateway '{node.id}'; its condition "
                    "is ignored"
                )
        elif flow.id != node.default_flow and always is None:
            always = flow
    later = [f.id for f in outgoing if f.id != node.default_flow]
    if always is not None and len(outgoing) > 1:
        after = later[later.index(always.id) + 1 :]
        warnings.append(
            f"flow '{always.id}' leaves exclusive gateway '{node.id}' without a condition: "
            "it is taken whenever no flow before it matches"
            + (f", so {', '.join(after)} are never taken" if after else "")
        )
    if len(outgoing) > 1 and node.default_flow is None and always is None:
        warnings.append(
            f"exclusive gateway '{node.id}' has no default flow: an instance where no "
            "condition is true stops there with an incident"
        )


def _tasks(model: ProcessModel, warnings: list[str]) -> Iterator[Problem]:
    for flow in model.flows:
        yield from _listener_scripts(flow.id, flow.listeners, flow.line)
        source, target = model.nodes.get(flow.source), model.nodes.get(flow.target)
        if isinstance(source, n.EventBasedGateway) and target and target.listens_first:
            # the event that comes first passes its node in the transaction that caught it
            warnings.append(
                f"the start listeners of '{target.id}' are ignored by this engine: an event "
                f"after the event-based gateway '{source.id}' is passed when its event comes; "
                "put them on the gateway, or its end listeners on the event"
            )
    yield from _listener_scripts(model.key, model.listeners, None)
    for node in model.nodes.values():
        yield from _listener_scripts(node.id, node.listeners, node.line)
        if isinstance(node, n.ScriptTask) and node.is_cel:
            yield from _cel_script(node)
            continue
        if isinstance(node, n.ScriptTask) and node.is_python:
            yield from _python_script(node)
        if not isinstance(node, n.ServiceTask):
            continue
        if node.handler is not None and node.topic is not None:
            yield _at(
                node,
                f"service task '{node.id}' has both handler '{node.handler}' and topic "
                f"'{node.topic}': keep one (handler = inline, topic = external worker)",
            )
        elif node.handler is None and node.topic is None:
            yield _at(
                node,
                f"service task '{node.id}' has neither a handler nor a topic: set "
                'bpm:handler="name" or camunda:type="external" camunda:topic="topic"',
            )
        if node.lease_seconds is not None and node.lease_seconds <= 0:
            yield _at(node, f"service task '{node.id}' has a lease <= 0: use PT30S or more")
        elif node.lease_seconds is not None and node.topic is not None:
            warnings.append(
                f"bpm:lease on external task '{node.id}' is ignored: an external task is "
                "locked for the lockDuration its worker asks for in fetchAndLock"
            )
        if node.topic is not None and len(node.topic) > MAX_ID:
            yield _at(
                node, f"the topic of '{node.id}' is too long: use {MAX_ID} characters or fewer"
            )
        if not -(2**63) <= node.priority < 2**63:
            yield _at(node, f"the priority of '{node.id}' is out of range: use a 64-bit integer")


def _user_tasks(model: ProcessModel) -> Iterator[Problem]:
    for node in model.nodes.values():
        if isinstance(node, n.UserTask) and node.priority is not None:
            text = node.priority.strip()
            if text.lstrip("-").isdigit() and not -(2**31) <= int(text) < 2**31:
                yield _at(node, f"the priority of '{node.id}' is out of range: use 0 to 100")


def _cel_script(node: n.ScriptTask) -> Iterator[Problem]:
    if not (node.script or "").strip():
        yield _at(node, f"CEL script task '{node.id}' has no script: write the expression")
        return
    try:
        compile_expression(node.script or "")
    except ExpressionError as exc:
        yield _at(node, f"script of '{node.id}': {exc}")
    if node.handler is not None or node.topic is not None:
        yield _at(node, f"CEL script task '{node.id}' also names a handler or topic: keep one")


def _python_script(node: n.ScriptTask) -> Iterator[Problem]:
    if not (node.script or "").strip():
        yield _at(node, f"Python script task '{node.id}' has no script: write the script")
        return
    try:
        compile_python(node.script or "")
    except ScriptError as exc:
        yield _at(node, f"Python script of '{node.id}' is refused: {exc}")


def _listener_scripts(
    owner: str, listeners: tuple[n.Listener, ...], line: int | None
) -> Iterator[Problem]:
    """The Python listener scripts of a node, flow or process, compiled (refused at deploy)."""
    for listener in listeners:
        if listener.script is None:
            continue
        try:
            compile_python(listener.script)
        except ScriptError as exc:
            yield Problem(f"the {listener.label} of '{owner}' is refused: {exc}", owner, line)


def _starts(model: ProcessModel, warnings: list[str]) -> None:
    plain = [s.id for s in model.start_events if s.timer is None and s.event is None]
    if len(plain) > 1:
        warnings.append(
            f"process '{model.key}' has several none start events ({', '.join(plain)}): "
            f"start() uses '{plain[0]}' unless start_event= names another"
        )


def _timers(model: ProcessModel, warnings: list[str]) -> Iterator[Problem]:
    for node in model.nodes.values():
        if isinstance(node, n.StartEvent) and node.timer is not None and node.container is None:
            try:
                recurrence(node.timer)
            except TimerError as exc:
                yield _at(node, f"timer of start event '{node.id}': {exc}")
            continue
        if isinstance(node, n.TimerCatchEvent) and node.timer is None:
            yield _at(
                node,
                f"timer event '{node.id}' has no timer: add timeDuration, timeDate or timeCycle",
            )
        timer = getattr(node, "timer", None)
        if not isinstance(timer, n.TimerSpec):
            continue
        try:
            check(timer)
        except TimerError as exc:
            yield _at(node, f"timer of '{node.id}': {exc}")
        if isinstance(node, n.TimerCatchEvent) and timer.kind is n.TimerKind.CYCLE:
            warnings.append(
                f"intermediate timer '{node.id}' has a cycle: a catch event fires once, "
                "after the first interval"
            )
