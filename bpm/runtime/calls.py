"""Call activities: a child instance, linked both ways, that its caller's token waits for.

The runtime reaches other instances only through :class:`Relatives`, which the unit of
work implements: it locks and loads instances of the same call tree (the tree's root is
locked by every transaction on any of its instances, so no other lock can be held in
between: see :mod:`bpm.engine.unit`) and creates the child. Everything else here is pure.

* The caller's token waits ``Waiting(call_activity)`` with the child's id; the child's row
  names its parent, the waiting token and the tree's root.
* When the child completes, its caller's token gets the mapped outputs and moves on, in
  the same transaction.
* Ending the caller's token (termination, an interrupting event) terminates the child and
  everything it called.
* An error the child does not catch is thrown at the call activity
  (:mod:`bpm.runtime.throwing`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from bpm.errors import BpmError
from bpm.expressions import is_feel
from bpm.model import nodes as n
from bpm.runtime import variables as v
from bpm.runtime.records import Scope, Token
from bpm.runtime.states import BlockKind, InstanceState, ScopeKind, TokenState
from bpm.runtime.work import new_id
from bpm.timeexpr import variable_name

if TYPE_CHECKING:
    from bpm.runtime.hooks import Walk

CALL_INCIDENT = "failedCallActivity"
"""Incident type of a call activity that could not start its child (no such process,
a mapping that failed, the call depth limit)."""


def _called_key(node: n.CallActivity, seen: dict[str, Any]) -> str:
    if is_feel(node.called_element):
        return v.reference(node.called_element, seen, "a process to call")
    name = variable_name(node.called_element)
    if name is None:
        return node.called_element
    value = seen.get(name)
    if not isinstance(value, str) or not value:
        raise BpmError(f"variable '{name}' holds {value!r}, not the key of a process to call")
    return value


def _bound_version(node: n.CallActivity, seen: dict[str, Any]) -> n.CallActivity:
    """The call activity with its ``calledElementVersion`` / ``calledElementVersionTag``
    read from the variable a ``${name}`` names (Camunda evaluates them when reached)."""
    name = variable_name(node.version or "")
    if name is None:
        return node
    value = seen.get(name)
    if node.binding is n.CallBinding.VERSION:
        if isinstance(value, bool) or not isinstance(value, int | str) or not str(value).isdigit():
            raise BpmError(f"variable '{name}' holds {value!r}, not a version number")
    elif not isinstance(value, str) or not value:
        raise BpmError(f"variable '{name}' holds {value!r}, not a version tag")
    return replace(node, version=str(value))


def _mapped(mappings: tuple[n.VariableMapping, ...], variables: dict[str, Any]) -> dict[str, Any]:
    """The values of a call activity's ``camunda:in`` / ``camunda:out``: a ``source`` naming
    a variable that was never set gives null, as Camunda 7's getVariable does (an
    expression still fails on what it cannot read)."""
    seen = dict(variables)
    for m in mappings:
        name = v.plain_name(m.source)
        if name is not None and name not in seen:
            seen[name] = None
    return v.evaluate(mappings, seen)


def _own_scope(walker: Walk, tok: Token, node: n.CallActivity) -> Scope | None:
    """The call activity's own variables (its input/output parameters), if it has them."""
    scope = walker.work.scope(tok.scope_id) if tok.scope_id else None
    if scope is not None and scope.kind is ScopeKind.ACTIVITY and scope.node_id == node.id:
        return scope
    return None


def _local(walker: Walk, tok: Token) -> dict[str, Any]:
    """Camunda's ``getVariablesLocal()`` of the call activity's execution: the variables of
    the innermost scope it runs in (its own parameters, else its sub-process's, else the
    instance's)."""
    for scope in v.chain(walker.work, tok.scope_id):
        if not scope.is_fork:
            return dict(scope.variables)
    return dict(walker.work.instance.variables)


def _inputs(walker: Walk, tok: Token, node: n.CallActivity, seen: dict[str, Any]) -> dict[str, Any]:
    """What the child starts with: ``camunda:in`` (``local="true"``: read from the call
    activity's own variables only)."""
    local = _local(walker, tok) if node.all_in_local or node.local_inputs else {}
    variables = dict(local if node.all_in_local else seen) if node.all_in else {}
    wide = tuple(m for m in node.call_inputs if m.target not in node.local_inputs)
    narrow = tuple(m for m in node.call_inputs if m.target in node.local_inputs)
    variables.update(_mapped(wide, seen))
    if narrow:
        variables.update(_mapped(narrow, local))
    return variables


