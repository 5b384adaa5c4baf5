"""A loaded decision model: its DRG elements and how they evaluate.

A decision sees exactly what it requires (DMN 1.5 §6.3): its required decisions' values and
input data by name, its required business knowledge models and decision services as
functions, and elements of imported models under the import's name (``imp.Decision``).
Required decisions are evaluated first, each once per evaluation; the whole evaluation
shares one FEEL budget (:class:`bpm.feel.Limits`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bpm.dmn.boxed import function_value
from bpm.dmn.compiling import Logic
from bpm.dmn.itemdefs import conform
from bpm.dmn.tables import TableHit
from bpm.errors import NotFound, Problem
from bpm.feel import Limits, types
from bpm.feel.runtime import DEFAULT_LIMITS, Env, Run
from bpm.feel.values import Function, to_feel


@dataclass(frozen=True)
class TableShape:
    """What result mapping needs to know of a decision's table."""

    id: str | None
    outputs: tuple[str | None, ...]
    aggregation: str | None
    multiple: bool = False
    """A hit policy that may give several rules (COLLECT, RULE ORDER, OUTPUT ORDER)."""


@dataclass(eq=False)
class Element:
    """A DRG element: decision, input data, business knowledge model or decision service."""

    kind: str
    id: str
    name: str
    namespace: str
    path: tuple[str, ...]
    """Import names leading from the main model to this element's model (``()``: main)."""
    type: types.FeelType | None = None
    logic: Logic | None = None
    requirements: list[tuple[Element, str | None]] = field(default_factory=list)
    """Required elements, each with the import name it is seen under (None: same model)."""
    params: list[tuple[str, types.FeelType | None]] = field(default_factory=list)
    result_type: types.FeelType | None = None
    table: TableShape | None = None
    """Set when the decision's logic is a decision table (its rule results are mapped)."""
    outputs: list[Element] = field(default_factory=list)
    encapsulated: list[Element] = field(default_factory=list)
    input_decisions: list[Element] = field(default_factory=list)
    input_data: list[Element] = field(default_factory=list)

    def __repr__(self) -> str:
        return f"<{self.kind} {self.name!r}>"


@dataclass(frozen=True)
class Evaluation:
    """A decision's value and what produced it: every decision evaluated and table hits."""

    value: Any
    decisions: dict[str, Any]
    hits: tuple[TableHit, ...]


