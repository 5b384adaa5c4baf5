"""Decision tables (DMN 1.5 §8): every hit policy and aggregation, input and output values,
priorities and default outputs.

Each input entry is compiled once into a unary test; a ``-`` cell is dropped, so a rule
checks only the cells that say something. Single-hit policies (UNIQUE, ANY, PRIORITY,
FIRST) give one output (a value, or a context for several outputs); multi-hit ones
(COLLECT, RULE ORDER, OUTPUT ORDER) a list, or with COLLECT's aggregation (SUM, COUNT, MIN,
MAX) one number. A rule set that breaks the policy (two UNIQUE hits, an ANY conflict) gives
null, as an invalid decision does. When ``Run.trace`` is a list, each evaluation appends a
:class:`TableHit` (matched rules, inputs, outputs) for the history.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from bpm.dmn.compiling import Compiling, Logic
from bpm.dmn.itemdefs import conform
from bpm.dmn.xml import Node
from bpm.feel import types
from bpm.feel.compiler import Test
from bpm.feel.runtime import Env, Run
from bpm.feel.values import DECIMAL, compare, equal

SINGLE = ("UNIQUE", "ANY", "PRIORITY", "FIRST")
MULTI = ("COLLECT", "RULE ORDER", "OUTPUT ORDER")
POLICY_ALIASES = {"U": "UNIQUE", "A": "ANY", "P": "PRIORITY", "F": "FIRST", "C": "COLLECT",
                  "R": "RULE ORDER", "O": "OUTPUT ORDER"}  # fmt: skip
AGGREGATIONS = ("SUM", "COUNT", "MIN", "MAX")


@dataclass(frozen=True)
class TableHit:
    """One decision table evaluation, as the history records it."""

    table_id: str | None
    decision: str | None
    inputs: tuple[tuple[str, Any], ...]
    """(label, value) of each input clause."""
    matched: tuple[str, ...]
    """Ids of the matched rules, in the order of ``outputs``."""
    outputs: tuple[dict[str, Any], ...]
    """Each matched rule's outputs by output name."""
    result: Any
    input_ids: tuple[str | None, ...] = ()
    output_ids: tuple[str | None, ...] = ()
    orders: tuple[int, ...] = ()
    """Each matched rule's position in the table (1-based)."""


@dataclass(frozen=True)
class _Input:
    id: str | None
    label: str
    value: Logic
    kind: types.FeelType | None
    allowed: Test | None


@dataclass(frozen=True)
class _Output:
    id: str | None
    name: str | None
    kind: types.FeelType | None
    allowed: Test | None
    priorities: tuple[Any, ...]
    default: Logic | None


@dataclass(frozen=True)
class _Rule:
    order: int
    id: str
    tests: tuple[tuple[int, Test], ...]
    outputs: tuple[Logic, ...]


def compile_table(node: Node, c: Compiling) -> Logic:
    policy = (node.get("hitPolicy") or "UNIQUE").strip().upper()
    policy = POLICY_ALIASES.get(policy, policy)
    if policy not in SINGLE + MULTI:
        raise c.fail(
            node, f"hitPolicy {policy!r} is not a DMN hit policy ({', '.join(SINGLE + MULTI)})"
        )
    aggregation = (node.get("aggregation") or "").strip().upper() or None
    if aggregation is not None and (policy != "COLLECT" or aggregation not in AGGREGATIONS):
        raise c.fail(
            node,
            f"aggregation {aggregation!r} needs hitPolicy COLLECT and one of "
            + ", ".join(AGGREGATIONS),
        )
    inputs = [_input(i, c) for i in node.all("input")]
    outputs = [_output(o, c) for o in node.all("output")]
    if not outputs:
        raise c.fail(node, "a decision table needs at least one <output>")
    if len(outputs) > 1 and any(o.name is None for o in outputs):
        raise c.fail(node, "a table with several outputs must name each <output name=...>")
    if aggregation is not None and len(outputs) > 1:
        raise c.fail(node, "an aggregation needs a single output")
    rules = [_rule(n, r, len(inputs), len(outputs), c) for n, r in enumerate(node.all("rule"), 1)]
    table = _Table(node.get("id"), policy, aggregation, inputs, outputs, rules)
    return table.evaluate


def _input(node: Node, c: Compiling) -> _Input:
    expr_node = node.first("inputExpression")
    if expr_node is None:
        raise c.fail(node, "decision table input without an <inputExpression>")
    text = expr_node.child_text("text")
    expression = c.feel(text, expr_node)
    kind = c.type_of(expr_node.get("typeRef"), expr_node)
    values = node.first("inputValues")
    allowed = c.tests(values.child_text("text"), values).test if values is not None else None
    label = node.get("label") or text or ""
    return _Input(node.get("id"), label, expression.run_in, kind, allowed)


def _output(node: Node, c: Compiling) -> _Output:
    kind = c.type_of(node.get("typeRef"), node)
    values = node.first("outputValues")
    allowed: Test | None = None
    priorities: tuple[Any, ...] = ()
    if values is not None:
        text = values.child_text("text") or ""
        allowed = c.tests(text, values).test
        try:
            listed = c.feel(f"[{text}]", values).run_in(Env({}, None, Run()))
            priorities = tuple(listed) if isinstance(listed, list) else ()
        except Exception:  # a non-literal output value list has no priority order
            priorities = ()
    default_node = node.first("defaultOutputEntry")
    default = c.feel(default_node.child_text("text"), default_node).run_in if default_node else None
    return _Output(node.get("id"), node.get("name"), kind, allowed, priorities, default)


