"""FEEL, DMN's expression language (DMN 1.5 chapter 10): compiled once, evaluated safely.

::

    from bpm import feel

    expr = feel.compile_expression("sum(for x in items return x.price) * (1 + rate)")
    expr.evaluate({"items": [{"price": 10}], "rate": 0.2})   # Decimal('12.0')

    tests = feel.compile_unary_tests('< 10, [20..30], "gold"')
    tests.matches(25)                                        # True

Values map to Python as :mod:`bpm.feel.values` says (numbers are ``Decimal`` with 34
digits). An expression that does not parse raises :class:`ExpressionError` at compile time;
one that overspends its :class:`Limits` raises :class:`FeelLimitError`; anything FEEL
defines as an error (``"a" + 1``, ``1 / 0``) gives ``None``, FEEL's null.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any

from lark import Token, Tree

from bpm.errors import ExpressionError
from bpm.feel.compiler import Compiler, Node, Test, TypeResolver
from bpm.feel.grammar import parse
from bpm.feel.lexer import Names
from bpm.feel.runtime import DEFAULT_LIMITS, Env, FeelLimitError, Limits, Run
from bpm.feel.values import Function, Range, YearsMonths, to_feel

__all__ = [
    "Env",
    "Expression",
    "ExpressionError",
    "FeelLimitError",
    "Function",
    "Limits",
    "Range",
    "Run",
    "UnaryTests",
    "YearsMonths",
    "compile_expression",
    "compile_unary_tests",
    "evaluate",
]


@dataclass(frozen=True)
class Expression:
    """A compiled FEEL expression."""

    source: str
    node: Node = field(repr=False, compare=False)

    def evaluate(
        self,
        variables: Mapping[str, Any] | None = None,
        *,
        limits: Limits = DEFAULT_LIMITS,
        now: datetime | None = None,
    ) -> Any:
        """The value with these variables (Python values, converted: ``int`` -> ``Decimal``);
        ``now`` is what ``now()`` and ``today()`` read (default: the system clock)."""
        run = Run(limits, self.source, now)
        names = {k: to_feel(v) for k, v in (variables or {}).items()}
        return self.run_in(Env(names, None, run))

    def run_in(self, env: Env) -> Any:
        """The value in a scope of FEEL values (the DMN evaluator's entry point)."""
        try:
            return self.node(env)
        except RecursionError:
            raise env.run.too_deep() from None


@dataclass(frozen=True)
class UnaryTests:
    """Compiled unary tests: a decision table input entry such as ``< 10, [20..30]``."""

    source: str
    test: Test = field(repr=False, compare=False)

    def matches(
        self,
        value: Any,
        variables: Mapping[str, Any] | None = None,
        *,
        limits: Limits = DEFAULT_LIMITS,
    ) -> bool:
        """Whether ``value`` passes; a test that cannot decide (null) does not pass."""
        run = Run(limits, self.source)
        names = {k: to_feel(v) for k, v in (variables or {}).items()}
        return self.run_in(Env(names, None, run), to_feel(value)) is True

    def run_in(self, env: Env, value: Any) -> bool | None:
        try:
            return self.test(env, value)
        except RecursionError:
            raise env.run.too_deep() from None


@lru_cache(maxsize=64)
def _names(names: tuple[str, ...]) -> Names:
    return Names(names)


def _tree(text: str, names: tuple[str, ...], start: str) -> Tree[Token]:
    return parse(text, _names(names), start)


def compile_expression(
    text: str, names: Iterable[str] = (), types: TypeResolver | None = None
) -> Expression:
    """Compile ``text``. ``names`` are the multi-word or symbol-bearing names in scope
    (``Loan Amount``, ``Date-of-Birth``); ``types`` resolves item definition names."""
    tree = _tree(text, tuple(names), "expression")
    return Expression(text, Compiler(text, types).expr(tree))


def compile_unary_tests(
    text: str, names: Iterable[str] = (), types: TypeResolver | None = None
) -> UnaryTests:
    """Compile a unary tests text (``-``, ``not(...)``, ``< 5, [1..3]``, ``? > x``)."""
    tree = _tree(text, tuple(names), "unary_tests")
    return UnaryTests(text, Compiler(text, types).tests(tree))


@lru_cache(maxsize=1024)
def _cached(text: str) -> Expression:
    return compile_expression(text)


def evaluate(text: str, variables: Mapping[str, Any] | None = None) -> Any:
    """Compile (cached) and evaluate ``text`` in one call."""
    return _cached(text).evaluate(variables)
