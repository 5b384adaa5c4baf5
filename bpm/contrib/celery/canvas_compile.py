"""A canvas tree compiled into a process: one definition per shape, the arguments in the
instance's variables.

The shape is the tree without its arguments: ``chord(group(fetch.s(u) for u in urls),
summarize.s())`` is one definition however many urls there are, because a group of calls
of one task is one parallel multi-instance step over the list of its calls. Other groups
are a parallel gateway with one branch per member; a chain is a sequence; a chord is its
header then its body. Every task call is a service task whose handler is
``canvas:TASK`` (run inline by the worker, :mod:`bpm.contrib.celery.canvas_run`).

Variables of a canvas instance (a path names a node of the tree: ``0``, ``0_1``...):
``c_PATH`` the call of a task (``a`` args, ``k`` kwargs, ``i`` the variable holding the
parent's result, ``m`` immutable; a multi-instance step has its calls in ``x``), ``r_PATH``
the result of that node, ``_canvas_result`` the name of the variable holding the canvas's
result. ``link_error`` is an error boundary on the task leading to its errbacks and a
terminate end.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from bpm.builder import Process
from bpm.contrib.celery.canvas_shape import Call, Chain, Chord, Each, Group, Node

CANVAS_TASK = "canvas:"
"""Handler names of canvas steps: ``canvas:TASK``."""
RESULT_POINTER = "_canvas_result"


def shape_of(node: Node) -> str:
    """The tree without its arguments (what one definition stands for)."""
    if isinstance(node, Call):
        errs = ",".join(shape_of(e) for e in node.on_error)
        return f"T({node.task}|{errs})"
    if isinstance(node, Each):
        return f"E({node.task},{node.star},{node.chunked is not None})"
    if isinstance(node, Chain):
        return "C[" + ",".join(shape_of(s) for s in node.steps) + "]"
    if isinstance(node, Group):
        same = node.same_task
        if same is not None:
            return f"M({same})"
        return "G[" + ",".join(shape_of(m) for m in node.members) + "]"
    return f"H({shape_of(node.header)},{shape_of(node.body)})"


def describe(node: Node) -> str:
    """A short readable name of the shape, for the definition's name."""
    if isinstance(node, Call):
        return node.task
    if isinstance(node, Each):
        kind = "chunks" if node.chunked is not None else ("starmap" if node.star else "map")
        return f"{node.task}.{kind}"
    if isinstance(node, Chain):
        return " | ".join(describe(s) for s in node.steps)
    if isinstance(node, Group):
        same = node.same_task
        if same is not None:
            return f"group({same} x n)"
        return "group(" + ", ".join(describe(m) for m in node.members) + ")"
    return f"chord({describe(node.header)}, {describe(node.body)})"


def key_of(node: Node) -> str:
    """The process key of the node's shape."""
    return "canvas-" + hashlib.sha256(shape_of(node).encode()).hexdigest()[:16]


@dataclass
class Compiled:
    """The process of a shape and the start variables of one canvas of that shape."""

    key: str
    process: Process
    variables: dict[str, Any] = field(default_factory=dict)


