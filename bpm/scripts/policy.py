"""What a Python script may do: compiled with RestrictedPython, checked once at deploy.

RestrictedPython refuses at compile time every name and attribute that starts with ``_``
(so ``().__class__.__bases__``, ``__import__``, ``__builtins__``), the frame and generator
attributes (``gi_frame``, ``f_back``, ``tb_frame``...), ``exec``/``eval``, and rewrites every
attribute read, item read, iteration and augmented assignment into a call of a guard given
here. The guards refuse at run time what no compiler can see: ``getattr(x, name)`` with a
computed name, ``str.format``/``format_map`` (``'{0.__class__}'.format(x)``), imports beyond
:data:`ALLOWED_MODULES`. Modules are handed in as namespaces of their public names only
(``re.functools``, ``json.decoder`` are not there). What no guard can bound (time, memory)
is bounded by the process a script runs in (:mod:`bpm.scripts.sandbox`).
"""

from __future__ import annotations

import ast
import datetime
import decimal
import functools
import json
import math
import operator
import re
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from RestrictedPython.compile import compile_restricted
from RestrictedPython.Guards import (
    full_write_guard,
    guarded_iter_unpack_sequence,
    guarded_unpack_sequence,
    safe_builtins,
)
from RestrictedPython.PrintCollector import PrintCollector
from RestrictedPython.transformer import INSPECT_ATTRIBUTES

from bpm.errors import BpmError

__all__ = [
    "ALLOWED_MODULES",
    "MAX_SCRIPT_CHARS",
    "RESULT_NAME",
    "CompiledScript",
    "ScriptError",
    "compile_python",
    "script_globals",
]

ALLOWED_MODULES: tuple[str, ...] = ("math", "datetime", "decimal", "re", "json")
"""The only modules a script may import: pure, with no access to files, processes or the
network."""

MAX_SCRIPT_CHARS = 64 * 1024
"""A longer script is refused at deploy (the compiler's own time and memory are bounded too)."""

RESULT_NAME = "bpm_script_result_"
"""Where the value of a script's last expression goes (``camunda:resultVariable``)."""


class ScriptError(BpmError):
    """A Python script refused at deploy, or stopped or failed when it ran."""


def _namespace(module: types.ModuleType) -> types.SimpleNamespace:
    names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
    ns = types.SimpleNamespace(**{n: getattr(module, n) for n in names if not n.startswith("_")})
    return ns


# Built when this module is imported (so in the parent, never first in a forked child, which
# must not take the import lock another thread of its parent may have held).
_MODULES: dict[str, types.SimpleNamespace] = {
    "math": _namespace(math),
    "datetime": _namespace(datetime),
    "decimal": _namespace(decimal),
    "re": _namespace(re),
    "json": _namespace(json),
}


@dataclass(frozen=True)
class CompiledScript:
    """A script compiled once: ``mode`` is ``exec`` (a script task or listener) or ``eval``
    (a condition). ``names`` are the names it assigns at its top level."""

    source: str
    mode: str
    code: types.CodeType
    has_result: bool


def _top_level(tree: ast.Module) -> tuple[ast.Module, bool]:
    """The last statement, if an expression, becomes ``RESULT_NAME = <it>``: its value is the
    script's result, as a Camunda script's last expression is."""
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body[-1]
        target = ast.Name(id=RESULT_NAME, ctx=ast.Store())
        tree.body[-1] = ast.copy_location(ast.Assign(targets=[target], value=last.value), last)
        ast.fix_missing_locations(tree)
        return tree, True
    return tree, False


def _imports(tree: ast.AST) -> list[str]:
    problems = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = ["." * node.level + (node.module or "")]
        for name in names:
            if name not in ALLOWED_MODULES:
                problems.append(
                    f"line {getattr(node, 'lineno', '?')}: import of '{name}' is not "
                    f"allowed: a script may import only {', '.join(ALLOWED_MODULES)}"
                )
    return problems


@functools.lru_cache(maxsize=1024)
def compile_python(source: str, mode: str = "exec") -> CompiledScript:
    """Compile ``source`` (a script, or an expression with ``mode="eval"``), or raise
    :class:`ScriptError` listing every refused construct with its line. Cached: a worker
    compiles each script once."""
    if len(source) > MAX_SCRIPT_CHARS:
        raise ScriptError(f"the script has {len(source)} characters: at most {MAX_SCRIPT_CHARS}")
    text = source.strip() if mode == "eval" else source
    tree: ast.Module | ast.Expression
    try:
        tree = (
            ast.parse(text, "<script>", "eval") if mode == "eval" else ast.parse(text, "<script>")
        )
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        line = getattr(exc, "lineno", None)
        where = f"line {line}: " if line else ""
        raise ScriptError(f"{where}{getattr(exc, 'msg', None) or exc}") from None
    problems = _imports(tree)
    has_result = False
    if isinstance(tree, ast.Module):
        tree, has_result = _top_level(tree)
    try:
        code = compile_restricted(tree, "<script>", "eval" if mode == "eval" else "exec")
    except SyntaxError as exc:
        errors = exc.args[0] if exc.args and isinstance(exc.args[0], list | tuple) else [exc]
        problems.extend(str(e).rstrip(".") for e in errors)
    except (RecursionError, MemoryError, ValueError) as exc:
        problems.append(f"the script cannot be compiled: {type(exc).__name__}")
    if problems:
        raise ScriptError("; ".join(problems))
    return CompiledScript(source, mode, code, has_result)


