"""Expressions of a process: CEL, or FEEL after ``=``; compiled once at deploy and
evaluated without Python ``eval``.

Camunda 7 files write conditions as ``${amount > 100}``; the wrapper is removed here so the
same text works from BPMN and from the builder. Camunda 8 (Zeebe) files write FEEL after
``=`` (``= amount > 100 and status = "open"``): such a text is FEEL, run natively by
:mod:`bpm.feel` (variables in, its value out as JSON: numbers ``int``/``float``, dates
and durations ISO 8601 text), so a Camunda 8 model needs no translation.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import cel

from bpm.dialects import juel_to_cel, python_spellings, type_name_variables
from bpm.errors import ExpressionError
from bpm.expressions_feel import compile_feel_condition, compile_feel_expression
from bpm.scripts.conditions import PythonCondition, compile_python_condition, is_python_condition

if TYPE_CHECKING:
    from bpm.expressions_feel import FeelCondition, FeelExpression

# Functions and macros of the CEL standard library. Anything else (``__import__``,
# ``system``, ...) is refused at deploy: CEL has no way to reach Python, but an unknown
# function would only fail later, at run time, in the middle of an instance.
_ALLOWED_FUNCTIONS = frozenset(
    {
        "_&&_", "_||_", "!_", "-_", "_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_",
        "_+_", "_-_", "_*_", "_/_", "_%_", "_?_:_", "_[_]", "@in", "@not_strictly_false",
        "size", "contains", "startsWith", "endsWith", "matches", "has", "all", "exists",
        "exists_one", "map", "filter", "int", "uint", "double", "string", "bytes", "bool",
        "type", "dyn", "duration", "timestamp", "getFullYear", "getMonth", "getDate",
        "getDayOfMonth", "getDayOfWeek", "getDayOfYear", "getHours", "getMinutes",
        "getSeconds", "getMilliseconds", "lowerAscii", "upperAscii", "trim", "max", "min",
    }
)  # fmt: skip

_WRAPPED = re.compile(r"^\s*[$#]\{(?P<body>.*)\}\s*$", re.DOTALL)


def _unset_type_names(names: frozenset[str], variables: Mapping[str, Any]) -> list[str]:
    """The variables named like a CEL type (``list``, ``map``, ``int``...) that the text
    reads and ``variables`` does not set: CEL would read each as its type (``list == null``
    false) instead of failing as unset."""
    return sorted(name for name in names if name not in variables)


def _undefined(kind: str, source: str, names: list[str]) -> ExpressionError:
    return ExpressionError(
        f"{kind} `{source}` failed: Undefined variable or function: '{names[0]}' (no variable "
        f"'{names[0]}' is set; CEL would read the name as its type)"
    )


def unwrap(source: str) -> str:
    """``${amount > 100}`` -> ``amount > 100``; plain CEL is returned stripped."""
    match = _WRAPPED.match(source)
    return (match.group("body") if match else source).strip()


@dataclass(frozen=True)
class Condition:
    """A compiled CEL boolean expression over instance variables."""

    source: str
    program: Any
    type_variables: frozenset[str] = frozenset()
    """Variables the text reads whose names CEL also knows as types."""

    @property
    def variables(self) -> list[str]:
        return list(self.program.variables())

    def evaluate(self, variables: Mapping[str, Any]) -> bool:
        """The condition's value; an error names the expression and the cause."""
        unset = _unset_type_names(self.type_variables, variables)
        if unset:
            raise _undefined("condition", self.source, unset)
        try:
            result = self.program.execute(dict(variables))
        except Exception as exc:  # the CEL runtime raises several unrelated types
            raise ExpressionError(f"condition `{self.source}` failed: {exc}") from exc
        if not isinstance(result, bool):
            raise ExpressionError(f"condition `{self.source}` gave {result!r}, not true or false")
        return result


@dataclass(frozen=True)
class Expression:
    """A compiled CEL expression of any type (a CEL script task's value)."""

    source: str
    program: Any
    type_variables: frozenset[str] = frozenset()
    """Variables the text reads whose names CEL also knows as types."""

    def evaluate(self, variables: Mapping[str, Any]) -> Any:
        """The expression's value; an error names the expression and the cause."""
        unset = _unset_type_names(self.type_variables, variables)
        if unset:
            raise _undefined("expression", self.source, unset)
        try:
            return self.program.execute(dict(variables))
        except Exception as exc:  # the CEL runtime raises several unrelated types
            raise ExpressionError(f"expression `{self.source}` failed: {exc}") from exc


def _compile(text: str, what: str) -> Any:
    if not text:
        raise ExpressionError(f"empty {what}")
    spelling = python_spellings(text)
    if spelling is not None:
        raise ExpressionError(spelling)
    try:
        program = cel.compile(text)
    except (ValueError, RuntimeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ExpressionError(f"{what} `{text}` does not compile: {first}") from exc
    unknown = sorted(set(program.functions()) - _ALLOWED_FUNCTIONS)
    if unknown:
        raise ExpressionError(
            f"{what} `{text}` calls {', '.join(unknown)}: only standard CEL functions "
            "are allowed (no Python)"
        )
    return program


def is_feel(source: str) -> bool:
    """Whether ``source`` is FEEL: Zeebe's ``=`` before the expression (not CEL's ``==``)."""
    text = source.strip()
    return text.startswith("=") and not text.startswith("==")


@lru_cache(maxsize=4096)
def compile_condition(source: str) -> Condition | FeelCondition | PythonCondition:
    """Compile ``source``: ``=FEEL``, a Python condition (``python:``, run in the script
    sandbox: :mod:`bpm.scripts.conditions`), or CEL (optionally ``${...}``), refusing
    anything outside standard CEL and Python spellings (``True``, ``and``...) with the CEL
    to write instead."""
    if is_python_condition(source):
        return compile_python_condition(source)
    if is_feel(source):
        return compile_feel_condition(source)
    text = unwrap(source)
    return Condition(text, _compile(text, "condition"), type_name_variables(text))


@lru_cache(maxsize=1024)
def compile_expression(source: str) -> Expression | FeelExpression:
    """Compile an expression of any type: ``=FEEL``, or CEL with the checks of conditions."""
    if is_feel(source):
        return compile_feel_expression(source)
    text = source.strip()
    return Expression(text, _compile(text, "expression"), type_name_variables(text))


def native_feel(source: str) -> str:
    """Zeebe's FEEL (``=`` optional) as the ``=FEEL`` text the engine stores and runs;
    :class:`ExpressionError` when it does not compile."""
    body = source.strip()
    if body.startswith("="):
        body = body[1:].strip()
    text = "=" + body
    compile_expression(text)
    return text


def to_cel(source: str) -> str:
    """The text the engine stores for a condition written in CEL or ``${JUEL}`` (CEL), or
    ``=FEEL`` (kept as FEEL, see :func:`native_feel`).

    Raises :class:`ExpressionError` when the text uses something without an exact CEL
    translation, or a Python spelling (the message names the CEL to write instead), or is
    FEEL that does not compile.
    """
    text = source.strip()
    if text.startswith("=") and not text.startswith("=="):
        return native_feel(text)
    return juel_to_cel(text)
