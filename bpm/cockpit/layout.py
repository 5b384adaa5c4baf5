"""Automatic layout of a process graph, left to right, for models without diagram data.

A layered (Sugiyama-style) layout, small and deterministic:

1. cycles are broken by reversing the back edges a depth-first search finds from the start
   events (loops are drawn as edges that run below the diagram and back);
2. every node gets the layer of its longest path from a source;
3. edges that span several layers get a dummy node per layer they cross, so they route
   around the nodes in between;
4. the order inside each layer is improved by barycenter sweeps (fewer crossings);
5. vertical positions follow the neighbours (chains come out straight), keeping the order
   and a minimum gap; edges are orthogonal polylines.

Boundary events sit on the bottom edge of their activity; their outgoing flows are laid out
as if they left the activity. A flow's label (its name, else its condition) sits above the
first stretch after the flow leaves its source's column, where no sibling flow runs; the gap
after a column widens to hold its labels. Pure: a :class:`ProcessModel` in, boxes and points
out.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import pairwise

from bpm.model import nodes as n
from bpm.model.process import ProcessModel

Point = tuple[float, float]

MARGIN = 40.0
COLUMN_GAP = 70.0
ROW_GAP = 40.0
SWEEPS = 6
# bpmn-js draws labels in an 11 px font: about 6.5 px a character, 14 px a line.
LABEL_CHAR = 6.5
LABEL_LINE = 14.0
LABEL_MAX_WIDTH = 150.0


@dataclass(frozen=True)
class Box:
    x: float
    y: float
    w: float
    h: float

    @property
    def cx(self) -> float:
        return self.x + self.w / 2

    @property
    def cy(self) -> float:
        return self.y + self.h / 2


@dataclass(frozen=True)
class Layout:
    shapes: dict[str, Box]
    edges: dict[str, tuple[Point, ...]]
    width: float
    height: float
    labels: dict[str, Box] = field(default_factory=dict)  # flow id -> its label's box


def flow_label(flow: n.Flow) -> str:
    """What a flow says on the diagram: its name, else its condition (Camunda Modeler
    users name a flow after its condition). The default flow's slash comes from its
    gateway's ``default``."""
    return flow.name or flow.condition or ""


def label_size(text: str) -> tuple[float, float]:
    """Width and height of a label, wrapped at :data:`LABEL_MAX_WIDTH`."""
    width = LABEL_CHAR * len(text) + 8.0
    return min(width, LABEL_MAX_WIDTH), LABEL_LINE * math.ceil(width / LABEL_MAX_WIDTH)


def size_of(node: n.Node) -> tuple[float, float]:
    if isinstance(node, (n.ServiceTask, n.UserTask, n.DecisionTask)):
        return 100.0, 80.0
    if isinstance(node, (n.ExclusiveGateway, n.ParallelGateway)):
        return 50.0, 50.0
    return 36.0, 36.0


@dataclass
class _Graph:
    """The layered graph: real nodes, dummy nodes (``~flow~i``) and their edges."""

    layer: dict[str, int]
    succ: dict[str, list[str]]
    pred: dict[str, list[str]]
    chains: dict[str, list[str]]  # flow id -> node ids from source to target (with dummies)
    back: set[str]  # flow ids drawn as loops


def _anchor(model: ProcessModel, node_id: str) -> str:
    """Boundary events are laid out at their activity."""
    node = model.nodes.get(node_id)
    host = node.host if node is not None else None
    return host if host is not None else node_id


def _main_nodes(model: ProcessModel) -> list[str]:
    return [k for k, v in model.nodes.items() if v.host is None]


def _back_edges(model: ProcessModel, nodes: list[str]) -> set[str]:
    out: dict[str, list[n.Flow]] = defaultdict(list)
    for f in model.flows:
        out[_anchor(model, f.source)].append(f)
    has_incoming = {_anchor(model, f.target) for f in model.flows}
    roots = [x for x in nodes if isinstance(model.nodes[x], n.StartEvent)]
    roots += [x for x in nodes if x not in has_incoming and x not in roots]
    roots += [x for x in nodes if x not in roots]
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    back: set[str] = set()
    for root in roots:
        if root in state:
            continue
        state[root] = 1
        stack: list[tuple[str, int]] = [(root, 0)]
        while stack:
            node, i = stack.pop()
            edges = out[node]
            if i < len(edges):
                stack.append((node, i + 1))
                target = _anchor(model, edges[i].target)
                if state.get(target) == 1:
                    back.add(edges[i].id)
                elif target not in state:
                    state[target] = 1
                    stack.append((target, 0))
            else:
                state[node] = 2
    return back


def _layers(model: ProcessModel, nodes: list[str], back: set[str]) -> dict[str, int]:
    preds: dict[str, list[str]] = defaultdict(list)
    succs: dict[str, list[str]] = defaultdict(list)
    for f in model.flows:
        if f.id in back:
            continue
        s, t = _anchor(model, f.source), _anchor(model, f.target)
        if s != t:
            preds[t].append(s)
            succs[s].append(t)
    indeg = {x: len(preds[x]) for x in nodes}
    ready = [x for x in nodes if indeg[x] == 0]
    layer = {x: 0 for x in nodes}
    while ready:
        node = ready.pop(0)
        for t in succs[node]:
            layer[t] = max(layer[t], layer[node] + 1)
            indeg[t] -= 1
            if indeg[t] == 0:
                ready.append(t)
    return layer