class DecisionModel:
    """A DMN model ready to evaluate: ``model.evaluate("Approval", {"Age": 30})``."""

    def __init__(
        self, name: str, namespace: str, elements: list[Element], source: str, id: str = ""
    ) -> None:
        self.id = id or name
        """The ``<definitions>`` id (Camunda's decision requirements definition key)."""
        self.name = name
        self.namespace = namespace
        self.source = source
        self._elements = elements
        self._main = [e for e in elements if not e.path]
        self.problems: list[Problem] = []
        """FEEL texts that did not compile, when loaded with ``strict=False``."""

    @property
    def decisions(self) -> list[str]:
        """Names of the model's own decisions, in document order."""
        return [e.name for e in self._main if e.kind == "decision"]

    @property
    def decision_elements(self) -> list[Element]:
        """The model's own decisions (id, name, type...), in document order."""
        return [e for e in self._main if e.kind == "decision"]

    @property
    def input_data(self) -> list[str]:
        return [e.name for e in self._main if e.kind == "inputData"]

    @property
    def invocables(self) -> list[str]:
        """Business knowledge models and decision services, by name."""
        return [
            e.name for e in self._main if e.kind in ("businessKnowledgeModel", "decisionService")
        ]

    def element(self, name_or_id: str, kinds: tuple[str, ...] = ("decision",)) -> Element:
        for e in self._main:
            if e.kind in kinds and (e.name == name_or_id or e.id == name_or_id):
                return e
        known = ", ".join(repr(e.name) for e in self._main if e.kind in kinds) or "none"
        raise NotFound(
            f"the model {self.name!r} has no {' or '.join(kinds)} {name_or_id!r} (it has {known})"
        )

    def evaluate(
        self, name: str, inputs: Mapping[str, Any] | None = None, *, limits: Limits = DEFAULT_LIMITS
    ) -> Any:
        """The value of the decision ``name`` (or id), given input data by name.

        Inputs are Python values (``int``/``float`` become ``Decimal``); an input named like
        a decision stands in for that decision's value. Imported inputs nest under the
        import's name (``{"imp": {"Person": ...}}``).
        """
        return self.evaluate_detailed(name, inputs, limits=limits).value

    def evaluate_detailed(
        self,
        name: str,
        inputs: Mapping[str, Any] | None = None,
        *,
        limits: Limits = DEFAULT_LIMITS,
        trace: bool = False,
        by_namespace: Mapping[str, Mapping[str, Any]] | None = None,
        now: datetime | None = None,
        open_scope: bool = False,
    ) -> Evaluation:
        """Like :meth:`evaluate`, with every decision's value and (``trace``) table hits.

        ``by_namespace`` gives input data of imported models by their model's namespace
        (``{namespace: {name: value}}``), whichever import path leads to them.

        ``open_scope``: Camunda's scoping, for models drawn without input data (what
        Camunda Modeler draws): every decision sees all of ``inputs`` by name, and each
        required decision table's results under its output names as well (one matched
        rule: each output's value; a hit policy that may give several: each output's list
        of values), as Camunda 7 and 8 evaluate them; DMN's own names take precedence.
        """
        target = self.element(name)
        run = Run(limits, f"decision {target.name!r}", now)
        if trace:
            run.trace = []
        session = _Session(self, _inputs(inputs), run)
        session.open_scope = open_scope
        session.by_namespace = {ns: _inputs(v) for ns, v in (by_namespace or {}).items()}
        value = session.value(target)
        decisions = {e.name: v for e, v in session.decided.items() if not e.path}
        return Evaluation(value, decisions, tuple(run.trace or ()))

    def evaluate_rules(
        self, name: str, inputs: Mapping[str, Any] | None = None, *, limits: Limits = DEFAULT_LIMITS
    ) -> list[dict[str, Any]]:
        """The decision's result as Camunda's rule results: one dict (output name -> value)
        per matched rule of its decision table, in the hit policy's order (one dict for an
        aggregation, the default outputs when no rule matched), or ``[{name: value}]`` for
        any other decision logic. :mod:`bpm.dmn.results` maps these onto variables."""
        return self.rules_of(name, self.evaluate_detailed(name, inputs, limits=limits, trace=True))

    def rules_of(self, name: str, detailed: Evaluation) -> list[dict[str, Any]]:
        """:meth:`evaluate_rules` of an evaluation made with ``trace=True``."""
        target = self.element(name)
        shape = target.table
        if shape is None:
            return [{target.name: detailed.value}]
        hit = next((h for h in reversed(detailed.hits) if h.table_id == shape.id), None)
        names = [
            n or (target.name if len(shape.outputs) == 1 else str(i))
            for i, n in enumerate(shape.outputs)
        ]
        value = detailed.value
        if hit is None or value is None:
            return []
        if shape.aggregation is not None:
            return [{names[0]: value}]
        single = len(names) == 1
        ordered = value if isinstance(value, list) else [value]  # one row, or default outputs
        return [
            {names[0]: item} if single else dict(zip(names, item.values(), strict=True))
            for item in ordered
        ]

    def invoke(
        self,
        name: str,
        args: Mapping[str, Any] | list[Any] | None = None,
        *,
        limits: Limits = DEFAULT_LIMITS,
        inputs: Mapping[str, Any] | None = None,
    ) -> Any:
        """Call a business knowledge model or decision service with arguments by name (or a
        list, in parameter order); ``inputs`` feed what a BKM's own requirements need."""
        target = self.element(name, ("businessKnowledgeModel", "decisionService"))
        run = Run(limits, f"{target.kind} {target.name!r}")
        session = _Session(self, _inputs(inputs), run)
        fn = session.value(target)
        assert isinstance(fn, Function)
        if isinstance(args, list):
            return fn.call(run, [to_feel(a) for a in args])
        given = _inputs(args)
        return fn.call(run, [given.get(p) for p in fn.params])


