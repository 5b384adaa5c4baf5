"""The facets every kind declares: :class:`ElementKind` (one node class) and
:class:`TriggerKind` (what an event position waits for or throws).

A kind is one module of :mod:`bpm.kinds` holding one of these values; the registry
(:class:`Kinds`) checks when it is built that every facet is present and that no BPMN tag,
JSON name or node class is claimed twice, so a kind that is only half declared fails at
import, not when a token first reaches it or the cockpit first draws it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from xml.etree.ElementTree import Element

from bpm.bpmn.elements import ElementParser
from bpm.cockpit.diagram import Draw, Drawing
from bpm.model import nodes as n
from bpm.model.validate import Check
from bpm.runtime.hooks import Behaviour, Walk

__all__ = [
    "POSITIONS",
    "DrawTrigger",
    "ElementKind",
    "KindError",
    "TriggerKind",
]

POSITIONS = ("start", "intermediate_catch", "intermediate_throw", "boundary", "end")
"""Where a trigger may stand: BPMN's event positions."""

DrawTrigger = Callable[[Element, Any, Drawing], None]
"""Writes a trigger's event definition into the drawn event element of a node."""


class KindError(TypeError):
    """A kind declared with a facet missing or claimed by another kind."""


@dataclass(frozen=True)
class ElementKind:
    """One node class and everything every layer needs to know about it.

    ``name`` is the JSON name (the node class's ``json_name``, unchanged for stored
    models); ``parse``: BPMN local name -> the parse function that may give this node (several
    kinds share a position's parser, which picks by event definition); ``behave``: what
    a token arriving there does; ``activity_type``: Camunda's ``activityType`` of a node;
    ``draw``: writes it into the cockpit's diagram; ``build``: the builder verbs that
    make it (methods of :class:`bpm.builder.Process`); ``trigger``: for an event
    position, which trigger a node of it carries (None: none); ``checks``: its own deploy
    checks of one node (None: the graph-wide checks are all it needs); ``release``: for a
    join decided once the walk has nothing else to move, fires one (True: it did).
    """

    node: type[n.Node]
    parse: Mapping[str, ElementParser]
    behave: Behaviour
    activity_type: Callable[[Any], str]
    draw: Draw
    build: tuple[str, ...]
    position: str | None = None
    trigger: Callable[[Any], str | None] | None = None
    checks: Check | None = None
    release: Callable[[Walk], bool] | None = None

    @property
    def name(self) -> str:
        return self.node.json_name

    @property
    def element_type(self) -> str:
        """The BPMN element it stands for, as problems name it (``bpmn:userTask``)."""
        return f"bpmn:{self.node.tag}"

    def check(self) -> None:
        """Raise :class:`KindError` when a facet is missing or inconsistent."""
        where = f"element kind '{self.node.__name__}'"
        if not self.name or not self.node.tag:
            raise KindError(f"{where}: its node class says no json_name or tag")
        if not self.parse:
            raise KindError(f"{where}: no BPMN tag parses to it")
        if not self.build:
            raise KindError(f"{where}: no builder verb makes it")
        for facet in ("behave", "activity_type", "draw"):
            if not callable(getattr(self, facet)):
                raise KindError(f"{where}: facet '{facet}' is missing")
        if (self.position is None) != (self.trigger is None):
            raise KindError(f"{where}: an event position says how to find its trigger")
        if self.position is not None and self.position not in POSITIONS:
            raise KindError(f"{where}: unknown position '{self.position}'")


@dataclass(frozen=True)
class TriggerKind:
    """What an event waits for or throws: ``definition`` is its BPMN event definition
    tag; ``activity_types`` holds Camunda's ``activityType`` in each position it may
    stand in (its keys are those positions); ``draw`` writes its definition."""

    name: str
    definition: str
    activity_types: Mapping[str, str]
    draw: DrawTrigger

    def check(self) -> None:
        """Raise :class:`KindError` when a facet is missing or inconsistent."""
        where = f"trigger kind '{self.name}'"
        if not self.name or not self.definition.endswith("EventDefinition"):
            raise KindError(f"{where}: its definition must be a BPMN *EventDefinition tag")
        if not self.activity_types or set(self.activity_types) - set(POSITIONS):
            raise KindError(f"{where}: positions must be some of {', '.join(POSITIONS)}")
        if not callable(self.draw):
            raise KindError(f"{where}: facet 'draw' is missing")

    @property
    def positions(self) -> frozenset[str]:
        return frozenset(self.activity_types)
