"""Reachability inside one container of a process graph, for inclusive joins.

An inclusive gateway joins when no live token of its scope can still reach it (BPMN 2.0,
13.3.2). Which nodes can reach it is a property of the model: computed once per model, so
the run-time check is a lookup per live token, under the instance lock.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Protocol

from bpm.model import nodes as n

__all__ = ["Graph", "join_cycles", "upstream_of"]


class Graph(Protocol):
    """What reachability reads of a :class:`~bpm.model.process.ProcessModel` (which
    imports this module: a protocol keeps the import one way)."""

    @property
    def nodes(self) -> Mapping[str, n.Node]: ...

    @property
    def incoming(self) -> Mapping[str, tuple[n.Flow, ...]]: ...

    @property
    def link_targets(self) -> Mapping[str, str]: ...

    @property
    def upstream(self) -> Mapping[str, frozenset[str]]: ...


def _predecessors(model: Graph, node_id: str) -> list[str]:
    """Nodes of the same container a token moves from to ``node_id``: along a flow, from
    the activity a boundary event is attached to, or from a link throw event."""
    out = [f.source for f in model.incoming.get(node_id, ())]
    node = model.nodes.get(node_id)
    if isinstance(node, n.BoundaryEvent) and node.attached_to:
        out.append(node.attached_to)
    if isinstance(node, n.LinkCatchEvent):
        out += [k for k, target in model.link_targets.items() if target == node_id]
    return out


def upstream_of(model: Graph, gateway_id: str) -> frozenset[str]:
    """The nodes from which a token can reach ``gateway_id`` without passing through it."""
    gateway = model.nodes[gateway_id]
    seen: set[str] = set()
    queue = deque(_predecessors(model, gateway_id))
    while queue:
        node_id = queue.popleft()
        node = model.nodes.get(node_id)
        if node_id in seen or node_id == gateway_id or node is None:
            continue
        if node.container != gateway.container:
            continue  # a flow may not cross a container: validation reports it
        seen.add(node_id)
        queue.extend(_predecessors(model, node_id))
    return frozenset(seen)


def _parallel_joins(model: Graph) -> list[str]:
    return [
        node.id
        for node in model.nodes.values()
        if isinstance(node, n.ParallelGateway) and len(model.incoming.get(node.id, ())) > 1
    ]


def join_cycles(model: Graph) -> list[tuple[str, str]]:
    """``(inclusive join, parallel join)`` pairs on one loop: the parallel join waits for
    the token the inclusive join sends, while a token waiting at the parallel join can
    still reach the inclusive one, which therefore waits too. Neither could ever fire.

    (Two inclusive gateways on one loop are fine: one merging the loop back in and one
    joining the branches is a common drawing, and neither waits for the other.)"""
    found = []
    joins = _parallel_joins(model)
    for gateway_id, upstream in model.upstream.items():
        for other in joins:
            if other == gateway_id or other not in upstream:
                continue
            if gateway_id in upstream_of(model, other):
                found.append((gateway_id, other))
    return found
