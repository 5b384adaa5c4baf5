"""What compiling a DMN model's expressions needs, shared by every boxed expression."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bpm.dmn.itemdefs import ItemDefinitions
from bpm.dmn.xml import Node, problem
from bpm.errors import DeploymentError, ExpressionError, Problem
from bpm.feel import Expression, UnaryTests, compile_expression, compile_unary_tests
from bpm.feel.runtime import Env
from bpm.feel.types import FeelType

Logic = Callable[[Env], Any]
"""A compiled boxed expression: its value in a scope."""


@dataclass(frozen=True)
class Compiling:
    """What compiling needs: the names in scope (for FEEL's lexer) and the model's types."""

    names: tuple[str, ...]
    types: ItemDefinitions
    resource: str | None
    deferred: list[Problem] | None = None
    """When a list, a FEEL text that does not compile is recorded here and evaluates to
    null instead of refusing the model (``load(..., strict=False)``)."""

    def fail(self, node: Node, message: str) -> DeploymentError:
        return DeploymentError(problem(node, message), self.resource)

    def _refuse(self, node: Node, exc: ExpressionError) -> None:
        if self.deferred is None:
            raise self.fail(node, f"{node.label()}: {exc}") from None
        self.deferred.append(problem(node, f"{node.label()}: {exc}"))

    def feel(self, text: str | None, node: Node) -> Expression:
        """A FEEL expression; an empty text is null (an empty output entry, for one)."""
        try:
            return compile_expression(
                (text or "").strip() or "null", self.names, self.types.resolve
            )
        except ExpressionError as exc:
            self._refuse(node, exc)
            return _NULL_EXPRESSION

    def tests(self, text: str | None, node: Node) -> UnaryTests:
        try:
            return compile_unary_tests((text or "").strip() or "-", self.names, self.types.resolve)
        except ExpressionError as exc:
            self._refuse(node, exc)
            return _FAILING_TESTS

    def type_of(self, ref: str | None, node: Node) -> FeelType | None:
        return self.types.require(ref, node) if ref else None


_NULL_EXPRESSION = Expression("null", lambda env: None)
_FAILING_TESTS = UnaryTests("-", lambda env, value: None)