# -- the guards ---------------------------------------------------------------------------


def _refused(obj: Any, name: str) -> bool:
    if name.startswith("_") or name in INSPECT_ATTRIBUTES:
        return True
    if name in ("format", "format_map", "mro"):
        return isinstance(obj, str | type)
    return False


def guarded_getattr(obj: Any, name: str, *default: Any) -> Any:
    """``obj.name`` and ``getattr(obj, name)`` in a script."""
    if type(name) is not str:
        raise TypeError("an attribute name must be a str")
    if _refused(obj, name):
        raise AttributeError(f"'{name}' may not be read in a script")
    return getattr(obj, name, *default)


def guarded_hasattr(obj: Any, name: str) -> bool:
    return not _refused(obj, name) and hasattr(obj, name)


def _getitem(obj: Any, key: Any) -> Any:
    return obj[key]


def _import(
    name: str,
    globals: Mapping[str, Any] | None = None,
    locals: Mapping[str, Any] | None = None,
    fromlist: Iterable[str] = (),
    level: int = 0,
) -> types.SimpleNamespace:
    if level != 0 or name not in _MODULES:
        raise ImportError(f"a script may import only {', '.join(ALLOWED_MODULES)}")
    return _MODULES[name]


_INPLACE: dict[str, Callable[[Any, Any], Any]] = {
    "+=": operator.iadd,
    "-=": operator.isub,
    "*=": operator.imul,
    "/=": operator.itruediv,
    "//=": operator.ifloordiv,
    "%=": operator.imod,
    "**=": operator.ipow,
    "<<=": operator.ilshift,
    ">>=": operator.irshift,
    "&=": operator.iand,
    "|=": operator.ior,
    "^=": operator.ixor,
    "@=": operator.imatmul,
}


def _inplacevar(op: str, x: Any, y: Any) -> Any:
    return _INPLACE[op](x, y)


def _apply(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return fn(*args, **kwargs)


_BUILTINS: dict[str, Any] = {
    k: v
    for k, v in safe_builtins.items()
    # no classes (a metaclass is one more surface), no attribute writes on objects
    if k not in ("__build_class__", "setattr", "delattr", "_getattr_")
}
_BUILTINS.update(
    {
        "__import__": _import,
        "getattr": guarded_getattr,
        "hasattr": guarded_hasattr,
        "list": list,
        "dict": dict,
        "set": set,
        "frozenset": frozenset,
        "tuple": tuple,
        "sorted": sorted,
        "reversed": reversed,
        "min": min,
        "max": max,
        "sum": sum,
        "any": any,
        "all": all,
        "enumerate": enumerate,
        "zip": zip,
        "map": map,
        "filter": filter,
        "iter": iter,
        "next": next,
    }
)

GUARD_NAMES = frozenset(
    {
        "__builtins__",
        "__name__",
        "_getattr_",
        "_getitem_",
        "_getiter_",
        "_write_",
        "_iter_unpack_sequence_",
        "_unpack_sequence_",
        "_inplacevar_",
        "_apply_",
        "_print_",
    }
)


def script_globals(variables: Mapping[str, Any]) -> dict[str, Any]:
    """The globals a script runs with: its variables as names, and the guards."""
    out: dict[str, Any] = dict(variables)
    out.update(
        {
            "__builtins__": _BUILTINS,
            "__name__": "script",
            "_getattr_": guarded_getattr,
            "_getitem_": _getitem,
            "_getiter_": iter,
            "_write_": full_write_guard,
            "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
            "_unpack_sequence_": guarded_unpack_sequence,
            "_inplacevar_": _inplacevar,
            "_apply_": _apply,
            "_print_": PrintCollector,
        }
    )
    return out


def is_value(value: Any) -> bool:
    """Whether a name a script bound is a variable (not a module, function or class)."""
    return not isinstance(
        value,
        types.SimpleNamespace
        | types.FunctionType
        | types.BuiltinFunctionType
        | types.MethodType
        | type
        | types.GeneratorType,
    )
