"""What compiling a DMN model's expressions needs, shared by every boxed expression."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bpm.dmn.itemdefs import ItemDefinitions
from bpm.dmn.xml import Node, problem
from bpm.errors import DeploymentError, ExpressionError
from bpm.feel import Expression, UnaryTests, compile_expression, compile_unary_tests, types
from bpm.feel.runtime import Env

Logic = Callable[[Env], Any]
"""A compiled boxed expression: its value in a scope."""


@dataclass(frozen=True)
class Compiling:
    """What compiling needs: the names in scope (for FEEL's lexer) and the model's types."""

    names: tuple[str, ...]
    types: ItemDefinitions
    resource: str | None

    def fail(self, node: Node, message: str) -> DeploymentError:
        return DeploymentError(problem(node, message), self.resource)

    def feel(self, text: str | None, node: Node) -> Expression:
        if text is None or not text.strip():
            raise self.fail(node, f"{node.label()} has an empty FEEL expression")
        try:
            return compile_expression(text, self.names, self.types.resolve)
        except ExpressionError as exc:
            raise self.fail(node, f"{node.label()}: {exc}") from None

    def tests(self, text: str | None, node: Node) -> UnaryTests:
        try:
            return compile_unary_tests((text or "").strip() or "-", self.names, self.types.resolve)
        except ExpressionError as exc:
            raise self.fail(node, f"{node.label()}: {exc}") from None

    def type_of(self, ref: str | None, node: Node) -> types.FeelType | None:
        return self.types.require(ref, node) if ref else None