class Compiler:
    def __init__(self, root: Node) -> None:
        self.key = key_of(root)
        name = describe(root)
        self.p = Process(self.key, name=name if len(name) <= 200 else name[:197] + "...")
        self.vars: dict[str, Any] = {}
        self.root = root

    def compile(self) -> Compiled:
        self.p.start("start")
        entry, exit_, result = self.node(self.root, "0", None)
        self.p.end("end")
        self.p.flow("start", entry).flow(exit_, "end")
        self.vars[RESULT_POINTER] = result
        return Compiled(self.key, self.p, self.vars)

    # Each returns (entry node id, exit node id, the variable holding its result).
    def node(self, node: Node, path: str, given: str | None) -> tuple[str, str, str]:
        if isinstance(node, Call):
            return self.call(node, path, given)
        if isinstance(node, Each):
            return self.each(node, path)
        if isinstance(node, Chain):
            return self.chain(node, path, given)
        if isinstance(node, Group):
            return self.group(node, path, given)
        return self.chord(node, path, given)

    @staticmethod
    def _call_vars(call: Call) -> dict[str, Any]:
        return {"a": list(call.args), "k": dict(call.kwargs), "m": call.immutable}

    def call(self, call: Call, path: str, given: str | None) -> tuple[str, str, str]:
        tid = f"t_{path}"
        self.p.service_task(tid, handler=CANVAS_TASK + call.task, name=call.task)
        self.vars[f"c_{path}"] = {**self._call_vars(call), "i": given}
        if call.on_error:
            self.errbacks(call, tid, path)
        return tid, tid, f"r_{path}"

    def errbacks(self, call: Call, tid: str, path: str) -> None:
        """``link_error``: the task's failure (once its attempts are used up) takes the
        error path through its errbacks, then ends the canvas (a terminate end)."""
        caught = f"x_{path}"
        self.p.boundary_error(caught, tid)
        last = caught
        for i, errback in enumerate(call.on_error):
            eid = f"t_{path}_e{i}"
            self.p.service_task(eid, handler=CANVAS_TASK + errback.task, name=errback.task)
            self.vars[f"c_{path}_e{i}"] = {**self._call_vars(errback), "i": None, "f": tid}
            self.p.flow(last, eid)
            last = eid
        self.p.end(f"z_{path}", terminate=True)
        self.p.flow(last, f"z_{path}")

    def each(self, each: Each, path: str) -> tuple[str, str, str]:
        tid = f"t_{path}"
        if each.chunked is None:
            self.p.service_task(tid, handler=CANVAS_TASK + each.task, name=describe(each))
            key = "s" if each.star else "e"
            self.vars[f"c_{path}"] = {key: list(each.items), "i": None}
        else:
            self.p.service_task(
                tid,
                handler=CANVAS_TASK + each.task,
                name=describe(each),
                for_each=f"c_{path}.x",
                as_="_call",
                collect=f"r_{path}",
                output="_out",
            )
            chunks = [{"s": [list(item) for item in part]} for part in each.chunked]
            self.vars[f"c_{path}"] = {"i": None, "x": chunks}
        return tid, tid, f"r_{path}"

    def chain(self, chain: Chain, path: str, given: str | None) -> tuple[str, str, str]:
        first = last = ""
        result = given
        for i, step in enumerate(chain.steps):
            entry, exit_, result = self.node(step, f"{path}_{i}", result)
            if last:
                self.p.flow(last, entry)
            first = first or entry
            last = exit_
        assert result is not None
        return first, last, result

    def group(self, group: Group, path: str, given: str | None) -> tuple[str, str, str]:
        same = group.same_task
        if same is not None:
            tid = f"t_{path}"
            self.p.service_task(
                tid,
                handler=CANVAS_TASK + same,
                name=f"{same} (group)",
                for_each=f"c_{path}.x",
                as_="_call",
                collect=f"r_{path}",
                output="_out",
            )
            calls = [self._call_vars(m) for m in group.members if isinstance(m, Call)]
            self.vars[f"c_{path}"] = {"i": given, "x": calls}
            return tid, tid, f"r_{path}"
        gather = f"g_{path}"
        if not group.members:
            self.p.task(gather, name="group()", outputs={f"r_{path}": "[]"})
            return gather, gather, f"r_{path}"
        fork, join = f"f_{path}", f"j_{path}"
        self.p.parallel(fork).parallel(join)
        results = []
        for i, member in enumerate(group.members):
            entry, exit_, result = self.node(member, f"{path}_{i}", given)
            self.p.flow(fork, entry).flow(exit_, join)
            results.append(result)
        self.p.task(gather, name="results", outputs={f"r_{path}": "[" + ", ".join(results) + "]"})
        self.p.flow(join, gather)
        return fork, gather, f"r_{path}"

    def chord(self, chord: Chord, path: str, given: str | None) -> tuple[str, str, str]:
        h_entry, h_exit, h_result = self.group(chord.header, f"{path}_h", given)
        b_entry, b_exit, b_result = self.node(chord.body, f"{path}_b", h_result)
        self.p.flow(h_exit, b_entry)
        return h_entry, b_exit, b_result


def compile_canvas(root: Node) -> Compiled:
    """The process of ``root``'s shape and the start variables of this canvas."""
    return Compiler(root).compile()
