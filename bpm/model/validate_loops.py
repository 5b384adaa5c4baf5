"""Deploy-time check for loops that can never end: cycles of nodes that never wait.

A token moves through gateways, none events and pass-through tasks within one transaction
(synchronous continuation). A cycle made only of such nodes changes nothing on its way
round (no handler runs, no variable is written, nothing waits), so a token that takes it
once takes it for ever. Deploy refuses such a cycle; the walker's step bound
(:data:`bpm.runtime.walker.DEFAULT_MAX_STEPS`) stops what no static check can see.
"""

from __future__ import annotations

from collections.abc import Iterator

from bpm.model import nodes as n
from bpm.model.process import ProcessModel

__all__ = ["endless_loops"]


def _inert(model: ProcessModel, node: n.Node) -> bool:
    """Whether a token passes ``node`` at once without changing anything. A join (a
    parallel or inclusive gateway with several incoming flows) waits; anything this check
    does not know (new event kinds) counts as possibly waiting."""
    if isinstance(node, n.ExclusiveGateway):
        return True
    if isinstance(node, n.ParallelGateway | n.InclusiveGateway):
        return len(model.incoming.get(node.id, ())) <= 1
    if type(node) is n.PassThrough:
        # Variable mappings or a multi-instance marker change something; boundary
        # events make it an activity a token can leave another way.
        return node.loop is None and not node.has_mappings and node.id not in model.boundaries
    return False


def _components(model: ProcessModel, nodes: set[str]) -> list[list[str]]:
    """Strongly connected components of the flow graph restricted to ``nodes`` (Tarjan's
    algorithm, iterative so a long chain cannot hit the recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def successors(node_id: str) -> list[str]:
        return [f.target for f in model.outgoing.get(node_id, ()) if f.target in nodes]

    for root in sorted(nodes):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(successors(root)))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node_id, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(successors(child))))
                elif child in on_stack:
                    low[node_id] = min(low[node_id], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node_id])
            if low[node_id] == index[node_id]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node_id:
                        break
                out.append(component)
    return out


def endless_loops(model: ProcessModel) -> Iterator[tuple[n.Node, str]]:
    """One ``(node, message)`` per cycle made only of nodes that never wait: the node to
    point at (the first by id) and a message naming every node of the cycle."""
    inert = {node.id for node in model.nodes.values() if _inert(model, node)}
    for component in _components(model, inert):
        members = set(component)
        if len(component) == 1 and not any(
            f.target in members for f in model.outgoing.get(component[0], ())
        ):
            continue
        ordered = sorted(component)
        names = ", ".join(f"'{i}'" for i in ordered)
        yield (
            model.nodes[ordered[0]],
            f"the loop through {names} has no task and no wait: a token that enters it goes "
            "round for ever without changing anything; put a task, a timer or a message "
            "event on the loop, or remove the flow that closes it",
        )
