"""Multi-instance activities: one body scope, one inner scope per instance.

The token that reaches a multi-instance activity waits for the body (``Waiting(scope)``);
the body's local variables are ``nrOfInstances``, ``nrOfCompletedInstances``,
``nrOfActiveInstances`` and the output collection (one slot per item, in input order);
a completion condition also reads them by Zeebe's names (``numberOfCompletedInstances``...).
Each inner instance is a scope with ``loopCounter`` and the element variable, and a token
that runs the activity itself. Parallel: every inner instance starts at once; sequential:
the next one starts when the previous completes (the items are kept on the body).

An inner instance that completes is counted, its output stored in its slot, and the
completion condition evaluated, all under the instance lock: when the last inner
instances finish at the same moment, exactly one transaction sees the body complete. It
then ends the inner instances still running and the token that waited moves on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bpm.errors import BpmError, ExpressionError
from bpm.expressions import compile_condition, compile_expression
from bpm.model import nodes as n
from bpm.runtime import scopes
from bpm.runtime import variables as v
from bpm.runtime.records import Scope, Token
from bpm.runtime.states import BlockKind, ScopeKind, ScopeState, TokenState
from bpm.runtime.work import check_variables

if TYPE_CHECKING:
    from bpm.runtime.hooks import Walk

MULTI_INSTANCE_INCIDENT = "failedMultiInstance"
"""Incident type of a collection, cardinality or completion condition that failed."""

INSTANCES = "nrOfInstances"
COMPLETED = "nrOfCompletedInstances"
ACTIVE = "nrOfActiveInstances"
_ZEEBE_NUMBERS = {
    INSTANCES: "numberOfInstances",
    COMPLETED: "numberOfCompletedInstances",
    ACTIVE: "numberOfActiveInstances",
}
"""Zeebe's names of the same numbers, as its completion conditions read them."""
COUNTER = "loopCounter"


def _items(loop: n.MultiInstance, seen: dict[str, Any]) -> list[Any]:
    if loop.collection is not None:
        value = compile_expression(loop.collection).evaluate(seen)
        if isinstance(value, dict):
            return list(value.values())
        if not isinstance(value, list | tuple):
            raise ExpressionError(
                f"collection `{loop.collection}` gave {type(value).__name__} {value!r}, not a list"
            )
        return list(value)
    assert loop.cardinality is not None
    count = compile_expression(loop.cardinality).evaluate(seen)
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ExpressionError(
            f"loop cardinality `{loop.cardinality}` gave {count!r}, not a whole number >= 0"
        )
    return [None] * count


def start(walker: Walk, tok: Token, node: n.Activity) -> None:
    """The token reached a multi-instance activity: open its body and inner instances."""
    assert node.loop is not None
    loop = node.loop
    if not walker.enter_activity(tok):  # boundary events belong to the body
        return
    work = walker.work
    try:
        items = _items(loop, v.visible(work, tok.scope_id))
    except BpmError as exc:
        walker.fail_token(
            tok, f"multi-instance '{node.id}': {exc}", incident_type=MULTI_INSTANCE_INCIDENT
        )
        return
    total = len(items)
    counters: dict[str, Any] = {
        INSTANCES: total,
        COMPLETED: 0,
        ACTIVE: (total if loop.parallel else min(total, 1)),
    }
    if loop.output_collection is not None:
        counters[loop.output_collection] = [None] * total
    body = scopes.open_scope(
        work,
        ScopeKind.MULTI_INSTANCE,
        node.id,
        parent_id=tok.scope_id,
        token_id=tok.id,
        variables=counters,
        items=None if loop.parallel else items,
    )
    work.transition(tok.id, TokenState.WAITING, blocked=(BlockKind.SCOPE, body.id))
    if total == 0:
        _finish(walker, body, node)
        return
    for index in range(total if loop.parallel else 1):
        _inner(walker, body, node, index, items[index])


def _inner(walker: Walk, body: Scope, node: n.Activity, index: int, item: Any) -> None:
    assert node.loop is not None
    local: dict[str, Any] = {COUNTER: index}
    if node.loop.element is not None:
        local[node.loop.element] = item
    output = v.plain_name(node.loop.output_element)
    if output is not None and output not in local:
        local[output] = None  # each inner instance's result lands here, not in a shared one
    scope = scopes.open_scope(
        walker.work,
        ScopeKind.INNER_INSTANCE,
        node.id,
        parent_id=body.id,
        token_id=None,
        variables=local,
        loop_counter=index,
    )
    token = walker.work.create_token(node.id, scope_id=scope.id, parent_id=body.token_id)
    walker.continue_tokens([token])