def _rule(order: int, node: Node, n_inputs: int, n_outputs: int, c: Compiling) -> _Rule:
    entries = node.all("inputEntry")
    results = node.all("outputEntry")
    if len(entries) != n_inputs or len(results) != n_outputs:
        raise c.fail(
            node,
            f"rule has {len(entries)} input and {len(results)} output entries; the table has "
            f"{n_inputs} inputs and {n_outputs} outputs",
        )
    tests = []
    for i, entry in enumerate(entries):
        text = (entry.child_text("text") or "").strip()
        if text in ("", "-"):
            continue
        tests.append((i, c.tests(text, entry).test))
    outputs = tuple(c.feel(r.child_text("text"), r).run_in for r in results)
    return _Rule(order, node.get("id") or "", tuple(tests), outputs)


class _Table:
    def __init__(
        self,
        table_id: str | None,
        policy: str,
        aggregation: str | None,
        inputs: list[_Input],
        outputs: list[_Output],
        rules: list[_Rule],
    ) -> None:
        self.id = table_id
        self.policy = policy
        self.aggregation = aggregation
        self.inputs = inputs
        self.outputs = outputs
        self.rules = rules
        self.first_only = policy == "FIRST"

    def evaluate(self, env: Env) -> Any:
        values = []
        for spec in self.inputs:
            value = conform(spec.value(env), spec.kind)
            if (
                spec.allowed is not None
                and value is not None
                and spec.allowed(env, value) is not True
            ):
                return None
            values.append(value)
        matched: list[_Rule] = []
        for rule in self.rules:
            for index, test in rule.tests:
                if test(env, values[index]) is not True:
                    break
            else:
                matched.append(rule)
                if self.first_only:
                    break
        rows = []
        for rule in matched:
            row = self._row(rule, env)
            if row is _INVALID:
                return None
            rows.append(row)
        result = self._combine(rows, env)
        trace = env.run.trace
        if trace is not None:
            trace.append(
                TableHit(
                    self.id,
                    None,
                    tuple((s.label, v) for s, v in zip(self.inputs, values, strict=True)),
                    tuple(r.id for r in matched),
                    tuple(rows),
                    result,
                    tuple(s.id for s in self.inputs),
                    tuple(o.id for o in self.outputs),
                    tuple(r.order for r in matched),
                )
            )
        return result

    def _row(self, rule: _Rule, env: Env) -> Any:
        row: dict[str, Any] = {}
        for i, (spec, logic) in enumerate(zip(self.outputs, rule.outputs, strict=True)):
            value = conform(logic(env), spec.kind)
            if (
                spec.allowed is not None
                and value is not None
                and spec.allowed(env, value) is not True
            ):
                return _INVALID
            row[spec.name or str(i)] = value
        return row

    def _value(self, row: dict[str, Any]) -> Any:
        if len(self.outputs) == 1:
            return next(iter(row.values()))
        return row

    def _combine(self, rows: list[dict[str, Any]], env: Env) -> Any:
        policy = self.policy
        if not rows:
            return self._default(env)
        if policy == "UNIQUE":
            return self._value(rows[0]) if len(rows) == 1 else None
        if policy == "FIRST":
            return self._value(rows[0])
        if policy == "ANY":
            first = rows[0]
            if any(equal(first, row) is not True for row in rows[1:]):
                return None
            return self._value(first)
        if policy == "PRIORITY":
            return self._value(sorted(rows, key=self._priority_key)[0])
        if policy == "OUTPUT ORDER":
            return [self._value(r) for r in sorted(rows, key=self._priority_key)]
        values = [self._value(r) for r in rows]
        if self.aggregation is None:
            return values
        return _aggregate(self.aggregation, values)

    def _priority_key(self, row: dict[str, Any]) -> tuple[int, ...]:
        key = []
        for i, spec in enumerate(self.outputs):
            value = row[spec.name or str(i)]
            position = len(spec.priorities)
            for n, listed in enumerate(spec.priorities):
                if equal(value, listed) is True:
                    position = n
                    break
            key.append(position)
        return tuple(key)

    def _default(self, env: Env) -> Any:
        """No rule matched: the default output entries, when the table has any (for a
        multi-hit table, its one default row, aggregated or as a list of one)."""
        if all(o.default is None for o in self.outputs):
            if self.policy in MULTI:
                if self.aggregation == "COUNT":
                    return Decimal(0)
                return None if self.aggregation else []
            return None
        row = {
            (o.name or str(i)): conform(o.default(env), o.kind) if o.default else None
            for i, o in enumerate(self.outputs)
        }
        if self.policy in MULTI and self.aggregation is None:
            return [self._value(row)]
        return self._value(row)


_INVALID: Any = object()


def _aggregate(how: str, values: list[Any]) -> Any:
    if how == "COUNT":
        return Decimal(len(values))
    present = [v for v in values if v is not None]
    if not present:
        return None
    if how == "SUM":
        if not all(isinstance(v, Decimal) for v in present):
            return None
        return functools.reduce(DECIMAL.add, present, Decimal(0))
    best = present[0]
    for value in present[1:]:
        order = compare(value, best)
        if order is None:
            return None
        if (how == "MIN" and order < 0) or (how == "MAX" and order > 0):
            best = value
    return best