def _inputs(inputs: Mapping[str, Any] | None) -> dict[str, Any]:
    return {str(k): to_feel(v) for k, v in (inputs or {}).items()}


def _by_output_name(element: Element, shape: TableShape, value: Any) -> dict[str, Any]:
    """A required decision table's value under its output names (Camunda's scoping)."""
    if value is None:
        return {}
    names = [o or element.name for o in shape.outputs]
    if shape.aggregation is not None:
        return {names[0]: [value]}  # Camunda: COLLECT gives each output's list
    if shape.multiple:
        rows = value if isinstance(value, list) else [value]
        if len(names) == 1:
            return {names[0]: list(rows)}
        return {n: [r.get(n) if isinstance(r, dict) else None for r in rows] for n in names}
    if len(names) == 1:
        return {names[0]: value}
    return dict(value) if isinstance(value, dict) else {}


class _Session:
    """One evaluation: input values, decisions decided so far, functions built so far."""

    def __init__(
        self,
        model: DecisionModel,
        inputs: dict[str, Any],
        run: Run,
        given: dict[Element, Any] | None = None,
    ) -> None:
        self.model = model
        self.inputs = inputs
        self.run = run
        self.given = given or {}
        self.decided: dict[Element, Any] = {}
        self.functions: dict[Element, Function] = {}
        self.by_namespace: dict[str, dict[str, Any]] = {}
        self.open_scope = False

    def value(self, element: Element) -> Any:
        if element in self.given:
            return self.given[element]
        kind = element.kind
        if kind == "inputData":
            return conform(self._input(element), element.type)
        if kind == "decision":
            return self._decide(element)
        return self._function(element)

    def _input(self, element: Element) -> Any:
        if element.path and element.namespace in self.by_namespace:
            return self.by_namespace[element.namespace].get(element.name)
        scope: Any = self.inputs
        for step in element.path:
            scope = scope.get(step) if isinstance(scope, dict) else None
        if not isinstance(scope, dict):
            return None
        return scope.get(element.name)

    def _decide(self, element: Element) -> Any:
        if element in self.decided:
            return self.decided[element]
        if not element.path and element.name in self.inputs:
            value = conform(self.inputs[element.name], element.type)
        else:
            env = Env(self.scope(element), None, self.run)
            value = element.logic(env) if element.logic is not None else None
            value = conform(value, element.type)
        self.decided[element] = value
        return value

    def scope(self, element: Element) -> dict[str, Any]:
        names: dict[str, Any] = dict(self.inputs) if self.open_scope else {}
        for required, prefix in element.requirements:
            value = self.value(required)
            if prefix:
                inner = names.setdefault(prefix, {})
                if isinstance(inner, dict):
                    inner[required.name] = value
            else:
                if self.open_scope and required.table is not None:
                    names.update(_by_output_name(required, required.table, value))
                names[required.name] = value
        return names

    def _function(self, element: Element) -> Function:
        if element in self.functions:
            return self.functions[element]
        if element.kind == "businessKnowledgeModel":
            closure = Env(self.scope(element), None, self.run)
            body = element.logic or (lambda env: None)
            fn = function_value(element.name, element.params, body, closure, element.result_type)
        else:
            fn = self._service(element)
        self.functions[element] = fn
        return fn

    def _service(self, element: Element) -> Function:
        params = [*element.input_data, *element.input_decisions]  # DMN 1.5 §10.4: data first
        names = tuple(p.name for p in params)
        model = self.model

        def call(run: Run, args: list[Any]) -> Any:
            if len(args) != len(params):
                return None
            given = {p: conform(a, p.type) for p, a in zip(params, args, strict=True)}
            if any(v is None and a is not None for v, a in zip(given.values(), args, strict=True)):
                return None  # an argument of the wrong type: the invocation is an error
            inner = _Session(model, {}, run, given)
            run.tick()
            run.enter()
            try:
                values = {out.name: inner.value(out) for out in element.outputs}
            finally:
                run.leave()
            if len(element.outputs) == 1:
                return conform(next(iter(values.values())), element.result_type)
            return conform(values, element.result_type)

        return Function(element.name, names, call, tuple(p.type or types.ANY for p in params))
