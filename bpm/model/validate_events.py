"""Deploy-time checks of link and escalation events.

A link throw event needs exactly one link catch event of the same name in its own
(sub-)process: a link never crosses a sub-process border (BPMN 2.0, 10.5.5). Link events
are joined by their names, not by flows: nothing flows into a catch or out of a throw.
"""

from __future__ import annotations

from collections.abc import Iterator

from bpm.errors import Problem
from bpm.model import nodes as n
from bpm.model.element_types import element_type
from bpm.model.process import ProcessModel

__all__ = ["check_events"]


def _at(node: n.Node, message: str) -> Problem:
    return Problem(message, node.id, node.line, element_type=element_type(node))


def _where(container: str | None) -> str:
    return f"sub-process '{container}'" if container else "the process"


def check_events(model: ProcessModel, warnings: list[str]) -> Iterator[Problem]:
    """Every problem of the link and escalation events of ``model`` (and a warning for an
    escalation boundary event on an activity nothing inside can escalate from)."""
    for node in model.nodes.values():
        if not isinstance(node, n.BoundaryEvent) or not node.escalation:
            continue
        host = model.nodes.get(node.attached_to)
        if host is not None and not isinstance(host, n.SubProcess | n.CallActivity):
            warnings.append(
                f"escalation boundary event '{node.id}' is attached to '{host.id}', which "
                "throws no escalation (only a sub-process or call activity has events "
                "inside): it never fires"
            )
    catches: dict[tuple[str | None, str], list[n.LinkCatchEvent]] = {}
    for node in model.nodes.values():
        if isinstance(node, n.LinkCatchEvent):
            catches.setdefault((node.container, node.link), []).append(node)
    for (container, link), found in catches.items():
        for extra in found[1:]:
            yield _at(
                extra,
                f"link catch event '{extra.id}' has link name '{link}', like "
                f"'{found[0].id}' in {_where(container)}: a link name may be caught once per "
                "(sub-)process, rename one",
            )
    for node in model.nodes.values():
        if isinstance(node, n.LinkThrowEvent | n.LinkCatchEvent) and not node.link:
            yield _at(node, f"link event '{node.id}' has no name: set name on its definition")
            continue
        if isinstance(node, n.LinkThrowEvent):
            yield from _throw(model, node, catches)
        elif isinstance(node, n.LinkCatchEvent) and model.incoming.get(node.id):
            yield _at(
                node,
                f"link catch event '{node.id}' has incoming flows: a link catch event is "
                "reached only by its link throw events, point the flows elsewhere",
            )
        elif isinstance(node, n.EscalationThrowEvent) and not node.escalation_code:
            yield _at(
                node,
                f"escalation event '{node.id}' throws no escalation code: give its "
                "escalation an escalationCode",
            )
        elif (
            isinstance(node, n.EndEvent)
            and node.kind is n.EndKind.ESCALATION
            and not node.escalation_code
        ):
            yield _at(
                node,
                f"escalation end event '{node.id}' throws no escalation code: give its "
                "escalation an escalationCode",
            )


def _throw(
    model: ProcessModel,
    node: n.LinkThrowEvent,
    catches: dict[tuple[str | None, str], list[n.LinkCatchEvent]],
) -> Iterator[Problem]:
    if model.outgoing.get(node.id):
        yield _at(
            node,
            f"link throw event '{node.id}' has outgoing flows: the token continues at the "
            f"link catch event '{node.link}', remove the flows",
        )
    if (node.container, node.link) in catches:
        return
    elsewhere = sorted(
        c.id for (container, link), found in catches.items() if link == node.link for c in found
    )
    hint = (
        f" ('{elsewhere[0]}' catches it in another (sub-)process: a link cannot cross a "
        "sub-process border)"
        if elsewhere
        else ""
    )
    yield _at(
        node,
        f"link throw event '{node.id}' goes to link '{node.link}', which no link catch event "
        f"in {_where(node.container)} catches{hint}: add an intermediate catch event with "
        f'<linkEventDefinition name="{node.link}"/> there',
    )