def pass_outputs(caller: Walk, tok: Token, node: n.CallActivity, results: dict[str, Any]) -> None:
    """Write the child's ``camunda:out`` into the caller, as Camunda 7 does: a local one
    (``local="true"``) into the call activity's own variables, any other as
    ``execution.setVariable`` from the call activity sets it: into its own variables if it
    has one of that name, else out past them (so its output parameters do not hold it
    back). Raises :class:`BpmError` when a mapping fails."""
    outputs = dict(results) if node.all_out else {}
    outputs.update(_mapped(node.call_outputs, results))
    local_names = set(outputs) if node.all_out_local else set()
    local_names |= {m.target for m in node.call_outputs if m.target in node.local_outputs}
    if node.all_out_local:  # camunda:out source=... without local still goes out
        local_names -= {m.target for m in node.call_outputs if m.target not in node.local_outputs}
    own = _own_scope(caller, tok, node)
    inside = {k: x for k, x in outputs.items() if k in local_names or (own and k in own.variables)}
    outside = {k: x for k, x in outputs.items() if k not in inside}
    if inside:
        v.write(
            caller.work,
            caller.model,
            tok.scope_id,
            inside,
            source=node.id,
            token_id=tok.id,
            local=True,
        )
    if outside:
        scope_id = own.parent_id if own is not None else tok.scope_id
        v.write(caller.work, caller.model, scope_id, outside, source=node.id, token_id=tok.id)


def call_activity(walker: Walk, tok: Token, node: n.CallActivity) -> None:
    """Start the called process; the token waits for it."""
    if not walker.enter_activity(tok):
        return
    work = walker.work
    relatives = walker.relatives
    if relatives is None:
        walker.fail_token(tok, "call activities need an engine", incident_type=CALL_INCIDENT)
        return
    seen = v.visible(work, tok.scope_id)
    try:
        key = _called_key(node, seen)
        depth = work.instance.call_depth + 1
        if depth > relatives.max_depth:
            raise BpmError(
                f"the call depth limit ({relatives.max_depth}) is reached: '{key}' would be "
                f"called {depth} levels deep; a process that calls itself needs a way out "
                "(raise EngineConfig.max_call_depth if the depth is meant)"
            )
        bound = _bound_version(node, seen)
        definition = relatives.called_definition(bound, key, work.instance.definition_id)
        if definition is None:
            raise BpmError(
                f"no process '{key}' is deployed for binding {node.binding.value}"
                + (f" {bound.version}" if bound.version else "")
                + ": deploy it, then retry the incident"
            )
        if definition.suspended:
            raise BpmError(f"process '{key}' is suspended: activate it, then retry the incident")
        variables = _inputs(walker, tok, node, seen)
        business_key = work.instance.business_key if node.inherit_key else None
        if node.business_key is not None:
            value = v.evaluate([n.VariableMapping("key", node.business_key)], seen)["key"]
            business_key = None if value is None else str(value)
    except BpmError as exc:
        walker.fail_token(tok, f"call activity '{node.id}': {exc}", incident_type=CALL_INCIDENT)
        return
    child_id = new_id()
    work.transition(tok.id, TokenState.WAITING, blocked=(BlockKind.CALL_ACTIVITY, child_id))
    work.record(
        "call_started",
        token_id=tok.id,
        node_id=node.id,
        payload={"child": child_id, "process": definition.key, "definition": definition.id},
    )
    relatives.start_child(definition, walker, tok, child_id, variables, business_key)


def waiting_caller(walker: Walk, child_id: str, token_id: str | None) -> Token | None:
    tok = walker.work.tokens.get(token_id or "")
    if (
        tok is None
        or tok.state is not TokenState.WAITING
        or tok.blocked_kind is not BlockKind.CALL_ACTIVITY
        or tok.blocked_id != child_id
    ):
        return None
    return tok


def child_completed(child: Walk) -> None:
    """The child completed: its caller's token takes the outputs and moves on."""
    inst = child.work.instance
    relatives = child.relatives
    if inst.parent_id is None or relatives is None:
        return
    caller = relatives.walker_of(inst.parent_id)
    if caller is None:
        return
    tok = waiting_caller(caller, inst.id, inst.parent_token_id)
    if tok is None:
        return
    node = caller.model.node(tok.node_id)
    assert isinstance(node, n.CallActivity)
    try:
        pass_outputs(caller, tok, node, inst.variables)
    except BpmError as exc:
        caller.work.transition(tok.id, TokenState.READY)
        caller.fail_token(
            caller.work.token(tok.id),
            f"output of call activity '{node.id}': {exc}",
            incident_type=CALL_INCIDENT,
        )
        caller.run()
        return
    caller.work.record(
        "call_completed", token_id=tok.id, node_id=node.id, payload={"child": inst.id}
    )
    caller.leave(tok)
    caller.run()


def terminate_child(walker: Walk, child_id: str, reason: str) -> None:
    """The caller's token ended: end the child and everything it called."""
    relatives = walker.relatives
    child = relatives.walker_of(child_id) if relatives is not None else None
    if child is None or child.work.instance.ended:
        return
    child.terminate_all(reason)
    child.work.set_state(InstanceState.TERMINATED, reason=reason)


def terminated_by_operator(child: Walk, reason: str) -> None:
    """An operator terminated a called instance: its caller's token gets an incident (to
    retry the call, or terminate the caller)."""
    inst = child.work.instance
    relatives = child.relatives
    if inst.parent_id is None or relatives is None:
        return
    caller = relatives.walker_of(inst.parent_id)
    tok = waiting_caller(caller, inst.id, inst.parent_token_id) if caller else None
    if caller is None or tok is None:
        return
    caller.work.transition(tok.id, TokenState.READY)
    caller.fail_token(
        caller.work.token(tok.id),
        f"called instance {inst.id} was terminated ({reason})",
        incident_type=CALL_INCIDENT,
    )
    caller.run()
