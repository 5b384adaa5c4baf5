"""Zeebe's ``=`` expressions, run natively as FEEL (:mod:`bpm.feel`).

A text that starts with ``=`` (not ``==``) is FEEL, as Camunda 8 writes every expression:
conditions, input and output mappings, multi-instance collections and completion
conditions, timer expressions, correlation keys, scripts. It is compiled once (a syntax
error refuses the deploy, naming the element) and evaluated over the variables the token
sees: JSON values in (numbers become FEEL numbers), the value out as JSON
(:func:`bpm.feel.jsonvalues.to_json`: whole numbers ``int``, others ``float``, dates,
times and durations their ISO 8601 text, as Zeebe stores them). Every evaluation has
FEEL's budget (:class:`bpm.feel.Limits`); overspending is an :class:`ExpressionError`.
Camunda 8's extension functions (``is defined``, ``get or else``, ``assert``...:
:mod:`bpm.feel.camunda`) are there too.

A condition must give true or false: null (a missing variable compared, ``x > 1`` with
``x`` unset) or any other value is an error naming the expression, as in Zeebe (an
incident), never silently false.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bpm import feel
from bpm.errors import ExpressionError
from bpm.feel import camunda
from bpm.feel.jsonvalues import to_json
from bpm.feel.runtime import DEFAULT_LIMITS, Env, Run
from bpm.feel.values import to_feel

__all__ = ["FeelCondition", "FeelExpression", "compile_feel_condition", "compile_feel_expression"]


def _body(source: str) -> str:
    return source.strip()[1:].strip()


def _compile(source: str, what: str) -> feel.Expression:
    text = _body(source)
    if not text:
        raise ExpressionError(f"empty {what}: write a FEEL expression after '='")
    try:
        return feel.compile_expression(text, names=camunda.NAMES)
    except ExpressionError as exc:
        raise ExpressionError(f"FEEL {what} `={text}` does not compile: {exc}") from None


CLOCK: ContextVar[datetime | None] = ContextVar("bpm_feel_clock", default=None)
"""What ``now()`` and ``today()`` read: the engine operation's clock (set by the unit of
work, so an operation given ``now=`` evaluates with it); None: the system clock."""


def _run(expr: feel.Expression, variables: Mapping[str, Any], what: str) -> Any:
    run = Run(DEFAULT_LIMITS, expr.source, CLOCK.get())
    outer = Env(camunda.EXTENSIONS, None, run)  # Camunda 8's functions; a variable wins
    try:
        return expr.run_in(outer.child({k: to_feel(v) for k, v in variables.items()}))
    except ExpressionError as exc:  # FeelLimitError: the budget is spent
        raise ExpressionError(f"FEEL {what} `={expr.source}` failed: {exc}") from None


@dataclass(frozen=True)
class FeelExpression:
    """A compiled ``=FEEL`` expression of any type; ``source`` is the FEEL text."""

    source: str
    expression: feel.Expression

    def evaluate(self, variables: Mapping[str, Any]) -> Any:
        """The value as JSON; an error names the expression and the cause."""
        return to_json(_run(self.expression, variables, "expression"))


@dataclass(frozen=True)
class FeelCondition:
    """A compiled ``=FEEL`` condition."""

    source: str
    expression: feel.Expression

    def evaluate(self, variables: Mapping[str, Any]) -> bool:
        """True or false; null or any other value is an error naming the expression."""
        value = _run(self.expression, variables, "condition")
        if not isinstance(value, bool):
            shown = "null" if value is None else repr(to_json(value))
            raise ExpressionError(
                f"FEEL condition `={self.source}` gave {shown}, not true or false "
                "(is every variable it reads set?)"
            )
        return value


def compile_feel_expression(source: str) -> FeelExpression:
    expr = _compile(source, "expression")
    return FeelExpression(expr.source, expr)


def compile_feel_condition(source: str) -> FeelCondition:
    expr = _compile(source, "condition")
    return FeelCondition(expr.source, expr)
