"""Deploy-time checks of compensation: handlers, compensation boundary events, throw
events and compensation event sub-processes.

Called by :func:`bpm.model.validate.check_model`; each problem names its element.
"""

from __future__ import annotations

from collections.abc import Iterator

from bpm.errors import Problem
from bpm.model import nodes as n
from bpm.model.element_types import element_type
from bpm.model.process import ProcessModel

__all__ = ["check_compensation"]


def _at(node: n.Node, message: str) -> Problem:
    return Problem(message, node.id, node.line, element_type=element_type(node))


def check_compensation(model: ProcessModel, warnings: list[str]) -> Iterator[Problem]:
    """Every problem of the model's compensation (none for a process without any)."""
    yield from _boundaries(model)
    yield from _handlers(model, warnings)
    yield from _throws(model, warnings)
    yield from _event_subprocesses(model)


def _boundaries(model: ProcessModel) -> Iterator[Problem]:
    seen: dict[str, str] = {}
    for node in model.nodes.values():
        if not isinstance(node, n.BoundaryEvent) or node.compensate_with is None:
            continue
        handler = model.nodes.get(node.compensate_with)
        if node.attached_to in seen:
            yield _at(
                node,
                f"'{node.attached_to}' has two compensation boundary events "
                f"('{seen[node.attached_to]}' and '{node.id}'): keep one, an activity has "
                "one compensation handler",
            )
        seen[node.attached_to] = node.id
        if handler is None:
            yield _at(
                node,
                f"compensation boundary event '{node.id}' is associated with "
                f"'{node.compensate_with}', which is not a node of the process: associate it "
                'with a task marked isForCompensation="true"',
            )
        elif not isinstance(handler, n.Activity) or not handler.for_compensation:
            yield _at(
                node,
                f"compensation boundary event '{node.id}' is associated with "
                f"'{handler.id}', which is not a compensation handler: mark that task "
                'isForCompensation="true" (builder: for_compensation=True), or associate '
                "the event with a task that is",
            )
        elif handler.container != node.container:
            yield _at(
                node,
                f"compensation handler '{handler.id}' is not in the same (sub-)process as "
                f"the activity '{node.attached_to}' it compensates: move it next to it",
            )
        if model.outgoing.get(node.id):
            yield _at(
                node,
                f"compensation boundary event '{node.id}' has outgoing sequence flows: a "
                "compensation event leads to its handler through an association only, "
                "remove the flows",
            )


def _handlers(model: ProcessModel, warnings: list[str]) -> Iterator[Problem]:
    used = set(model.compensation_handlers.values())
    for node in model.nodes.values():
        if not isinstance(node, n.Activity) or not node.for_compensation:
            continue
        if model.incoming.get(node.id) or model.outgoing.get(node.id):
            yield _at(
                node,
                f"compensation handler '{node.id}' has sequence flows: a handler runs only "
                "when its activity is compensated, never on a path; remove its flows",
            )
        if isinstance(node, n.EventSubProcess):
            yield _at(node, f"event sub-process '{node.id}' cannot be a compensation handler")
        if node.id not in used:
            warnings.append(
                f"compensation handler '{node.id}' is not associated with any compensation "
                "boundary event: it never runs"
            )


def _scope_of_throw(model: ProcessModel, node: n.Node) -> str | None:
    """The container whose activities a throw event may name: its own; inside a
    compensation event sub-process, the sub-process that one compensates."""
    container = node.container
    host = model.nodes.get(container) if container else None
    if isinstance(host, n.EventSubProcess):
        trigger = model.trigger_of(host.id)
        if trigger is not None and trigger.compensation_start:
            return host.container
    return container


def _throws(model: ProcessModel, warnings: list[str]) -> Iterator[Problem]:
    for node in model.nodes.values():
        if isinstance(node, n.CompensationThrowEvent) or (
            isinstance(node, n.EndEvent) and node.kind is n.EndKind.COMPENSATE
        ):
            ref = node.activity_ref
        else:
            continue
        if ref is None:
            continue
        scope = _scope_of_throw(model, node)
        target = model.nodes.get(ref)
        names = sorted(
            x.id
            for x in model.members.get(scope, ())
            if isinstance(x, n.Activity)
            and not isinstance(x, n.EventSubProcess)
            and not x.for_compensation
        )
        where = f"sub-process '{scope}'" if scope else "the process"
        if (
            target is None
            or not isinstance(target, n.Activity)
            or isinstance(target, n.EventSubProcess)
            or target.for_compensation
            or target.container != scope
        ):
            yield _at(
                node,
                f"compensation event '{node.id}' has activityRef '{ref}', which names no "
                f"activity of {where}: name one of {', '.join(names) or 'none'}, or remove "
                "activityRef to compensate them all",
            )
        elif ref not in model.compensable:
            warnings.append(
                f"compensation event '{node.id}' compensates '{ref}', which has no "
                "compensation handler: it does nothing"
            )


def _event_subprocesses(model: ProcessModel) -> Iterator[Problem]:
    per_container: dict[str | None, str] = {}
    for node in model.nodes.values():
        if not isinstance(node, n.StartEvent) or not node.compensation_start:
            continue
        esp = model.nodes.get(node.container) if node.container else None
        if not isinstance(esp, n.EventSubProcess):
            yield _at(
                node,
                f"compensation start event '{node.id}' is not in an event sub-process: "
                "only an event sub-process starts on compensation",
            )
            continue
        if esp.container is None:
            yield _at(
                esp,
                f"compensation event sub-process '{esp.id}' is drawn in the process itself: "
                "draw it inside the sub-process whose compensation it performs",
            )
        if esp.container in per_container:
            yield _at(
                esp,
                f"'{esp.container}' has two compensation event sub-processes "
                f"('{per_container[esp.container]}' and '{esp.id}'): keep one",
            )
        per_container[esp.container] = esp.id