def _graph(model: ProcessModel) -> _Graph:
    nodes = _main_nodes(model)
    back = _back_edges(model, nodes)
    layer = _layers(model, nodes, back)
    succ: dict[str, list[str]] = defaultdict(list)
    pred: dict[str, list[str]] = defaultdict(list)
    chains: dict[str, list[str]] = {}
    for f in model.flows:
        s, t = _anchor(model, f.source), _anchor(model, f.target)
        if f.id in back or s == t:
            chains[f.id] = [s, t]
            continue
        chain = [s]
        for i in range(layer[s] + 1, layer[t]):
            dummy = f"~{f.id}~{i}"
            layer[dummy] = i
            chain.append(dummy)
        chain.append(t)
        for a, b in pairwise(chain):
            succ[a].append(b)
            pred[b].append(a)
        chains[f.id] = chain
    return _Graph(layer, succ, pred, chains, back)


def _order(g: _Graph, first_seen: list[str]) -> list[list[str]]:
    depth = max(g.layer.values(), default=0) + 1
    rows: list[list[str]] = [[] for _ in range(depth)]
    seen = {x: i for i, x in enumerate(first_seen)}
    for node in sorted(g.layer, key=lambda x: (seen.get(x, len(seen)), x)):
        rows[g.layer[node]].append(node)
    for sweep in range(SWEEPS):
        down = sweep % 2 == 0
        indices = range(1, depth) if down else range(depth - 2, -1, -1)
        for i in indices:
            ref = rows[i - 1] if down else rows[i + 1]
            pos = {x: k for k, x in enumerate(ref)}
            links = g.pred if down else g.succ
            here = {x: k for k, x in enumerate(rows[i])}
            order = {x: _barycenter(x, pos, links, here) for x in rows[i]}
            rows[i].sort(key=order.__getitem__)
    return rows


def _barycenter(
    node: str, pos: dict[str, int], links: dict[str, list[str]], here: dict[str, int]
) -> float:
    """Mean position of the node's neighbours in the reference layer (its own if none)."""
    near = [pos[y] for y in links.get(node, ()) if y in pos]
    return sum(near) / len(near) if near else float(here[node])


def _heights(model: ProcessModel, node: str) -> tuple[float, float]:
    if node.startswith("~"):
        return 0.0, 10.0
    return size_of(model.nodes[node])


def _place(model: ProcessModel, g: _Graph, rows: list[list[str]]) -> dict[str, float]:
    """Vertical centers: follow the neighbours, keep the order and a gap."""
    y: dict[str, float] = {}
    for row in rows:
        top = 0.0
        for node in row:
            h = _heights(model, node)[1]
            y[node] = top + h / 2
            top += h + ROW_GAP
    for sweep in range(4):
        forward = sweep % 2 == 0
        for row in rows if forward else reversed(rows):
            links = g.pred if forward else g.succ
            wanted = []
            for node in row:
                near = [y[m] for m in links.get(node, ()) if m in y]
                wanted.append(sum(near) / len(near) if near else y[node])
            placed: list[float] = []
            for k, node in enumerate(row):
                h = _heights(model, node)[1]
                if k == 0:
                    placed.append(wanted[0])
                    continue
                prev_h = _heights(model, row[k - 1])[1]
                placed.append(max(wanted[k], placed[-1] + (prev_h + h) / 2 + ROW_GAP))
            # placed >= wanted: move the row back up by the mean difference, centred
            shift = sum(w - p for w, p in zip(wanted, placed, strict=True)) / max(len(row), 1)
            for node, p in zip(row, placed, strict=True):
                y[node] = p + shift
    return y


