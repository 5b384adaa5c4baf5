"""Variables as a scope sees them, and where a write goes.

The instance's variables are the process scope's. Every other scope (sub-process,
multi-instance body and inner instance, an activity with mappings) may hold local
variables; a token sees the instance's variables overlaid by those of each scope around
it, innermost last. A write goes, name by name, to the nearest scope that already has the
name; otherwise to the nearest scope that keeps what its inside writes (an inner instance
whose outputs are collected without an output element, an activity with output
mappings), otherwise to the instance (DESIGN section 4; as Camunda 7 sets variables).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from bpm.errors import BpmError
from bpm.expressions import compile_expression, is_feel
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from bpm.runtime.records import Scope
from bpm.runtime.states import ScopeKind
from bpm.runtime.work import InstanceWork, check_variables
from bpm.timeexpr import variable_name

__all__ = ["chain", "evaluate", "overlay", "visible", "write"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def chain(work: InstanceWork, scope_id: str | None) -> list[Scope]:
    """The scope ``scope_id`` and every scope around it, innermost first."""
    out: list[Scope] = []
    seen: set[str] = set()
    while scope_id is not None and scope_id not in seen:
        seen.add(scope_id)
        scope = work.scope(scope_id)
        if scope is None:
            break
        out.append(scope)
        scope_id = scope.parent_id
    return out


def overlay(
    variables: Mapping[str, Any], scopes: Mapping[str, Scope], scope_id: str | None
) -> dict[str, Any]:
    """What a token in ``scope_id`` sees, from the instance's ``variables`` and the scopes
    read for it (``scopes`` by id; :func:`bpm.store.work.scope_chains`)."""
    local: list[Scope] = []
    seen: set[str] = set()
    while scope_id is not None and scope_id in scopes and scope_id not in seen:
        seen.add(scope_id)
        local.append(scopes[scope_id])
        scope_id = scopes[scope_id].parent_id
    out = dict(variables)
    for scope in reversed(local):
        out.update(scope.variables)
    return out


def visible(work: InstanceWork, scope_id: str | None) -> dict[str, Any]:
    """The variables a token in ``scope_id`` sees."""
    if scope_id is None:
        return work.instance.variables
    local = [s for s in chain(work, scope_id) if s.variables]
    if not local:
        return work.instance.variables
    out = dict(work.instance.variables)
    for scope in reversed(local):
        out.update(scope.variables)
    return out


def evaluate(mappings: Sequence[n.VariableMapping], variables: Mapping[str, Any]) -> dict[str, Any]:
    """The values of mappings (CEL over ``variables``); :class:`ExpressionError` names the
    expression that failed."""
    return {m.target: compile_expression(m.source).evaluate(variables) for m in mappings}


def keeps_writes(model: ProcessModel, scope: Scope) -> bool:
    """Whether writes from inside ``scope`` stay there (see the module docstring)."""
    node = model.nodes.get(scope.node_id)
    if scope.kind is ScopeKind.ACTIVITY:
        return isinstance(node, n.Activity) and bool(node.outputs)
    if scope.kind is ScopeKind.INNER_INSTANCE:
        loop = node.loop if isinstance(node, n.Activity) else None
        return (
            loop is not None
            and loop.output_collection is not None
            and (loop.output_element is None)
        )
    return False


def plain_name(expression: str | None) -> str | None:
    """``result`` for an output element that is just a variable name (Zeebe creates it as
    a local variable of each inner instance, so each one's result lands there)."""
    if expression is None:
        return None
    text = expression.strip()
    if text.startswith("=") and not text.startswith("=="):
        text = text[1:].strip()  # Zeebe's FEEL: `= result`
    return text if _NAME.match(text) else None


def write(
    work: InstanceWork,
    model: ProcessModel,
    scope_id: str | None,
    updates: Any,
    *,
    source: str | None = None,
    token_id: str | None = None,
    local: bool = False,
) -> None:
    """Write ``updates`` as seen from ``scope_id`` (``local``: all into the innermost
    scope that holds variables). Checked first (JSON, size): a :class:`VariableError`
    changes nothing."""
    clean = check_variables(updates, work.max_variable_bytes, work.max_update_bytes)
    if not clean:
        return
    scopes = [s for s in chain(work, scope_id) if not s.is_fork]
    if not scopes:
        work.merge_variables(clean, source=source, token_id=token_id)
        return
    targets: dict[str | None, dict[str, Any]] = {}
    keeper = next((s for s in scopes if keeps_writes(model, s)), None)
    for name, value in clean.items():
        if local:
            target: Scope | None = scopes[0]
        else:
            target = next((s for s in scopes if name in s.variables), keeper)
        targets.setdefault(target.id if target else None, {})[name] = value
    for target_id, values in targets.items():
        if target_id is None:
            work.merge_variables(values, source=source, token_id=token_id)
            continue
        current = work.scope(target_id)
        assert current is not None
        work.set_scope_variables(current, values, source=source, token_id=token_id)


def reference(text: str, seen: Mapping[str, Any], what: str) -> str:
    """The id a model names (a called process, a decision): the text itself, the value of
    ``${name}``, or the value of Zeebe's ``=FEEL``; a BpmError when that is no id."""
    if is_feel(text):
        value = compile_expression(text).evaluate(seen)
        if not isinstance(value, str) or not value:
            raise BpmError(f"`{text.strip()}` gave {value!r}, not the id of {what}")
        return value
    name = variable_name(text)
    if name is None:
        return text
    value = seen.get(name)
    if not isinstance(value, str) or not value:
        raise BpmError(f"variable '{name}' holds {value!r}, not the id of {what}")
    return value