def _output(node: n.Activity, inner: Scope, seen: dict[str, Any]) -> Any:
    assert node.loop is not None
    if node.loop.output_element is not None:
        expression = compile_expression(node.loop.output_element)
        name = v.plain_name(node.loop.output_element)
        if name is not None and name in seen:
            # A bare name depends on that variable alone: evaluated over all the variables
            # in view, it would first convert each of them (every instance's item, the
            # collection so far), so each inner instance's end cost O(instances).
            return expression.evaluate({name: seen[name]})
        return expression.evaluate(seen)
    hidden = {COUNTER, node.loop.element}
    return {k: x for k, x in inner.variables.items() if k not in hidden}


def inner_done(walker: Walk, inner: Scope) -> None:
    """An inner instance with no token left: count it, collect its output, and complete
    the body when the condition says so or every instance is done."""
    work = walker.work
    body = work.scope(inner.parent_id or "")
    node = walker.model.node(inner.node_id)
    assert isinstance(node, n.Activity) and node.loop is not None
    if body is None or body.state is not ScopeState.ACTIVE:
        scopes.close(work, inner, ScopeState.TERMINATED)
        return
    loop = node.loop
    seen = v.visible(work, inner.id)
    counts = dict(body.variables)
    counts[COMPLETED] = int(counts.get(COMPLETED, 0)) + 1
    total = int(counts.get(INSTANCES, 0))
    more = not loop.parallel and counts[COMPLETED] < total
    counts[ACTIVE] = int(counts.get(ACTIVE, 0)) - (0 if more else 1)
    try:
        if loop.output_collection is not None:
            slots = list(counts.get(loop.output_collection) or [None] * total)
            slots[inner.loop_counter or 0] = _output(node, inner, seen)
            counts[loop.output_collection] = slots
        done = counts[COMPLETED] >= total
        if loop.completion is not None and not done:
            condition = compile_condition(loop.completion)
            numbers = {k: counts[k] for k in (INSTANCES, COMPLETED, ACTIVE)}
            numbers.update({zeebe: counts[k] for k, zeebe in _ZEEBE_NUMBERS.items()})
            done = condition.evaluate({**seen, **numbers})
        body = work.set_scope_variables(
            body, _checked(work, counts), source=node.id, token_id=body.token_id
        )
    except BpmError as exc:
        _fail(walker, body, inner, node, exc)
        return
    scopes.close(work, inner, ScopeState.COMPLETED)
    if done:
        _finish(walker, body, node)
    elif more:
        items = body.items or []
        index = counts[COMPLETED]
        _inner(walker, body, node, index, items[index] if index < len(items) else None)


def _checked(work: Any, values: dict[str, Any]) -> dict[str, Any]:
    return check_variables(values, work.max_variable_bytes, work.max_update_bytes)


def _finish(walker: Walk, body: Scope, node: n.Activity) -> None:
    """Complete the body: end inner instances still running, hand the output collection
    to the enclosing scope, and move the waiting token on."""
    assert node.loop is not None
    work = walker.work
    for scope in list(work.scope_changes.records.values()):
        if scope.parent_id == body.id and scope.state is ScopeState.ACTIVE:
            scopes.terminate(walker, scope.id, f"multi-instance '{node.id}' completed")
    current = work.scope(body.id) or body
    scopes.close(work, current, ScopeState.COMPLETED)
    opener = work.tokens.get(body.token_id or "")
    if opener is None or opener.state is not TokenState.WAITING:
        return
    name = node.loop.output_collection
    if name is not None:
        v.write(
            work,
            walker.model,
            opener.scope_id,
            {name: current.variables.get(name, [])},
            source=node.id,
            token_id=opener.id,
        )
    walker.leave(opener)


def _fail(walker: Walk, body: Scope, inner: Scope, node: n.Activity, exc: BpmError) -> None:
    """The completion condition (or an output) failed: the body ends and the waiting
    token gets an incident; retrying it runs the activity again."""
    work = walker.work
    scopes.close(work, inner, ScopeState.COMPLETED)
    scopes.terminate(walker, body.id, f"multi-instance '{node.id}' failed")
    opener = work.tokens.get(body.token_id or "")
    if opener is None or opener.state is not TokenState.WAITING:
        return
    work.transition(opener.id, TokenState.READY)
    walker.fail_token(
        work.token(opener.id),
        f"multi-instance '{node.id}': {exc}",
        incident_type=MULTI_INSTANCE_INCIDENT,
    )