def layout(model: ProcessModel) -> Layout:
    """Boxes for every node and orthogonal waypoints for every flow of ``model``."""
    g = _graph(model)
    first_seen = _main_nodes(model)
    rows = _order(g, first_seen)
    ys = _place(model, g, rows)
    widths = [max((_heights(model, x)[0] for x in row), default=0.0) for row in rows]
    gaps = _column_gaps(model, g, len(rows))
    lefts: list[float] = []
    x = MARGIN
    for w, gap in zip(widths, gaps, strict=True):
        lefts.append(x)
        x += w + gap
    top = min((ys[v] - _heights(model, v)[1] / 2 for v in ys), default=0.0)
    dy = MARGIN + 20 - top
    centers: dict[str, Point] = {}
    shapes: dict[str, Box] = {}
    for i, row in enumerate(rows):
        for node in row:
            w, h = _heights(model, node)
            cx = lefts[i] + widths[i] / 2
            cy = ys[node] + dy
            centers[node] = (cx, cy)
            if not node.startswith("~"):
                shapes[node] = Box(cx - w / 2, cy - h / 2, w, h)
    _attach_boundaries(model, shapes)
    bottom = max((b.y + b.h for b in shapes.values()), default=0.0)
    edges: dict[str, tuple[Point, ...]] = {}
    loops = 0
    for f in model.flows:
        chain = g.chains[f.id]
        if f.id in g.back or chain[0] == chain[-1]:
            loops += 1
            edges[f.id] = _loop(shapes[f.source], shapes[f.target], bottom + 25 * loops)
        elif model.nodes[f.source].host is not None:
            edges[f.id] = _from_boundary(shapes[f.source], shapes[f.target])
        else:
            rows_y = [centers[x][1] for x in chain]
            bends = [
                lefts[g.layer[x]] + widths[g.layer[x]] + gaps[g.layer[x]] / 2 for x in chain[:-1]
            ]
            edges[f.id] = _route(shapes[f.source], shapes[f.target], rows_y, bends)
    labels: dict[str, Box] = {}
    for f in model.flows:
        text = flow_label(f)
        if text and len(edges[f.id]) >= 2:
            chain = g.chains[f.id]
            after = None
            if f.id not in g.back and model.nodes[f.source].host is None:
                column = g.layer[chain[0]]
                after = lefts[column] + widths[column] + gaps[column] / 2
            labels[f.id] = _label_box(edges[f.id], after, text)
    right = max((b.x + b.w for b in [*shapes.values(), *labels.values()]), default=0.0)
    return Layout(shapes, edges, right + MARGIN, bottom + 25 * loops + MARGIN, labels)


def _column_gaps(model: ProcessModel, g: _Graph, columns: int) -> list[float]:
    """The gap after each column: wide enough for the labels of the flows leaving it (a
    label sits in the half of the gap after the bend)."""
    gaps = [COLUMN_GAP] * columns
    for f in model.flows:
        text = flow_label(f)
        source = g.chains[f.id][0]
        if text and f.id not in g.back and source in g.layer:
            column = g.layer[source]
            gaps[column] = max(gaps[column], 2 * (label_size(text)[0] + 12.0))
    return gaps


def _label_box(points: tuple[Point, ...], after: float | None, text: str) -> Box:
    """Above the first horizontal stretch that reaches past ``after`` (the bend where the
    flow leaves its source's column, so siblings' stubs and turns stay clear), from its
    start; without ``after`` (loops, flows of boundary events), above the first one."""
    w, h = label_size(text)
    start = -math.inf if after is None else after
    for (x0, y0), (x1, y1) in pairwise(points):
        if abs(y0 - y1) < 0.01 and max(x0, x1) > start + 1.0:
            return Box(max(min(x0, x1), start) + 6.0, y0 - h - 3.0, w, h)
    (x0, y0), (x1, y1) = points[0], points[1]
    return Box(max(x0, x1) + 5.0, (y0 + y1) / 2 - h / 2, w, h)


def _attach_boundaries(model: ProcessModel, shapes: dict[str, Box]) -> None:
    for host, events in model.boundaries.items():
        box = shapes.get(host)
        if box is None:
            continue
        for k, event in enumerate(events):
            shapes[event.id] = Box(box.x + box.w - 38 - k * 42, box.y + box.h - 18, 36.0, 36.0)


def _simplify(points: list[Point]) -> tuple[Point, ...]:
    out: list[Point] = []
    for p in points:
        if out and abs(out[-1][0] - p[0]) < 0.01 and abs(out[-1][1] - p[1]) < 0.01:
            continue
        if len(out) >= 2:
            a, b = out[-2], out[-1]
            same_x = abs(a[0] - b[0]) < 0.01 and abs(b[0] - p[0]) < 0.01
            same_y = abs(a[1] - b[1]) < 0.01 and abs(b[1] - p[1]) < 0.01
            if same_x or same_y:
                out[-1] = p
                continue
        out.append(p)
    return tuple((round(x, 1), round(y, 1)) for x, y in out)


def _route(src: Box, dst: Box, ys: list[float], gaps: list[float]) -> tuple[Point, ...]:
    """Right side of the source, down or up in the gap after each column the edge crosses
    (``ys``: the rows of the source, its dummies and the target), into the target's left."""
    points: list[Point] = [(src.x + src.w, ys[0])]
    for k, gap in enumerate(gaps):
        points += [(gap, ys[k]), (gap, ys[k + 1])]
    points.append((dst.x, dst.cy))
    return _simplify(points)


def _from_boundary(src: Box, dst: Box) -> tuple[Point, ...]:
    start = (src.cx, src.y + src.h)
    if dst.cy > start[1] + 10:
        return _simplify([start, (src.cx, dst.cy), (dst.x, dst.cy)])
    drop = start[1] + 20
    gap = dst.x - COLUMN_GAP / 2
    return _simplify([start, (src.cx, drop), (gap, drop), (gap, dst.cy), (dst.x, dst.cy)])


def _loop(src: Box, dst: Box, lane: float) -> tuple[Point, ...]:
    """A back edge: down from the source, left below everything, up into the target."""
    return _simplify(
        [
            (src.cx, src.y + src.h),
            (src.cx, lane),
            (dst.cx, lane),
            (dst.cx, dst.y + dst.h),
        ]
    )
