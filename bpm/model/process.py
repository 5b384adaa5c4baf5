"""The process graph: nodes by id, flows by source and target, and its JSON form."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from bpm.errors import InvalidOperation
from bpm.model import nodes as n
from bpm.model.reach import upstream_of
from bpm.retry import RetryPolicy


def _node_classes(cls: type[n.Node]) -> list[type[n.Node]]:
    found = []
    for sub in cls.__subclasses__():
        if "json_name" in vars(sub):
            found.append(sub)
        found += _node_classes(sub)
    return found


def _json_names() -> dict[str, type[n.Node]]:
    """Every concrete node class by its ``json_name``, the name stored models hold."""
    names: dict[str, type[n.Node]] = {}
    for cls in _node_classes(n.Node):
        if cls.json_name in names:
            other = names[cls.json_name].__name__
            raise TypeError(f"{cls.__name__} and {other} are both {cls.json_name!r}")
        names[cls.json_name] = cls
    return names


_KINDS = _json_names()
NODE_CLASSES: tuple[type[n.Node], ...] = tuple(_KINDS.values())
"""Every concrete node class (each says its ``json_name`` and BPMN ``tag``)."""
_MAPPING_FIELDS = frozenset({"inputs", "outputs", "call_inputs", "call_outputs"})
_KIND_OF = {cls: name for name, cls in _KINDS.items()}


@dataclass(frozen=True)
class ProcessModel:
    """An executable process: its key, nodes and flows. Built by the BPMN parser or builder."""

    key: str
    nodes: Mapping[str, n.Node]
    flows: tuple[n.Flow, ...]
    name: str | None = None
    version_tag: str | None = None
    warnings: tuple[str, ...] = field(default=(), compare=False)
    listeners: tuple[n.Listener, ...] = ()
    """The process's own execution listeners: ``start`` ones run before its first
    token enters the start event, ``end`` ones before the instance completes."""

    @cached_property
    def outgoing(self) -> Mapping[str, tuple[n.Flow, ...]]:
        out: dict[str, list[n.Flow]] = {node_id: [] for node_id in self.nodes}
        for flow in self.flows:
            out.setdefault(flow.source, []).append(flow)
        return {k: tuple(v) for k, v in out.items()}

    @cached_property
    def incoming(self) -> Mapping[str, tuple[n.Flow, ...]]:
        inc: dict[str, list[n.Flow]] = {node_id: [] for node_id in self.nodes}
        for flow in self.flows:
            inc.setdefault(flow.target, []).append(flow)
        return {k: tuple(v) for k, v in inc.items()}

    @cached_property
    def branching(self) -> frozenset[str]:
        """Activities that choose among their outgoing flows when they complete: those
        with a conditional outgoing flow or a default flow (BPMN 2.0 10.3.1: every flow
        without a condition and every true one is taken, the default when none is).
        Every other node leaves along all of its flows unevaluated."""
        return frozenset(
            node.id
            for node in self.nodes.values()
            if (
                isinstance(node, n.Activity)
                and (
                    node.default_flow is not None
                    or any(f.condition is not None for f in self.outgoing.get(node.id, ()))
                )
            )
            # start events with conditional flows (Camunda's suite has them) choose too
            or (
                isinstance(node, n.StartEvent)
                and any(f.condition is not None for f in self.outgoing.get(node.id, ()))
            )
        )

    @cached_property
    def boundary_events(self) -> Mapping[str, n.BoundaryEvent]:
        """Every boundary event by its own id, in the order of :attr:`nodes`."""
        return {k: v for k, v in self.nodes.items() if isinstance(v, n.BoundaryEvent)}

    @cached_property
    def boundaries(self) -> Mapping[str, tuple[n.BoundaryEvent, ...]]:
        """Boundary events by the id of the activity they are attached to."""
        out: dict[str, list[n.BoundaryEvent]] = {}
        for node in self.nodes.values():
            if isinstance(node, n.BoundaryEvent):
                out.setdefault(node.attached_to, []).append(node)
        return {k: tuple(v) for k, v in out.items()}

    @cached_property
    def compensation_handlers(self) -> Mapping[str, str]:
        """Activity id -> the id of its compensation handler (compensation boundaries)."""
        return {
            node.attached_to: node.compensate_with
            for node in self.nodes.values()
            if isinstance(node, n.BoundaryEvent) and node.compensate_with is not None
        }

    @cached_property
    def compensable(self) -> frozenset[str]:
        """Activities whose completion is remembered for compensation: those with a
        handler, and the sub-processes that contain one (or a compensation event
        sub-process). Empty for a process without compensation."""
        found = set(self.compensation_handlers)
        for start in self.nodes.values():
            if isinstance(start, n.StartEvent) and start.compensation_start and start.container:
                esp = self.nodes.get(start.container)
                if esp is not None and esp.container is not None:
                    found.add(esp.container)
        for node_id in list(found):
            node: n.Node | None = self.nodes.get(node_id)
            while node is not None and node.container is not None:
                host = self.nodes.get(node.container)
                if isinstance(host, n.SubProcess):
                    found.add(host.id)
                node = host
        return frozenset(found)

    def compensation_start_in(self, container: str | None) -> n.StartEvent | None:
        """The start event of the compensation event sub-process drawn in ``container``."""
        for esp in self.event_subprocesses(container):
            trigger = self.trigger_of(esp.id)
            if trigger is not None and trigger.compensation_start:
                return trigger
        return None

    @cached_property
    def start_events(self) -> tuple[n.StartEvent, ...]:
        """The start events of the process itself (not of its sub-processes)."""
        return tuple(
            x for x in self.nodes.values() if isinstance(x, n.StartEvent) and x.container is None
        )

    # -- scopes -----------------------------------------------------------------------------
    @cached_property
    def members(self) -> Mapping[str | None, tuple[n.Node, ...]]:
        """The nodes drawn directly in each container (None: the process)."""
        out: dict[str | None, list[n.Node]] = {}
        for node in self.nodes.values():
            out.setdefault(node.container, []).append(node)
        return {k: tuple(v) for k, v in out.items()}

    def starts_in(self, container: str | None) -> tuple[n.Node, ...]:
        """Where entering a sub-process puts tokens: its none start events; without any,
        every node in it that no flow leads to (BPMN's implicit start; none for an empty
        sub-process, which then completes at once)."""
        members = self.members.get(container, ())
        starts = [x for x in members if isinstance(x, n.StartEvent) and not x.is_trigger]
        if starts or container is None:
            return tuple(starts)
        return tuple(
            x
            for x in members
            if not self.incoming.get(x.id)
            and not isinstance(
                x, n.StartEvent | n.BoundaryEvent | n.EventSubProcess | n.LinkCatchEvent
            )
        )

    @cached_property
    def link_targets(self) -> Mapping[str, str]:
        """The link catch event each link throw event jumps to, by the throw's id: the one
        with the same link name in the same container (validation reports the others)."""
        catches: dict[tuple[str | None, str], list[str]] = {}
        for x in self.nodes.values():
            if isinstance(x, n.LinkCatchEvent):
                catches.setdefault((x.container, x.link), []).append(x.id)
        return {
            x.id: found[0]
            for x in self.nodes.values()
            if isinstance(x, n.LinkThrowEvent)
            and len(found := catches.get((x.container, x.link), [])) == 1
        }

    def event_subprocesses(self, container: str | None) -> tuple[n.EventSubProcess, ...]:
        """The event sub-processes drawn directly in ``container``."""
        return tuple(x for x in self.members.get(container, ()) if isinstance(x, n.EventSubProcess))

    def event_start(self, node_id: str) -> n.StartEvent | None:
        """The start event (the trigger) of an event sub-process at ``node_id``; None when
        ``node_id`` is something else."""
        node = self.nodes.get(node_id)
        if (
            isinstance(node, n.StartEvent)
            and node.container is not None
            and isinstance(self.nodes.get(node.container), n.EventSubProcess)
        ):
            return node
        return None

    def trigger_of(self, event_subprocess: str) -> n.StartEvent | None:
        """The start event that triggers an event sub-process."""
        starts = [x for x in self.members.get(event_subprocess, ()) if isinstance(x, n.StartEvent)]
        return starts[0] if starts else None

    @cached_property
    def scoped(self) -> bool:
        """Whether anything in the process opens a scope (sub-processes, multi-instance,
        call activities, variable mappings, event sub-processes) or joins inclusively:
        plain processes skip every scope check."""
        return bool(self.compensation_handlers) or any(
            x.container is not None
            or x.joins_late
            or isinstance(x, n.SubProcess | n.EventSubProcess | n.CallActivity)
            or (isinstance(x, n.Activity) and (x.loop is not None or x.has_mappings))
            for x in self.nodes.values()
        )

    def sees_scopes(self, node_id: str) -> bool:
        """Whether a token at ``node_id`` may see scope-local variables."""
        node = self.nodes.get(node_id)
        if node is None:
            return False
        return node.container is not None or (
            isinstance(node, n.Activity)
            and (node.loop is not None or node.has_mappings or node.for_compensation)
        )

    def depth(self, node_id: str) -> int:
        """How many sub-processes ``node_id`` is drawn in."""
        depth, node = 0, self.nodes.get(node_id)
        while node is not None and node.container is not None:
            depth += 1
            node = self.nodes.get(node.container)
        return depth

    @cached_property
    def upstream(self) -> Mapping[str, frozenset[str]]:
        """For every inclusive gateway that joins: the nodes of its container from which a
        token can still reach it (not through the gateway itself). BPMN's rule: the join
        waits while a live token of its scope sits on one of them."""
        return {
            node.id: upstream_of(self, node.id)
            for node in self.nodes.values()
            if isinstance(node, n.InclusiveGateway) and len(self.incoming.get(node.id, ())) > 1
        }

    @cached_property
    def timer_starts(self) -> tuple[n.StartEvent, ...]:
        """Start events with a timer: beat starts instances on their schedule."""
        return tuple(x for x in self.start_events if x.timer is not None)

    def initial_start(self, start_event: str | None = None) -> n.StartEvent:
        """The start event an instance starts at: ``start_event`` when given, else the
        (first) none start event, else the only start event there is.

        Raises :class:`~bpm.errors.InvalidOperation` saying which ids may be given.
        """
        ids = ", ".join(s.id for s in self.start_events) or "none"
        if start_event is not None:
            node = self.nodes.get(start_event)
            if not isinstance(node, n.StartEvent):
                raise InvalidOperation(
                    f"process '{self.key}' has no start event '{start_event}': use one of {ids}"
                )
            return node
        plain = [s for s in self.start_events if s.timer is None and s.event is None]
        if plain:
            return plain[0]
        if len(self.start_events) == 1:
            return self.start_events[0]
        raise InvalidOperation(
            f"process '{self.key}' has no none start event: pass start_event= one of {ids}"
        )

    @cached_property
    def event_starts(self) -> tuple[n.StartEvent, ...]:
        """Message and signal start events of the process: they start instances."""
        return tuple(x for x in self.start_events if x.event is not None)

    def handler_names(self) -> dict[str, list[str]]:
        """Inline handler name -> ids of the tasks that run it (external tasks excluded)."""
        out: dict[str, list[str]] = {}
        for node in self.nodes.values():
            # CEL scripts are run by the engine, Python ones by its sandbox: no handler
            engine_run = isinstance(node, n.ScriptTask) and (node.is_cel or node.is_python)
            inline = isinstance(node, n.ServiceTask) and node.handler and not node.is_external
            if inline and not engine_run:
                assert isinstance(node, n.ServiceTask) and node.handler
                out.setdefault(node.handler, []).append(node.id)
            for listener in node.listeners:
                if listener.handler:
                    out.setdefault(listener.handler, []).append(node.id)
        for flow in self.flows:
            for listener in flow.listeners:
                if listener.handler:
                    out.setdefault(listener.handler, []).append(flow.id)
        for listener in self.listeners:
            if listener.handler:
                out.setdefault(listener.handler, []).append(self.key)
        return out

    def node(self, node_id: str) -> n.Node:
        return self.nodes[node_id]

    @cached_property
    def _flows_by_id(self) -> Mapping[str, n.Flow]:
        return {f.id: f for f in self.flows}

    def flow(self, flow_id: str) -> n.Flow | None:
        """The sequence flow ``flow_id`` (None: no such flow)."""
        return self._flows_by_id.get(flow_id)

    @cached_property
    def listens(self) -> bool:
        """Whether any execution listener runs outside an inline task's own step (the
        walker's listener checks are skipped for a model without: nearly every one)."""
        return bool(
            self.listeners
            or any(f.listeners for f in self.flows)
            or any(x.listens_first or x.listens_last for x in self.nodes.values())
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form; ``from_dict`` restores an equal model."""
        return {
            "key": self.key,
            "name": self.name,
            "version_tag": self.version_tag,
            "nodes": [_node_to_dict(x) for x in self.nodes.values()],
            "flows": [_flow_to_dict(f) for f in self.flows],
            # listeners only when there are some: the checksum of models without is unchanged
            **({"listeners": [x.to_dict() for x in self.listeners]}
               if self.listeners else {}),
        }  # fmt: skip

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProcessModel:
        nodes = [_node_from_dict(x) for x in data["nodes"]]
        return cls(
            key=data["key"],
            name=data.get("name"),
            version_tag=data.get("version_tag"),
            nodes={x.id: x for x in nodes},
            flows=tuple(_flow_from_dict(f) for f in data["flows"]),
            listeners=tuple(n.Listener.from_dict(x) for x in data.get("listeners", ())),
        )

    def checksum(self) -> str:
        """A digest of the executable content, used to detect a changed redeploy."""
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


def _flow_to_dict(flow: n.Flow) -> dict[str, Any]:
    out = dataclasses.asdict(flow)
    del out["listeners"]
    if flow.listeners:  # as nodes.SPARSE: models without take listeners keep their checksum
        out["listeners"] = [x.to_dict() for x in flow.listeners]
    return out


def _flow_from_dict(data: Mapping[str, Any]) -> n.Flow:
    listeners = tuple(n.Listener.from_dict(x) for x in data.get("listeners", ()))
    return n.Flow(**{**data, "listeners": listeners})


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default


def _plain(value: Any) -> Any:
    if isinstance(value, n.Listener):
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def _sparse(value: Any) -> dict[str, Any]:
    """A value's fields, less its sparse ones left at their default (nodes.SPARSE)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(value):
        item = getattr(value, f.name)
        if not (f.metadata.get("sparse") and item == _default(f)):
            out[f.name] = list(item) if isinstance(item, tuple) else item
    return out


def _node_to_dict(node: n.Node) -> dict[str, Any]:
    out: dict[str, Any] = {"type": _KIND_OF[type(node)]}
    for f in dataclasses.fields(node):
        value = getattr(node, f.name)
        if f.metadata.get("sparse") and value == _default(f):
            continue  # see nodes.SPARSE: the checksum of models without it is unchanged
        if isinstance(value, RetryPolicy):
            value = value.to_dict()
        elif isinstance(value, n.TimerSpec):
            value = {"kind": value.kind.value, "expression": value.expression}
        elif isinstance(value, n.EventRef):
            value = _sparse(value)
        elif isinstance(value, n.MultiInstance):
            value = dataclasses.asdict(value)
        elif isinstance(value, Mapping):
            value = dict(value)
        elif isinstance(value, tuple):
            value = [_plain(x) for x in value]
        out[f.name] = value
    return out


def _node_from_dict(data: Mapping[str, Any]) -> n.Node:
    cls = _KINDS[data["type"]]
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            continue
        value = data[f.name]
        if f.name == "retry" and value is not None:
            value = RetryPolicy.from_dict(value)
        elif f.name == "timer" and value is not None:
            value = n.TimerSpec(n.TimerKind(value["kind"]), value["expression"])
        elif f.name == "kind" and cls is n.EndEvent:
            value = n.EndKind(value)
        elif f.name == "event" and value is not None:
            value = n.EventRef(
                n.EventKind(value["kind"]),
                value["name"],
                value["correlation_key"],
                value.get("condition"),
                tuple(value.get("variable_events", ())),
            )
        elif f.name == "loop" and value is not None:
            value = (n.StandardLoop if "test_before" in value else n.MultiInstance)(**value)
        elif f.name in _MAPPING_FIELDS:
            value = tuple(n.VariableMapping(**x) for x in value)
        elif f.name == "form_fields":
            value = tuple(n.FormFieldSpec.from_dict(x) for x in value)
        elif f.name == "listeners":
            value = tuple(n.Listener.from_dict(x) for x in value)
        elif f.name == "binding":
            value = n.CallBinding(value)
        elif isinstance(value, list):
            value = tuple(value)
        kwargs[f.name] = value
    return cls(**kwargs)
