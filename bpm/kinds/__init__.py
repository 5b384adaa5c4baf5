"""The registry of kinds: every BPMN element kind and trigger kind the engine runs, each
one module of this package declaring all of its facets (``docs/development.md``).

:data:`KINDS` is built from an explicit list and checked when it is built: a node class
without a kind, a kind without a facet, or a BPMN tag parsed two ways fails at import. The
tables other layers use are derived from it: the behaviour table the walker is handed,
Camunda's activity types, the cockpit's drawing (and, checked against it by the tests, the
parser's tag table and the model's JSON names).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from xml.etree.ElementTree import Element

from bpm.bpmn import elements
from bpm.bpmn import messages as definitions
from bpm.bpmn.elements import ElementParser, parse_flow
from bpm.builder import Process
from bpm.cockpit import diagram
from bpm.cockpit.diagram import Drawing
from bpm.cockpit.layout import Layout
from bpm.kinds import (
    ad_hoc,
    boundary,
    business_rule_task,
    call_activity,
    compensation,
    complex,
    conditional,
    end,
    error,
    escalation,
    event_based,
    event_sub_process,
    exclusive,
    inclusive,
    intermediate,
    link,
    message,
    parallel,
    pass_through,
    receive_task,
    script_task,
    service_task,
    signal,
    standard_loop,
    start,
    sub_process,
    terminate,
    timer,
    transaction,
    user_task,
)
from bpm.kinds.spec import ElementKind, KindError, TriggerKind
from bpm.model import nodes as n
from bpm.model import validate
from bpm.model.process import NODE_CLASSES, ProcessModel
from bpm.model.validate import Check
from bpm.runtime import compensation as compensating
from bpm.runtime import eventsub, task_events
from bpm.runtime import messages as messaging
from bpm.runtime import timers as timing
from bpm.runtime.hooks import Behaviour, Hooks, TimerHooks, Walk
from bpm.runtime.states import ScopeKind

__all__ = [
    "KINDS",
    "ElementKind",
    "KindError",
    "Kinds",
    "TriggerKind",
    "activity_type",
    "diagram_xml",
    "model_to_bpmn",
]


@dataclass(frozen=True)
class Kinds:
    """Every element kind and trigger kind, checked when built (:class:`KindError`)."""

    elements: tuple[ElementKind, ...]
    triggers: tuple[TriggerKind, ...]
    hooks: Hooks
    """What the walker and the mechanisms reach without naming it (runtime/hooks.py)."""
    flow: ElementParser = field(default=parse_flow)
    """The parser of ``sequenceFlow``, the one flow element that is not a node."""

    def __post_init__(self) -> None:
        nodes: dict[type[n.Node], ElementKind] = {}
        for kind in self.elements:
            kind.check()
            if kind.node in nodes:
                raise KindError(f"{kind.node.__name__} has two element kinds")
            nodes[kind.node] = kind
            for verb in kind.build:
                if not callable(getattr(Process, verb, None)):
                    raise KindError(f"element kind '{kind.name}': no builder verb '{verb}'")
        missing = [cls.__name__ for cls in NODE_CLASSES if cls not in nodes]
        if missing:
            raise KindError(f"node classes without an element kind: {', '.join(missing)}")
        names: dict[str, TriggerKind] = {}
        for trigger in self.triggers:
            trigger.check()
            if trigger.name in names or trigger.definition in {
                t.definition for t in names.values()
            }:
                raise KindError(f"trigger kind '{trigger.name}' is declared twice")
            names[trigger.name] = trigger
        parsers: dict[str, ElementParser] = {"sequenceFlow": self.flow}
        for kind in self.elements:
            for tag, parse in kind.parse.items():
                if parsers.setdefault(tag, parse) is not parse:
                    raise KindError(f"<{tag}> is parsed two ways (kind '{kind.name}')")

    @cached_property
    def by_node(self) -> Mapping[type[n.Node], ElementKind]:
        return {kind.node: kind for kind in self.elements}

    @cached_property
    def by_trigger(self) -> Mapping[str, TriggerKind]:
        return {trigger.name: trigger for trigger in self.triggers}

    @cached_property
    def parsers(self) -> Mapping[str, ElementParser]:
        """BPMN local name -> its parse function: every flow element the engine runs."""
        found: dict[str, ElementParser] = {}
        for kind in self.elements:
            found.update(kind.parse)
        found["sequenceFlow"] = self.flow
        return found

    @cached_property
    def checks(self) -> Mapping[type[n.Node], Check]:
        """Node class -> its kind's own deploy checks (the validator's table)."""
        return {kind.node: kind.checks for kind in self.elements if kind.checks is not None}

    @cached_property
    def behaviours(self) -> Mapping[type, Behaviour]:
        """What a token arriving at a node of each class does: the walker's table."""
        return {kind.node: kind.behave for kind in self.elements}

    def of(self, node: n.Node) -> ElementKind:
        return self.by_node[type(node)]

    def trigger_of(self, node: n.Node) -> TriggerKind | None:
        """The trigger an event position carries (None: none, or not an event)."""
        kind = self.of(node)
        name = kind.trigger(node) if kind.trigger is not None else None
        return self.by_trigger[name] if name is not None else None

    def activity_type(self, node: n.Node | None) -> str:
        """Camunda's ``activityType`` of a node (``serviceTask``, ``noneEndEvent``...):
        an event position's comes from its trigger."""
        if node is None or type(node) not in self.by_node:
            return "unknown"
        kind, trigger = self.of(node), self.trigger_of(node)
        if trigger is not None and kind.position is not None:
            return trigger.activity_types[kind.position]
        return kind.activity_type(node)

    def draw(self, parent: Element, node: n.Node, attrs: dict[str, str], d: Drawing) -> Element:
        """Writes ``node`` into the cockpit's diagram: its element, then its trigger."""
        el = self.of(node).draw(parent, node, attrs, d)
        standard_loop.draw_marker(el, node)
        trigger = self.trigger_of(node)
        if trigger is not None:
            trigger.draw(el, node, d)
        return el


