"""Conditions written in Python (``conditionExpression language="python"``), evaluated in the
script sandbox.

A condition is compiled once at deploy with the rules of script tasks (RestrictedPython, the
same guards, no imports: an expression cannot hold an ``import``) and evaluated in a forked
child of a sandbox process (:mod:`bpm.scripts.client`), bounded in CPU time and memory: never
in the interpreter of the process deciding the step. That process may be a worker, the timer
poller or the API process (a user task completed over REST leads to a gateway): each asks its
own sandbox process, so no Python of a model ever runs in the API's interpreter. The cost is a
round trip to the sandbox process (a fork there) per condition, in the step's transaction.

The model stores such a condition as :data:`PYTHON_CONDITION` followed by the text, so every
place that reads conditions (gateways, conditional flows, validation) goes through
:func:`bpm.expressions.compile_condition` unchanged.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from bpm.errors import ExpressionError
from bpm.scripts.client import run_in_sandbox
from bpm.scripts.policy import ScriptError, compile_python
from bpm.scripts.sandbox import Limits

__all__ = ["PYTHON_CONDITION", "PythonCondition", "compile_python_condition", "is_python_condition"]

PYTHON_CONDITION = "python:"
"""How a stored condition says it is Python (no CEL or FEEL text starts so)."""


def is_python_condition(source: str) -> bool:
    """Whether a stored condition is Python."""
    return source.startswith(PYTHON_CONDITION)


@dataclass(frozen=True)
class PythonCondition:
    """A Python expression compiled at deploy; :meth:`evaluate` runs it in the sandbox."""

    source: str
    names: tuple[str, ...]

    @property
    def variables(self) -> list[str]:
        """The names the expression reads (variables, or builtins such as ``len``)."""
        return list(self.names)

    def evaluate(self, variables: Mapping[str, Any]) -> bool:
        """The condition's value, computed in a sandboxed child; an error (a failure, an
        exhausted limit, a value that is not ``True`` or ``False``) names the condition."""
        try:
            outcome = run_in_sandbox(self.source, variables, Limits.from_env(), mode="eval")
        except ScriptError as exc:
            raise ExpressionError(f"condition `{self.source}` (Python) failed: {exc}") from None
        if not isinstance(outcome.result, bool):
            raise ExpressionError(
                f"condition `{self.source}` (Python) gave {outcome.result!r}, not True or False"
            )
        return outcome.result


@lru_cache(maxsize=1024)
def compile_python_condition(stored: str) -> PythonCondition:
    """Compile a stored Python condition (with or without its prefix), or raise
    :class:`ExpressionError` saying what the sandbox refuses, with the line."""
    text = stored[len(PYTHON_CONDITION) :] if is_python_condition(stored) else stored
    text = text.strip()
    if not text:
        raise ExpressionError("empty condition")
    try:
        compile_python(text, "eval")
    except ScriptError as exc:
        raise ExpressionError(f"condition `{text}` (Python) is refused: {exc}") from None
    tree = ast.parse(text, "<condition>", "eval")
    loads = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    ]
    loads.sort(key=lambda node: (node.lineno, node.col_offset))  # in the order written
    names = tuple(dict.fromkeys(node.id for node in loads))
    return PythonCondition(text, names)
