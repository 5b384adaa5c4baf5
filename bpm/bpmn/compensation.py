"""BPMN compensation: ``compensateEventDefinition`` on boundary, throw, end and start
events, ``isForCompensation`` handlers, and the associations that link the two."""

from __future__ import annotations

import dataclasses
from collections.abc import MutableMapping
from xml.etree.ElementTree import Element

from bpm.bpmn.context import Context
from bpm.bpmn.namespaces import local
from bpm.errors import Problem
from bpm.model import nodes as n

__all__ = ["COMPENSATE", "activity_ref", "is_for_compensation", "link_handlers"]

COMPENSATE = "compensateEventDefinition"
UNLINKED = ""
"""``compensate_with`` of a compensation boundary event before its association is read."""


def is_for_compensation(el: Element) -> bool:
    """``isForCompensation="true"``: the activity is a compensation handler."""
    return (el.get("isForCompensation") or "").strip().lower() == "true"


def activity_ref(defn: Element, owner: Element, ctx: Context) -> str | None:
    """The ``activityRef`` of a compensate definition (None: the whole scope); warns that
    ``waitForCompletion="false"`` is not honoured."""
    if (defn.get("waitForCompletion") or "").strip().lower() == "false":
        ctx.warn(
            owner,
            defn,
            'waitForCompletion="false" is not honoured: the event waits until compensation is done',
        )
    return (defn.get("activityRef") or "").strip() or None


def link_handlers(process: Element, nodes: MutableMapping[str, n.Node], ctx: Context) -> None:
    """Give each compensation boundary event the handler its association points to."""
    links: dict[str, list[str]] = {}
    for el in process.iter():
        if local(el) == "association":
            source, target = el.get("sourceRef") or "", el.get("targetRef") or ""
            links.setdefault(source, []).append(target)
            links.setdefault(target, []).append(source)  # drawn either way round
    for node in list(nodes.values()):
        if not isinstance(node, n.BoundaryEvent) or node.compensate_with != UNLINKED:
            continue
        found = [x for x in links.get(node.id, ()) if x in nodes and x != node.attached_to]
        if not found:
            ctx.problems.append(
                Problem(
                    f"compensation boundary event '{node.id}' has no association to its "
                    "handler: draw an association from it to a task marked "
                    'isForCompensation="true"',
                    node.id,
                    node.line,
                )
            )
            ctx.placeholders.add(node.id)
            continue
        if len(found) > 1:
            ctx.problems.append(
                Problem(
                    f"compensation boundary event '{node.id}' is associated with "
                    f"{', '.join(sorted(found))}: keep one handler",
                    node.id,
                    node.line,
                )
            )
        nodes[node.id] = dataclasses.replace(node, compensate_with=found[0])
