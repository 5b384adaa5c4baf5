"""BPMN 2.0 XML -> :class:`ProcessModel`: pick the process, parse its elements, validate."""

from __future__ import annotations

import dataclasses
from xml.etree.ElementTree import Element

from bpm.bpmn.elements import ELEMENTS, Context
from bpm.bpmn.namespaces import BPMN_NS, camunda, local, pretty
from bpm.bpmn.xmlread import read_xml
from bpm.errors import DeploymentError, Problem
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from bpm.model.validate import check_model

__all__ = ["parse_bpmn"]

# Allowed inside a process, with no effect on execution.
_IGNORED = frozenset(
    {
        "documentation", "extensionElements", "laneSet", "textAnnotation", "association",
        "dataObject", "dataObjectReference", "dataStoreReference", "group", "property",
        "ioSpecification", "category",
    }
)  # fmt: skip
# Real BPMN flow elements that this engine does not run (yet).
_UNSUPPORTED = {
    "subProcess": "embedded sub processes",
    "adHocSubProcess": "ad-hoc sub processes",
    "transaction": "transactions",
    "callActivity": "call activities",
    "inclusiveGateway": "inclusive gateways",
    "complexGateway": "complex gateways",
    "eventBasedGateway": "event-based gateways",
    "scriptTask": "script tasks (scripts never run here; use a service task handler)",
    "manualTask": "manual tasks (use a user task)",
    "receiveTask": "receive tasks",
    "task": "untyped tasks (use a service or user task)",
    "intermediateThrowEvent": "intermediate throw events",
    "implicitThrowEvent": "implicit throw events",
}
_SUPPORTED = (
    "start/end events, service/user tasks, exclusive and parallel gateways, timer "
    "catch events, timer and error boundary events"
)


def parse_bpmn(source: str | bytes, resource: str | None = None) -> ProcessModel:
    """Read a BPMN 2.0 file (e.g. exported by Camunda Modeler) into a validated model.

    ``resource`` (a file name) is only used in error messages. Raises
    :class:`~bpm.errors.DeploymentError` listing every problem found, each naming the
    element id and the XML line.
    """
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
    process = _pick_process(root, resource)
    ctx = Context(doc, {e.get("id", ""): e for e in root if local(e) == "error" and e.get("id")})
    nodes: dict[str, n.Node] = {}
    flows: list[n.Flow] = []
    first_line: dict[str, int | None] = {}
    for el in process:
        item = _parse_element(el, ctx)
        if item is None:
            continue
        if not item.id:
            ctx.report(el, f'{pretty(el.tag)} on line {item.line} has no id: add id="..."')
            continue
        if item.id in first_line:
            ctx.report(
                el,
                f"id '{item.id}' is used twice (first on line {first_line[item.id]}): "
                "ids must be unique, rename one",
            )
            continue
        first_line[item.id] = item.line
        if isinstance(item, n.Flow):
            flows.append(item)
        else:
            nodes[item.id] = item
    key = process.get("id", "")
    if not key:
        ctx.report(process, 'the process has no id: add id="..." (it becomes the process key)')
    if len([p for p in root if local(p) == "process" and p.get("isExecutable") == "true"]) > 1:
        ctx.warnings.append(f"several executable processes: only '{key}' is deployed")
    model = ProcessModel(
        key=key,
        nodes=nodes,
        flows=tuple(flows),
        name=process.get("name") or None,
        version_tag=camunda(process, "versionTag") or None,
    )
    problems, warnings = check_model(model)
    problems = ctx.problems + [p for p in problems if p.element_id not in ctx.placeholders]
    if problems:
        problems.sort(key=lambda p: (p.line is None, p.line or 0))
        raise DeploymentError(problems, resource)
    return dataclasses.replace(model, warnings=tuple(dict.fromkeys(ctx.warnings + warnings)))


def _pick_process(root: Element, resource: str | None) -> Element:
    processes = [el for el in root if local(el) == "process"]
    chosen = [p for p in processes if p.get("isExecutable") == "true"] or [
        p for p in processes if p.get("isExecutable") != "false"
    ]
    if not chosen:
        what = "is not executable" if processes else "is missing"
        raise DeploymentError(
            f'the bpmn:process {what}: add <bpmn:process id="..." isExecutable="true">',
            resource,
        )
    return chosen[0]


def _parse_element(el: Element, ctx: Context) -> n.Node | n.Flow | None:
    name = local(el)
    parse = ELEMENTS.get(name)
    if parse is not None:
        return parse(el, ctx)
    if name in _IGNORED:
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
