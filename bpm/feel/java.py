"""``function(...) external {java: {class, method signature}}``: DMN's Java externals.

No JVM here: the static ``java.lang.Math`` methods and the boxing ``valueOf`` conversions
that DMN models call are implemented on FEEL values; any other class or method gives a
function that returns null, as a missing external does in other engines.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from bpm.feel.values import DECIMAL, Function

_SIGNATURE = re.compile(r"^\s*([\w$]+)\s*\(([^)]*)\)\s*$")
_NUMERIC = {"double", "float", "int", "long", "short", "byte", "java.lang.Double",
            "java.lang.Float", "java.lang.Integer", "java.lang.Long"}  # fmt: skip
_INTEGRAL = {"int", "long", "short", "byte", "java.lang.Integer", "java.lang.Long"}


def _float(value: Any) -> float:
    if not isinstance(value, Decimal):
        raise TypeError("not a number")
    return float(value)


def _decimal(value: float) -> Decimal | None:
    if math.isnan(value) or math.isinf(value):
        return None
    return DECIMAL.create_decimal(repr(value))


_MATH_1: dict[str, Callable[[float], float]] = {
    "cos": math.cos, "sin": math.sin, "tan": math.tan, "acos": math.acos, "asin": math.asin,
    "atan": math.atan, "exp": math.exp, "log": math.log, "log10": math.log10,
    "sqrt": math.sqrt, "abs": abs, "floor": math.floor, "ceil": math.ceil,
}  # fmt: skip


def _method(cls: str, method: str, types: list[str]) -> Callable[[list[Any]], Any] | None:
    if cls == "java.lang.Math":
        if not all(t in _NUMERIC for t in types):
            return None
        integral = bool(types) and all(t in _INTEGRAL for t in types)
        if method in ("max", "min") and len(types) == 2:
            pick = max if method == "max" else min

            def extreme(args: list[Any]) -> Any:
                a, b = (args[0], args[1]) if integral else (_float(args[0]), _float(args[1]))
                if integral:
                    return pick(a, b) if all(isinstance(x, Decimal) for x in (a, b)) else None
                return _decimal(pick(a, b))

            return extreme
        if method in _MATH_1 and len(types) == 1:
            fn = _MATH_1[method]
            return lambda args: _decimal(float(fn(_float(args[0]))))
        return None
    if method == "valueOf" and len(types) == 1:
        if cls in ("java.lang.Short", "java.lang.Byte", "java.lang.Integer", "java.lang.Long"):
            if types[0] == "java.lang.String":
                return lambda args: Decimal(int(args[0])) if isinstance(args[0], str) else None
            return lambda args: Decimal(int(_float(args[0])))
        if cls in ("java.lang.Double", "java.lang.Float"):
            return lambda args: _decimal(
                _float(Decimal(args[0]) if isinstance(args[0], str) else args[0])
            )
        if cls == "java.lang.String" and types[0] == "char":
            return lambda args: args[0] if isinstance(args[0], str) and len(args[0]) == 1 else None
    return None


def external_function(spec: Any, names: tuple[str, ...]) -> Function | None:
    """The function a ``{java: {class: ..., method signature: ...}}`` context describes."""
    java = spec.get("java") if isinstance(spec, dict) else None
    if not isinstance(java, dict):
        return None
    cls, signature = java.get("class"), java.get("method signature")
    if not isinstance(cls, str) or not isinstance(signature, str):
        return None
    match = _SIGNATURE.match(signature)
    if not match:
        return None
    types = [t.strip() for t in match.group(2).split(",") if t.strip()]
    impl = _method(cls, match.group(1), types)

    def call(run: Any, args: list[Any]) -> Any:
        if impl is None or len(args) != len(types):
            return None
        try:
            return impl(args)
        except (TypeError, ValueError, ArithmeticError, OverflowError):
            return None

    return Function(match.group(1), names, call)
