"""One small parse function per BPMN element kind, registered in :data:`ELEMENTS`.

Each function reads one element into a node or flow and reports what it cannot use to
the :class:`Context`; it still returns its best reading, so the graph checks that run
afterwards see the whole process.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from xml.etree.ElementTree import Element

from bpm.bpmn.namespaces import CAMUNDA_NS, camunda, local, ours, pretty, split
from bpm.bpmn.retryspec import RetrySpecError, parse_retry, parse_retry_cycle
from bpm.bpmn.xmlread import Document
from bpm.errors import Problem
from bpm.expressions import unwrap
from bpm.model import nodes as n
from bpm.retry import RetryPolicy
from bpm.timeexpr import TimerError, parse_duration, variable_name

__all__ = ["ELEMENTS", "Context", "ElementParser"]

_TIMER_KINDS = {
    "timeDuration": n.TimerKind.DURATION,
    "timeDate": n.TimerKind.DATE,
    "timeCycle": n.TimerKind.CYCLE,
}
# Camunda extensions with behaviour this engine does not reproduce: deploy, but say so.
_IGNORED_CAMUNDA = frozenset(
    {"executionListener", "taskListener", "inputOutput", "connector", "field", "in", "out"}
)


@dataclass
class Context:
    """What every parse function shares: the document, bpmn:error elements, findings."""

    doc: Document
    errors: dict[str, Element]
    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    placeholders: set[str] = field(default_factory=set)
    """Ids of rejected elements kept as bare nodes so flows to them still resolve."""

    def placeholder(self, el: Element) -> n.Node:
        """A bare node for a rejected element; graph checks skip it."""
        self.placeholders.add(el.get("id", ""))
        return n.Node(el.get("id", ""), el.get("name") or None, self.doc.line(el))

    def report(self, el: Element, message: str) -> None:
        """Record a problem located at ``el`` (its id, or its owner's, and its line)."""
        self.problems.append(Problem(message, el.get("id"), self.doc.line(el)))

    def report_in(self, owner: Element, el: Element, message: str) -> None:
        """Record a problem in a child ``el`` of ``owner``, named by the owner's id."""
        self.problems.append(Problem(message, owner.get("id"), self.doc.line(el)))


ElementParser = Callable[[Element, Context], n.Node | n.Flow]


def _base(el: Element, ctx: Context) -> tuple[str, str | None, int | None]:
    return el.get("id", ""), el.get("name") or None, ctx.doc.line(el)


def _event_definitions(el: Element, ctx: Context, allowed: frozenset[str]) -> list[Element]:
    """The event definitions of ``el``; reports unsupported ones and loop markers."""
    found: list[Element] = []
    for child in el:
        name = local(child)
        if name.endswith("LoopCharacteristics"):
            ctx.report_in(
                el,
                child,
                f"{pretty(child.tag)} on '{el.get('id')}' (a multi-instance or loop marker) "
                "is not supported: remove it, or loop with an exclusive gateway",
            )
        elif name.endswith("EventDefinition") or name == "eventDefinitionRef":
            if name in allowed:
                found.append(child)
            else:
                ctx.report_in(
                    el,
                    child,
                    f"{pretty(child.tag)} on {pretty(el.tag)} '{el.get('id')}' is not "
                    "supported by this engine: use a supported event or remove it",
                )
    if len(found) > 1:
        ctx.report(el, f"'{el.get('id')}' has several event definitions: keep exactly one")
    return found


def _extensions(el: Element, ctx: Context) -> tuple[dict[str, str], str | None]:
    """``camunda:properties`` and the ``camunda:failedJobRetryTimeCycle`` element text."""
    properties: dict[str, str] = {}
    retry_cycle: str | None = None
    for ext in el:
        if local(ext) != "extensionElements":
            continue
        for item in ext:
            ns, name = split(item.tag)
            if ns != CAMUNDA_NS:
                continue
            if name == "properties":
                for prop in item:
                    if split(prop.tag) == (CAMUNDA_NS, "property") and prop.get("name"):
                        properties[prop.get("name", "")] = prop.get("value", "")
            elif name == "failedJobRetryTimeCycle":
                retry_cycle = (item.text or "").strip() or None
            elif name in _IGNORED_CAMUNDA:
                ctx.warnings.append(
                    f"camunda:{name} on '{el.get('id')}' (line {ctx.doc.line(item)}) is "
                    "ignored by this engine"
                )
    return properties, retry_cycle


def _error_code(defn: Element, owner: Element, ctx: Context, *, required: bool) -> str | None:
    ref = defn.get("errorRef")
    if not ref:
        if required:
            ctx.report_in(owner, defn, "an error end event needs errorRef to a bpmn:error")
        return None
    error = ctx.errors.get(ref) or ctx.errors.get(ref.rpartition(":")[2])
    if error is None:
        ctx.report_in(
            owner, defn, f"errorRef '{ref}' names no bpmn:error: add <bpmn:error id=\"{ref}\">"
        )
        return None
    code = error.get("errorCode") or None
    if code is None and required:
        ctx.report_in(owner, defn, f"bpmn:error '{ref}' has no errorCode: add errorCode=\"...\"")
    return code


def _timer(defn: Element, owner: Element, ctx: Context) -> n.TimerSpec | None:
    found = [(kind, child) for child in defn if (kind := _TIMER_KINDS.get(local(child)))]
    if len(found) != 1:
        ctx.report_in(
            owner,
            defn,
            f"timer of '{owner.get('id')}' needs exactly one of timeDuration, timeDate or "
            f"timeCycle (found {len(found)})",
        )
        return None
    kind, child = found[0]
    text = (child.text or "").strip()
    if not text:
        ctx.report_in(owner, child, f"timer of '{owner.get('id')}' is empty: write e.g. PT5M")
        return None
    return n.TimerSpec(kind, text)


def parse_start(el: Element, ctx: Context) -> n.Node:
    """``startEvent``: only the none start event is supported."""
    _event_definitions(el, ctx, frozenset())
    node_id, name, line = _base(el, ctx)
    return n.StartEvent(node_id, name, line)


def parse_end(el: Element, ctx: Context) -> n.Node:
    """``endEvent``: none, terminate or error."""
    node_id, name, line = _base(el, ctx)
    allowed = frozenset({"terminateEventDefinition", "errorEventDefinition"})
    defs = _event_definitions(el, ctx, allowed)
    if not defs:
        return n.EndEvent(node_id, name, line)
    if local(defs[0]) == "terminateEventDefinition":
        return n.EndEvent(node_id, name, line, kind=n.EndKind.TERMINATE)
    code = _error_code(defs[0], el, ctx, required=True)
    return n.EndEvent(node_id, name, line, kind=n.EndKind.ERROR, error_code=code)


def _retry(el: Element, cycle: str | None, ctx: Context) -> RetryPolicy | None:
    spec = ours(el, "retry")
    cycle = camunda(el, "failedJobRetryTimeCycle") or cycle
    if spec and cycle:
        ctx.report(el, "both bpm:retry and camunda:failedJobRetryTimeCycle are set: keep one")
    try:
        if spec:
            return parse_retry(spec)
        if cycle:
            return parse_retry_cycle(cycle)
    except RetrySpecError as exc:
        ctx.report(el, str(exc))
    return None


def _handler(el: Element, ctx: Context) -> str | None:
    handler = ours(el, "handler") or None
    delegate = camunda(el, "delegateExpression")
    if delegate is not None:
        name = variable_name(delegate)
        if name is None:
            ctx.report(
                el,
                f"camunda:delegateExpression '{delegate}' must be ${{handlerName}} (the name "
                "of a registered handler)",
            )
        elif handler is not None and handler != name:
            ctx.report(el, f"bpm:handler '{handler}' and delegateExpression '{name}' differ")
        else:
            handler = name
    for java in ("class", "expression", "decisionRef"):
        if camunda(el, java):
            ctx.report(
                el,
                f'camunda:{java} needs the Java engine: set bpm:handler="name" for an inline '
                'handler or camunda:type="external" camunda:topic="..." for a worker',
            )
    return handler


def _topic(el: Element, ctx: Context) -> str | None:
    kind = camunda(el, "type")
    topic = camunda(el, "topic") or ours(el, "topic") or None
    if kind is not None and kind != "external":
        ctx.report(el, f'camunda:type="{kind}" is not supported: use camunda:type="external"')
    if kind == "external" and topic is None:
        ctx.report(el, 'an external task needs camunda:topic="...": name the worker topic')
    return topic


def parse_service(el: Element, ctx: Context) -> n.Node:
    """``serviceTask`` (and ``sendTask`` / ``businessRuleTask``): inline or external work."""
    _event_definitions(el, ctx, frozenset())
    node_id, name, line = _base(el, ctx)
    properties, cycle = _extensions(el, ctx)
    priority = 0
    if (text := camunda(el, "taskPriority")) is not None:
        try:
            priority = int(text)
        except ValueError:
            ctx.report(el, f"camunda:taskPriority '{text}' must be a whole number")
    lease: float | None = None
    if (text := ours(el, "lease")) is not None:
        try:
            lease = parse_duration(text).total_seconds()
        except TimerError as exc:
            ctx.report(el, f"bpm:lease: {exc}")
    before = len(ctx.problems)
    handler, topic = _handler(el, ctx), _topic(el, ctx)
    if handler is None and topic is None and len(ctx.problems) > before:
        handler = ""  # already reported precisely; keeps "neither handler nor topic" quiet
    return n.ServiceTask(
        node_id,
        name,
        line,
        handler=handler,
        topic=topic,
        retry=_retry(el, cycle, ctx),
        priority=priority,
        properties=properties,
        lease_seconds=lease,
    )


def parse_user(el: Element, ctx: Context) -> n.Node:
    """``userTask``: ``camunda:assignee`` and comma-separated ``camunda:candidateGroups``."""
    _event_definitions(el, ctx, frozenset())
    node_id, name, line = _base(el, ctx)
    properties, _ = _extensions(el, ctx)
    groups = camunda(el, "candidateGroups") or ""
    if camunda(el, "candidateUsers"):
        ctx.warnings.append(f"camunda:candidateUsers on '{node_id}' is ignored")
    return n.UserTask(
        node_id,
        name,
        line,
        assignee=camunda(el, "assignee") or None,
        candidate_groups=tuple(g.strip() for g in groups.split(",") if g.strip()),
        properties=properties,
    )


def parse_exclusive(el: Element, ctx: Context) -> n.Node:
    """``exclusiveGateway`` with its optional ``default`` flow."""
    node_id, name, line = _base(el, ctx)
    return n.ExclusiveGateway(node_id, name, line, default_flow=el.get("default") or None)


def parse_parallel(el: Element, ctx: Context) -> n.Node:
    """``parallelGateway``: fork and/or join."""
    node_id, name, line = _base(el, ctx)
    return n.ParallelGateway(node_id, name, line)


def parse_catch(el: Element, ctx: Context) -> n.Node:
    """``intermediateCatchEvent``: only timers are supported."""
    node_id, name, line = _base(el, ctx)
    before = len(ctx.problems)
    defs = _event_definitions(el, ctx, frozenset({"timerEventDefinition"}))
    timer = _timer(defs[0], el, ctx) if defs else None
    if timer is None:
        if len(ctx.problems) == before:
            ctx.report(el, f"intermediate catch event '{node_id}' needs a timerEventDefinition")
        return ctx.placeholder(el)
    return n.TimerCatchEvent(node_id, name, line, timer=timer)


def parse_boundary(el: Element, ctx: Context) -> n.Node:
    """``boundaryEvent``: a timer (interrupting or not) or an error catch."""
    node_id, name, line = _base(el, ctx)
    allowed = frozenset({"timerEventDefinition", "errorEventDefinition"})
    before = len(ctx.problems)
    defs = _event_definitions(el, ctx, allowed)
    timer: n.TimerSpec | None = None
    code: str | None = None
    if not defs and len(ctx.problems) == before:
        ctx.report(el, f"boundary event '{node_id}' needs a timer or error event definition")
    elif local(defs[0]) == "timerEventDefinition":
        timer = _timer(defs[0], el, ctx)
    else:
        code = _error_code(defs[0], el, ctx, required=False)
    return n.BoundaryEvent(
        node_id,
        name,
        line,
        attached_to=el.get("attachedToRef", ""),
        cancel_activity=el.get("cancelActivity", "true").strip().lower() != "false",
        timer=timer,
        error_code=code,
    )


def parse_flow(el: Element, ctx: Context) -> n.Flow:
    """``sequenceFlow`` with an optional CEL ``conditionExpression`` (``${...}`` unwrapped)."""
    flow_id, name, line = _base(el, ctx)
    condition: str | None = None
    for child in el:
        if local(child) != "conditionExpression":
            continue
        language = (child.get("language") or "").strip().lower()
        if language not in ("", "cel", "juel"):
            ctx.report_in(
                el,
                child,
                f"condition language '{language}' is not supported: remove the language "
                "attribute and write a CEL expression such as ${amount > 100}",
            )
        condition = unwrap(child.text or "") or None
    for ref in ("sourceRef", "targetRef"):
        if not el.get(ref):
            ctx.report(el, f"sequence flow '{flow_id}' has no {ref}: connect both ends")
    return n.Flow(flow_id, el.get("sourceRef", ""), el.get("targetRef", ""), condition, name, line)


ELEMENTS: dict[str, ElementParser] = {
    "startEvent": parse_start,
    "endEvent": parse_end,
    "serviceTask": parse_service,
    "sendTask": parse_service,
    "businessRuleTask": parse_service,
    "userTask": parse_user,
    "exclusiveGateway": parse_exclusive,
    "parallelGateway": parse_parallel,
    "intermediateCatchEvent": parse_catch,
    "boundaryEvent": parse_boundary,
    "sequenceFlow": parse_flow,
}
"""BPMN local name -> parse function, for the flow elements this engine runs."""
