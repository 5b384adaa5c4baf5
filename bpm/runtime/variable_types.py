"""Variables with the Camunda type they were written with.

Internally every variable is plain JSON, which tells ``String``, ``Integer``, ``Double``,
``Boolean``, ``Null`` and objects apart. Some Camunda types it cannot tell: a ``Date`` is a
string, a small ``Long`` an integer, a ``Json`` value an object. The REST edge wraps such
values in :class:`Typed`; the engine stores the plain value and remembers the type name in
the instance's ``variable_types`` (name -> type), so the value goes out as it came in. A
plain write of the same name (a handler's result) forgets the type again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Typed:
    """A variable value and the Camunda type name it was written with (``Date``, ``Long``...)."""

    value: Any
    type: str


def split(variables: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """(plain values, types of the :class:`Typed` ones)."""
    plain: dict[str, Any] = {}
    types: dict[str, str] = {}
    for name, value in variables.items():
        if isinstance(value, Typed):
            plain[name] = value.value
            types[name] = value.type
        else:
            plain[name] = value
    return plain, types


def types_after(
    current: Mapping[str, str],
    written: Mapping[str, Any],
    types: Mapping[str, str],
    deleted: tuple[str, ...] = (),
) -> dict[str, str]:
    """The type map after writing ``written`` (with ``types``) and deleting ``deleted``."""
    out = {k: v for k, v in current.items() if k not in written and k not in deleted}
    out.update(types)
    return out