def releases(elements: tuple[ElementKind, ...]) -> Callable[[Walk], bool]:
    """The walker's ``release_joins`` hook: every kind's ``release`` in turn, until one
    fires (the walk then goes on, and asks again)."""
    found = tuple(kind.release for kind in elements if kind.release is not None)

    def release(walker: Walk) -> bool:
        return any(each(walker) for each in found)

    return release


_ELEMENTS = (
    start.KIND,
    end.KIND,
    boundary.KIND,
    intermediate.KIND,
    service_task.KIND,
    script_task.KIND,
    user_task.KIND,
    business_rule_task.KIND,
    receive_task.KIND,
    pass_through.KIND,
    exclusive.KIND,
    parallel.KIND,
    inclusive.KIND,
    complex.KIND,
    event_based.KIND,
    sub_process.KIND,
    event_sub_process.KIND,
    call_activity.KIND,
    transaction.KIND,
    ad_hoc.KIND,
    transaction.CANCEL_END,
    transaction.CANCEL_BOUNDARY,
    timer.CATCH,
    signal.THROW,
    escalation.THROW,
    compensation.THROW,
    link.THROW,
    link.CATCH,
)
KINDS = Kinds(
    elements=_ELEMENTS,
    triggers=(
        timer.TRIGGER,
        message.TRIGGER,
        signal.TRIGGER,
        error.TRIGGER,
        escalation.TRIGGER,
        compensation.TRIGGER,
        link.TRIGGER,
        terminate.TRIGGER,
        conditional.TRIGGER,
        transaction.TRIGGER,
    ),
    hooks=Hooks(
        arm=eventsub.arm,
        disarm=eventsub.disarm,
        start_event_subprocess=eventsub.start,
        start_loop=standard_loop.start_loop,
        release_joins=releases(_ELEMENTS),
        settlers={
            ScopeKind.INNER_INSTANCE: standard_loop.inner_done,
            ScopeKind.EVENT_SUBPROCESS: eventsub.complete,
            ScopeKind.COMPENSATION: compensating.advance,
        },
        settle_unit=conditional.settle,
        timers={
            timing.EVENT_START: TimerHooks(eventsub.timer_still_waits, eventsub.fire),
            task_events.TIMEOUT_TIMER: task_events.TIMER_HOOKS,
            timing.EVENT_GATEWAY: TimerHooks(
                messaging.gateway_timer_waits, messaging.gateway_timer_fired
            ),
        },
    ),
)
"""The registry: add a kind here, in its own module."""

elements.install(KINDS.parsers)  # the BPMN parser dispatches by tag through the registry
definitions.install_catches({conditional.DEFINITION: conditional.parse_definition})
validate.install(KINDS.checks)  # and the validator runs each kind's own checks


def activity_type(node: n.Node | None) -> str:
    """Camunda's ``activityType`` of a node (see :meth:`Kinds.activity_type`)."""
    return KINDS.activity_type(node)


def model_to_bpmn(model: ProcessModel, placed: Layout | None = None) -> str:
    """``model`` as BPMN 2.0 XML with a generated diagram, each node drawn by its kind."""
    return diagram.model_to_bpmn(model, placed, draw=KINDS.draw)


def diagram_xml(model: ProcessModel, source: str) -> str:
    """What the cockpit draws for a deployed definition (see
    :func:`bpm.cockpit.diagram.diagram_xml`), each generated node drawn by its kind."""
    return diagram.diagram_xml(model, source, draw=KINDS.draw)
