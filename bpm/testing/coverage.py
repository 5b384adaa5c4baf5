"""BPMN coverage: which elements and sequence flows the tests' instances took, per process.

Read from the engine after each test: every node an instance had a token at is covered,
and a flow is covered when a token at its target was created by a token at its source
(the engine records each token's parent; gateways and events have tokens too). Processes
are told apart by key and content: two tests deploying different models under one key
are two entries.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bpm.engine import Engine
from bpm.kinds import diagram_xml
from bpm.model.nodes import Flow
from bpm.model.process import ProcessModel
from bpm.runtime.records import HistoryEvent, Token

__all__ = ["Coverage", "ProcessCoverage", "taken"]


@dataclass
class ProcessCoverage:
    """One process (key + content) and what the session took of it."""

    key: str
    checksum: str
    name: str | None
    nodes: tuple[str, ...]
    flows: tuple[str, ...]
    diagram: str
    covered_nodes: set[str] = field(default_factory=set)
    covered_flows: set[str] = field(default_factory=set)
    tests: set[str] = field(default_factory=set)
    instances: int = 0

    @property
    def total(self) -> int:
        return len(self.nodes) + len(self.flows)

    @property
    def covered(self) -> int:
        return len(self.covered_nodes & set(self.nodes)) + len(self.covered_flows & set(self.flows))

    @property
    def percent(self) -> float:
        return 100.0 * self.covered / self.total if self.total else 100.0

    def missed(self) -> list[str]:
        """Elements, then flows, not taken (model order)."""
        return [x for x in self.nodes if x not in self.covered_nodes] + [
            x for x in self.flows if x not in self.covered_flows
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "checksum": self.checksum,
            "name": self.name,
            "nodes": list(self.nodes),
            "flows": list(self.flows),
            "diagram": self.diagram,
            "covered_nodes": sorted(self.covered_nodes),
            "covered_flows": sorted(self.covered_flows),
            "tests": sorted(self.tests),
            "instances": self.instances,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProcessCoverage:
        return cls(
            key=data["key"],
            checksum=data["checksum"],
            name=data.get("name"),
            nodes=tuple(data["nodes"]),
            flows=tuple(data["flows"]),
            diagram=data["diagram"],
            covered_nodes=set(data["covered_nodes"]),
            covered_flows=set(data["covered_flows"]),
            tests=set(data["tests"]),
            instances=int(data.get("instances", 0)),
        )


def taken(
    model: ProcessModel, events: Sequence[HistoryEvent], tokens: Iterable[Token]
) -> tuple[set[str], set[str]]:
    """(node ids, flow ids) one instance took, from its history and its token rows.

    Every token has a ``token_created`` event; the tokens of nodes a token only passes
    (events, gateways) have no row, so a token's parent is known from its row when it has
    one, else it is the node completed last that has a flow to it (the walker creates a
    token right after completing the one it comes from)."""
    parent_of = {t.id: t.parent_id for t in tokens}
    node_of: dict[str, str] = {}
    nodes: set[str] = set()
    flows: set[str] = set()
    completed: list[str] = []
    incoming = model.incoming
    for e in events:
        if not e.node_id or not e.token_id:
            continue
        if e.type == "token_completed":
            completed.append(e.node_id)
            continue
        if e.type != "token_created":
            continue
        node_of[e.token_id] = e.node_id
        if e.node_id not in model.nodes:
            continue
        nodes.add(e.node_id)
        candidates = incoming.get(e.node_id, ())
        if not candidates:
            continue
        parent = parent_of.get(e.token_id)
        if parent is not None and parent in node_of:
            flow = _flow_from(model, candidates, node_of[parent])
        else:
            flow = None
            for source in reversed(completed[-200:]):
                flow = _flow_from(model, candidates, source)
                if flow is not None:
                    break
        if flow is not None:
            flows.add(flow)
    # A compensation boundary event has no token: it was taken when its handler ran.
    for node in model.nodes.values():
        handler = getattr(node, "compensate_with", None)
        if handler is not None and handler in nodes:
            nodes.add(node.id)
    return nodes, flows


def _flow_from(model: ProcessModel, candidates: Sequence[Flow], source: str) -> str | None:
    """The flow of ``candidates`` leaving ``source``, or a sub-process around it (a token
    leaving a sub-process may come from a token inside it)."""
    at: str | None = source
    while at is not None:
        for flow in candidates:
            if flow.source == at:
                return flow.id
        node = model.nodes.get(at)
        at = node.container if node is not None else None
    return None


class Coverage:
    """What a test session covered, process by process."""

    def __init__(self) -> None:
        self.processes: dict[tuple[str, str], ProcessCoverage] = {}

    def __bool__(self) -> bool:
        return bool(self.processes)

    def record(self, engine: Engine, test: str | None = None) -> None:
        """Add every deployed process of ``engine`` and what its instances took."""
        entries: dict[str, ProcessCoverage] = {}
        for definition in engine.definitions():
            model = engine.model(definition.id)
            entries[definition.id] = self._entry(
                model, definition.checksum, engine.definition_source(definition.id) or ""
            )
        for inst in engine.instances():
            entry = entries.get(inst.definition_id)
            if entry is None:
                continue
            model = engine.model(inst.definition_id)
            tokens = engine.get_instance(inst.id).tokens
            nodes, flows = taken(model, engine.history(inst.id), tokens)
            entry.covered_nodes |= nodes
            entry.covered_flows |= flows
            entry.instances += 1
            if test is not None:
                entry.tests.add(test)

    def _entry(self, model: ProcessModel, checksum: str, source: str) -> ProcessCoverage:
        found = self.processes.get((model.key, checksum))
        if found is None:
            found = ProcessCoverage(
                key=model.key,
                checksum=checksum,
                name=model.name,
                nodes=tuple(model.nodes),
                flows=tuple(f.id for f in model.flows),
                diagram=diagram_xml(model, source),
            )
            self.processes[(model.key, checksum)] = found
        return found

    def merge(self, other: Coverage) -> None:
        for ident, entry in other.processes.items():
            mine = self.processes.get(ident)
            if mine is None:
                self.processes[ident] = entry
                continue
            mine.covered_nodes |= entry.covered_nodes
            mine.covered_flows |= entry.covered_flows
            mine.tests |= entry.tests
            mine.instances += entry.instances

    def entries(self) -> list[tuple[str, ProcessCoverage]]:
        """(label, entry), by key; a key deployed with several contents is numbered."""
        out: list[tuple[str, ProcessCoverage]] = []
        keys: dict[str, list[ProcessCoverage]] = {}
        for entry in self.processes.values():
            keys.setdefault(entry.key, []).append(entry)
        for key in sorted(keys):
            group = keys[key]
            for i, entry in enumerate(group, 1):
                out.append((key if len(group) == 1 else f"{key} ({i} of {len(group)})", entry))
        return out

    def to_json(self) -> list[dict[str, Any]]:
        return [entry.to_json() for entry in self.processes.values()]

    @classmethod
    def from_json(cls, data: Iterable[Mapping[str, Any]]) -> Coverage:
        out = cls()
        for item in data:
            entry = ProcessCoverage.from_json(item)
            out.processes[(entry.key, entry.checksum)] = entry
        return out

    def lines(self, *, width: int = 100) -> list[str]:
        """The terminal summary: a row per process, then what it missed."""
        rows = self.entries()
        label_w = max((len(label) for label, _ in rows), default=7)
        label_w = max(label_w, 7)
        out = [f"{'process':<{label_w}}  {'elements':>10}  {'flows':>10}  {'covered':>7}"]
        for label, e in rows:
            nodes = f"{len(e.covered_nodes & set(e.nodes))}/{len(e.nodes)}"
            flows = f"{len(e.covered_flows & set(e.flows))}/{len(e.flows)}"
            out.append(f"{label:<{label_w}}  {nodes:>10}  {flows:>10}  {e.percent:>6.0f}%")
        for label, e in rows:
            missed = e.missed()
            if missed:
                text = f"  {label} not taken: " + ", ".join(missed)
                out.append(text if len(text) <= width else text[: width - 3] + "...")
        return out
