"""Camunda 8's FEEL extension functions (FEEL-Scala), for Zeebe's ``=`` expressions only.

Camunda 8 models call functions DMN's library does not have: ``is defined(x)``,
``get or else(x, default)``, ``is empty(list)``, ``assert(value, condition)``... They are
bound in the outermost scope of a Zeebe expression (:mod:`bpm.expressions_feel`), so DMN
decisions and the TCK keep DMN's library exactly. A variable of the same name wins.

========================  ==========================================================
``is defined(value)``     false for null (a variable that is not set), else true
``get or else(v, d)``     ``v``, or ``d`` when ``v`` is null
``is empty(list)``        whether the list has no item
``is blank(string)``      whether the string is empty or only whitespace
``trim(string)``          the string without leading and trailing whitespace
``assert(v, condition)``  ``v`` when ``condition`` is true, else an error (an incident;
                          ``assert(v, condition, cause)`` names the cause)
``partition(list, n)``    the list cut into sub-lists of ``n`` items
``duplicate values(l)``   the items found more than once, in order of first repeat
``last day of month(d)``  the last date of the month of a date or date and time
``uuid()``                a random UUID as text
``to base64(string)``     the UTF-8 text as Base64; ``from base64(string)`` the reverse
========================  ==========================================================
"""

from __future__ import annotations

import base64
import binascii
import calendar
import datetime as dt
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from bpm.errors import ExpressionError
from bpm.feel.values import Function

__all__ = ["EXTENSIONS", "NAMES"]

EXTENSIONS: dict[str, Function] = {}


def _extension(name: str, *params: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(impl: Callable[..., Any]) -> Callable[..., Any]:
        def call(run: Any, args: list[Any]) -> Any:
            if len(args) < len(params) - sum(p.endswith("?") for p in params):
                return None
            if len(args) > len(params):
                return None
            try:
                return impl(*args)
            except (TypeError, ValueError, ArithmeticError, binascii.Error):
                return None

        EXTENSIONS[name] = Function(name, tuple(p.rstrip("?") for p in params), call)
        return impl

    return register


@_extension("is defined", "value")
def _is_defined(value: Any) -> bool:
    return value is not None


@_extension("get or else", "value", "default")
def _get_or_else(value: Any, default: Any) -> Any:
    return default if value is None else value


@_extension("is empty", "list")
def _is_empty(items: Any) -> bool | None:
    return len(items) == 0 if isinstance(items, list) else None


@_extension("is blank", "string")
def _is_blank(text: Any) -> bool | None:
    return not text.strip() if isinstance(text, str) else None


@_extension("trim", "string")
def _trim(text: Any) -> str | None:
    return text.strip() if isinstance(text, str) else None


@_extension("assert", "value", "condition", "cause?")
def _assert(value: Any, condition: Any, cause: Any = None) -> Any:
    if condition is True:
        return value
    reason = cause if isinstance(cause, str) else "the condition is not true"
    raise ExpressionError(f"assert failed: {reason}")


@_extension("partition", "list", "size")
def _partition(items: Any, size: Any) -> list[Any] | None:
    if not isinstance(items, list) or not isinstance(size, Decimal):
        return None
    step = int(size)
    if step <= 0 or step != size:
        return None
    return [items[i : i + step] for i in range(0, len(items), step)]


@_extension("duplicate values", "list")
def _duplicates(items: Any) -> list[Any] | None:
    if not isinstance(items, list):
        return None
    seen: list[Any] = []
    out: list[Any] = []
    for item in items:
        if item in seen and item not in out:
            out.append(item)
        seen.append(item)
    return out


@_extension("last day of month", "date")
def _last_day(value: Any) -> dt.date | None:
    if not isinstance(value, dt.date):
        return None
    day = calendar.monthrange(value.year, value.month)[1]
    return dt.date(value.year, value.month, day)


@_extension("uuid")
def _uuid() -> str:
    return str(uuid.uuid4())


@_extension("to base64", "value")
def _to_base64(text: Any) -> str | None:
    return base64.b64encode(text.encode()).decode() if isinstance(text, str) else None


@_extension("from base64", "value")
def _from_base64(text: Any) -> str | None:
    if not isinstance(text, str):
        return None
    return base64.b64decode(text, validate=True).decode()


NAMES = tuple(name for name in EXTENSIONS if " " in name)
"""The extension names the lexer must know to cut them (they hold spaces)."""
