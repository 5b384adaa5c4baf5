"""BPMN 2.0 XML -> :class:`ProcessModel` s: pick the executable processes, parse their
elements, validate each; one file may hold several processes (Camunda deploys them all)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from xml.etree.ElementTree import Element

from bpm.bpmn.compensation import link_handlers
from bpm.bpmn.elements import ELEMENTS, Context
from bpm.bpmn.extensions import read_extensions, warn_attributes
from bpm.bpmn.listeners import attach as attach_listeners
from bpm.bpmn.listeners import parse_flow_listeners, parse_process_listeners
from bpm.bpmn.messages import top_level
from bpm.bpmn.namespaces import BPMN_NS, ZEEBE_NS, java_value, local, pretty, split
from bpm.bpmn.xmlread import Document, read_xml
from bpm.errors import DeploymentError, Problem
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from bpm.model.validate import check_model

__all__ = ["BpmnFile", "parse_bpmn", "parse_bpmn_file"]

# Allowed inside a process, with no effect on execution.
_IGNORED = frozenset(
    {
        "documentation", "extensionElements", "laneSet", "textAnnotation", "association",
        "dataObject", "dataObjectReference", "dataStoreReference", "group", "property",
        "ioSpecification", "category", "auditing", "monitoring", "correlationSubscription",
        "supportedInterfaceRef", "resourceRole", "performer", "humanPerformer",
        "potentialOwner", "laneSetRef", "artifact",
        # a sub-process's own children that are not members: its marker (read with the
        # sub-process, bpm.bpmn.loops) and the references to its flows
        "multiInstanceLoopCharacteristics", "standardLoopCharacteristics", "incoming",
        "outgoing", "completionCondition",  # an ad-hoc sub-process's (bpm.kinds.ad_hoc)
        "dataInputAssociation", "dataOutputAssociation",
    }
)  # fmt: skip
# Real BPMN flow elements that this engine does not run (yet).
_UNSUPPORTED = {
    "implicitThrowEvent": "implicit throw events",
    "callChoreography": "choreographies",
    "choreographyTask": "choreographies",
    "subChoreography": "choreographies",
}
_SUPPORTED = (
    "start/end events, service/send/business-rule/script/user/manual tasks, embedded, "
    "event and ad-hoc sub-processes, transactions, call activities, exclusive, parallel, "
    "inclusive and complex gateways, "
    "timer, link, message and signal catch events, event-based gateways, receive tasks, "
    "none, escalation, link, message, signal and compensation throw events, timer, error, "
    "escalation, message, signal, compensation and cancel boundary events"
)
_PROCESS_USES = frozenset(
    {"versionTag", "historyTimeToLive", "isStartableInTasklist", "candidateStarterGroups",
     "candidateStarterUsers"}  # the last three: the task list (bpm/api/starters.py)
)  # fmt: skip


@dataclass(frozen=True)
class BpmnFile:
    """Every executable process of one BPMN file, in document order, and file warnings."""

    models: tuple[ProcessModel, ...]
    warnings: tuple[str, ...] = ()

    @property
    def all_warnings(self) -> tuple[str, ...]:
        """The file's warnings and every model's, without repeats."""
        found = list(self.warnings)
        for model in self.models:
            found += model.warnings
        return tuple(dict.fromkeys(found))


def parse_bpmn(source: str | bytes, resource: str | None = None) -> ProcessModel:
    """Read a BPMN 2.0 file into the validated model of its first executable process.

    The whole file is checked (every executable process); ``resource`` (a file name) is
    only used in error messages. Raises :class:`~bpm.errors.DeploymentError` listing every
    problem found, each naming the element id and the XML line.
    """
    return parse_bpmn_file(source, resource).models[0]


def parse_bpmn_file(source: str | bytes, resource: str | None = None) -> BpmnFile:
    """Read every executable process of a BPMN 2.0 file (str, or bytes decoded as the XML
    declaration says). A process is executable when ``isExecutable="true"``; when no
    process says so, those without the attribute are (as Camunda reads them)."""
    doc = read_xml(source, resource)
    root = doc.root
    if root.tag != f"{{{BPMN_NS}}}definitions":
        raise DeploymentError(
            Problem(
                f"not a BPMN 2.0 file: the root element is <{pretty(root.tag)}>, expected "
                f"<definitions> in namespace {BPMN_NS}",
                line=doc.line(root),
            ),
            resource,
        )
    processes, warnings = _executable(root, doc, resource)
    errors = {e.get("id", ""): e for e in root if local(e) == "error" and e.get("id")}
    ctx = Context(
        doc,
        errors,
        zeebe=_uses_zeebe(root),
        escalations=top_level(root, "escalation"),
        messages=top_level(root, "message"),
        signals=top_level(root, "signal"),
    )
    models: list[ProcessModel] = []
    problems: list[Problem] = []
    keys: dict[str, int | None] = {}
    for process in processes:
        key = process.get("id", "")
        if key and key in keys:
            problems.append(
                Problem(
                    f"process id '{key}' is used twice (first on line {keys[key]}): rename one",
                    key,
                    doc.line(process),
                )
            )
            continue
        keys[key] = doc.line(process)
        model, found = _parse_process(process, ctx)
        models.append(model)
        problems += found
    if problems:
        problems.sort(key=lambda p: (p.line is None, p.line or 0))
        raise DeploymentError(problems, resource)
    return BpmnFile(tuple(models), tuple(warnings))


def _uses_zeebe(root: Element) -> bool:
    for el in root.iter():
        if split(el.tag)[0] == ZEEBE_NS or any(k.startswith(f"{{{ZEEBE_NS}}}") for k in el.attrib):
            return True
    return False


def _executable(
    root: Element, doc: Document, resource: str | None
) -> tuple[list[Element], list[str]]:
    processes = [el for el in root if local(el) == "process"]
    flags = {id(p): (p.get("isExecutable") or "").strip().lower() for p in processes}
    chosen = [p for p in processes if flags[id(p)] == "true"] or [
        p for p in processes if flags[id(p)] == ""
    ]
    if not chosen:
        what = "is not executable" if processes else "is missing"
        raise DeploymentError(
            Problem(
                f'the bpmn:process {what}: add <bpmn:process id="..." isExecutable="true">',
                line=doc.line(processes[0]) if processes else doc.line(root),
            ),
            resource,
        )
    skipped = [p.get("id") or "?" for p in processes if p not in chosen]
    warnings = [f"process '{key}' is not executable: not deployed" for key in skipped]
    # A pool drawn without content (no isExecutable either) is a diagram, not a process.
    empty = [p for p in chosen if flags[id(p)] == "" and not _has_flow_elements(p)]
    if empty and len(empty) < len(chosen):
        chosen = [p for p in chosen if p not in empty]
        warnings += [f"process '{p.get('id') or '?'}' is empty: not deployed" for p in empty]
    return chosen, warnings


def _has_flow_elements(process: Element) -> bool:
    return any(local(el) in ELEMENTS or local(el) in _UNSUPPORTED for el in process)


def _assign_flow_ids(process: Element) -> None:
    """A sequence flow without an id gets ``Flow_<source>_<target>`` (stable: the same
    file always gives the same ids), so neither end is blamed for a missing flow."""
    taken = {el.get("id") for el in process.iter() if el.get("id")}
    for el in process.iter():
        if local(el) != "sequenceFlow" or el.get("id"):
            continue
        stem = f"Flow_{el.get('sourceRef', '')}_{el.get('targetRef', '')}"
        candidate, i = stem, 2
        while candidate in taken:
            candidate, i = f"{stem}_{i}", i + 1
        taken.add(candidate)
        el.set("id", candidate)


def _parse_process(process: Element, ctx: Context) -> tuple[ProcessModel, list[Problem]]:
    """The model of one process and its problems (parse and graph checks)."""
    ctx.problems, ctx.warnings, ctx.placeholders = [], [], set()
    _assign_flow_ids(process)
    ext = read_extensions(process, ctx, frozenset({"versionTag"}))
    warn_attributes(process, ctx, _PROCESS_USES)
    zeebe_tag = ext.zeebe["versionTag"].get("value") if "versionTag" in ext.zeebe else None
    found = _Members()
    _parse_members(process, None, ctx, found)
    link_handlers(process, found.nodes, ctx)
    nodes, flows = found.nodes, found.flows
    key = process.get("id", "")
    if not key:
        ctx.report(process, 'the process has no id: add id="..." (it becomes the process key)')
    model = ProcessModel(
        key=key,
        nodes=nodes,
        flows=tuple(flows),
        name=process.get("name") or None,
        version_tag=java_value(process, "versionTag") or zeebe_tag or None,
        listeners=parse_process_listeners(process, ctx),
    )
    graph, warnings = check_model(model, placeholders=frozenset(ctx.placeholders))
    kinds = {el.get("id"): pretty(el.tag) for el in process.iter() if el.get("id")}
    problems = [
        dataclasses.replace(p, element_type=kinds[p.element_id]) if p.element_id in kinds else p
        for p in ctx.problems + graph
    ]
    merged = tuple(dict.fromkeys(ctx.warnings + warnings))
    return dataclasses.replace(model, warnings=merged), problems


@dataclass
class _Members:
    nodes: dict[str, n.Node] = dataclasses.field(default_factory=dict)
    flows: list[n.Flow] = dataclasses.field(default_factory=list)
    first_line: dict[str, int | None] = dataclasses.field(default_factory=dict)


def _parse_members(parent: Element, container: str | None, ctx: Context, out: _Members) -> None:
    """The flow elements of a process or sub-process; a sub-process's own elements are
    read the same way, each marked with the sub-process as its ``container``."""
    for el in parent:
        item = _parse_element(el, ctx)
        if item is None:
            continue
        if not item.id:
            ctx.report(el, f'{pretty(el.tag)} on line {item.line} has no id: add id="..."')
            continue
        if item.id in out.first_line:
            ctx.report(
                el,
                f"id '{item.id}' is used twice (first on line {out.first_line[item.id]}): "
                "ids must be unique, rename one",
            )
            continue
        out.first_line[item.id] = item.line
        if isinstance(item, n.Flow):
            taken = parse_flow_listeners(el, ctx)
            out.flows.append(dataclasses.replace(item, listeners=taken) if taken else item)
            continue
        item = attach_listeners(el, ctx, item)
        if container is not None:
            item = dataclasses.replace(item, container=container)
        if isinstance(item, n.Activity) and el.get("default"):
            item = dataclasses.replace(item, default_flow=el.get("default"))
        out.nodes[item.id] = item
        if item.holds_nodes:
            _parse_members(el, item.id, ctx, out)


def _parse_element(el: Element, ctx: Context) -> n.Node | n.Flow | None:
    name = local(el)
    parse = ELEMENTS.get(name)
    if parse is not None:
        return parse(el, ctx)
    if name in _IGNORED:
        return None
    if not name:  # not BPMN: some tool's extension, outside extensionElements
        ctx.warn(el, el, f"<{pretty(el.tag)}> is not BPMN and is ignored")
        return None
    if name in _UNSUPPORTED:
        ctx.report(
            el,
            f"{pretty(el.tag)} '{el.get('id')}' is not supported: this engine does not run "
            f"{_UNSUPPORTED[name]}; use {_SUPPORTED}",
        )
        return ctx.placeholder(el)
    ctx.report(
        el,
        f"unknown element <{pretty(el.tag)}> in the process: remove it or move it into "
        f"extensionElements; supported are {_SUPPORTED}",
    )
    return ctx.placeholder(el) if el.get("id") else None
