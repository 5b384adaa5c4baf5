"""The registry of FEEL's builtin functions, and the helpers every builtin module shares.

A builtin is a Python function registered with its FEEL name and parameter names (one list
per signature, ``?`` marking an optional one) so named calls work:
``substring(string: "abc", start position: 2)``. Arguments a builtin does not define give
null, as DMN says an invalid call does.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal, DecimalException
from typing import Any

import regex

from bpm.feel.runtime import FeelLimitError, Run
from bpm.feel.values import Function

BUILTINS: dict[str, Function] = {}

# What a builtin raises on arguments it does not define; turned into null.
_INVALID = (regex.error, TypeError, ValueError, ArithmeticError, DecimalException,
            AttributeError, KeyError, IndexError, OverflowError, re.error)  # fmt: skip


def _signature(text: str) -> list[tuple[str, bool]]:
    params = [p.strip() for p in text.split(",") if p.strip()]
    return [(p.rstrip("?"), p.endswith("?")) for p in params]


def builtin(
    name: str, *signatures: str, needs_run: bool = False, variadic: bool = False
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``impl`` as the FEEL function ``name`` with these parameter lists."""
    parsed = [_signature(s) for s in signatures] or [[]]

    def register(impl: Callable[..., Any]) -> Callable[..., Any]:
        def call(run: Run, args: list[Any]) -> Any:
            try:
                return impl(run, *args) if needs_run else impl(*args)
            except FeelLimitError:
                raise
            except _INVALID:
                return None

        def named(args: dict[str, Any]) -> list[Any] | None:
            for params in parsed:
                names = [p for p, _ in params]
                if not all(key in names for key in args):
                    continue
                # A parameter left out of a call by name is null.
                positional = [args.get(p) for p in names]
                while len(positional) > len(args) and params[len(positional) - 1][1]:
                    if names[len(positional) - 1] in args:
                        break
                    positional.pop()
                return positional
            return None

        BUILTINS[name] = Function(
            name, tuple(p for p, _ in parsed[0]), call, variadic=variadic, named=named
        )
        return impl

    return register


def items_of(args: tuple[Any, ...]) -> list[Any] | None:
    """The list a list function works on: one list argument, or the arguments themselves."""
    if len(args) == 1 and isinstance(args[0], list):
        return args[0]
    if not args:
        return None
    return list(args)


def whole(value: Any) -> int | None:
    """A position, length or scale: a number's integer part (``2.5`` -> 2); else None."""
    if isinstance(value, Decimal) and value.is_finite():
        return int(value)
    return None


def integer(value: Any) -> int | None:
    """A FEEL number that is whole, as an int; None otherwise."""
    if isinstance(value, Decimal) and value.is_finite() and value == value.to_integral_value():
        return int(value)
    return None


def number(value: Any) -> Decimal:
    """A number argument (or a singleton list of one), else a TypeError (null)."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]  # DMN 1.5 §10.3.2.9.4: from singleton list
    if isinstance(value, Decimal):
        return value
    raise TypeError("not a number")


def text(value: Any) -> str:
    """A string argument (or a singleton list of one), else a TypeError (null)."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, str):
        return value
    raise TypeError("not a string")
