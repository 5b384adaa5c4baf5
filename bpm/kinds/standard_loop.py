"""Standard loops (``standardLoopCharacteristics``, BPMN 2.0.2 10.3.8) on any activity.

A token reaching an activity with a :class:`~bpm.model.nodes.StandardLoop` waits for a
body scope, as at a sequential multi-instance activity (its boundary events are the
body's: an interrupting one ends the whole loop); each iteration is an inner instance
scope with the local variable ``loopCounter`` (0-based, as Camunda's multi-instance
counter) and a token that runs the activity itself. Before each iteration (but the first
unless ``testBefore="true"``) the ``loopCondition`` is evaluated over the variables the
activity sees, with ``loopCounter`` the iterations done so far: the loop goes on while it
is true, as the spec says (SpiffWorkflow reads it the other way round: its loop ends when
the condition is true). ``loopMaximum`` bounds the iterations (0: none runs). A condition
that cannot be evaluated ends the loop with a ``failedMultiInstance`` incident on the
activity's token; retrying it runs the loop again from the start.

Variables an iteration writes go where they would without the loop (to the scope around
it, unless the activity keeps them), so the condition sees them. Camunda 7 and Zeebe do
not run standard loops.
"""

from __future__ import annotations

from xml.etree.ElementTree import Element, SubElement

from bpm.cockpit.diagram import BPMN
from bpm.errors import BpmError, ExpressionError
from bpm.expressions import compile_condition
from bpm.model import nodes as n
from bpm.runtime import multi, scopes
from bpm.runtime import variables as v
from bpm.runtime.hooks import Walk
from bpm.runtime.records import Scope, Token
from bpm.runtime.states import BlockKind, ScopeKind, ScopeState, TokenState

__all__ = ["COUNTER", "draw_marker", "inner_done", "iteration_done", "start", "start_loop"]

COUNTER = multi.COUNTER  # "loopCounter", the name Camunda's multi-instance counter has


def _loop(node: n.Node) -> n.StandardLoop | None:
    loop = getattr(node, "loop", None)
    return loop if isinstance(loop, n.StandardLoop) else None


def start(walker: Walk, tok: Token, node: n.Activity) -> None:
    """The token reached a looping activity: open the body, then the first iteration
    (if the condition allows it)."""
    if not walker.enter_activity(tok):  # boundary events belong to the body
        return
    work = walker.work
    body = scopes.open_scope(
        work, ScopeKind.MULTI_INSTANCE, node.id, parent_id=tok.scope_id, token_id=tok.id
    )
    work.transition(tok.id, TokenState.WAITING, blocked=(BlockKind.SCOPE, body.id))
    _next(walker, body, node, 0)


def iteration_done(walker: Walk, inner: Scope) -> None:
    """An iteration with no token left: the next one, or the end of the loop."""
    work = walker.work
    body = work.scope(inner.parent_id or "")
    node = walker.model.node(inner.node_id)
    assert isinstance(node, n.Activity)
    if body is None or body.state is not ScopeState.ACTIVE:
        scopes.close(work, inner, ScopeState.TERMINATED)
        return
    scopes.close(work, inner, ScopeState.COMPLETED)
    _next(walker, body, node, (inner.loop_counter or 0) + 1)


def _next(walker: Walk, body: Scope, node: n.Activity, done: int) -> None:
    loop = _loop(node)
    assert loop is not None
    work = walker.work
    if loop.maximum is not None and done >= loop.maximum:
        _finish(walker, body, node, done, "maximum")
        return
    if loop.condition is not None and (done > 0 or loop.test_before):
        seen = {**v.visible(work, body.id), COUNTER: done}
        try:
            again = compile_condition(loop.condition).evaluate(seen)
        except (BpmError, ExpressionError) as exc:
            _fail(walker, body, node, exc)
            return
        if not again:
            _finish(walker, body, node, done, "condition")
            return
    scope = scopes.open_scope(
        work,
        ScopeKind.INNER_INSTANCE,
        node.id,
        parent_id=body.id,
        token_id=None,
        variables={COUNTER: done},
        loop_counter=done,
    )
    token = work.create_token(node.id, scope_id=scope.id, parent_id=body.token_id)
    walker.continue_tokens([token])


def _finish(walker: Walk, body: Scope, node: n.Activity, done: int, why: str) -> None:
    work = walker.work
    scopes.close(work, work.scope(body.id) or body, ScopeState.COMPLETED)
    work.record(
        "loop_ended",
        token_id=body.token_id,
        node_id=node.id,
        payload={"iterations": done, "by": why},
    )
    opener = work.tokens.get(body.token_id or "")
    if opener is not None and opener.state is TokenState.WAITING:
        walker.leave(opener)


def _fail(walker: Walk, body: Scope, node: n.Activity, exc: Exception) -> None:
    work = walker.work
    scopes.terminate(walker, body.id, f"standard loop '{node.id}' failed")
    opener = work.tokens.get(body.token_id or "")
    if opener is None or opener.state is not TokenState.WAITING:
        return
    work.transition(opener.id, TokenState.READY)
    walker.fail_token(
        work.token(opener.id),
        f"standard loop '{node.id}', loop condition: {exc}",
        incident_type=multi.MULTI_INSTANCE_INCIDENT,
    )


# -- the registry's hooks: a loop marker is a multi-instance one or a standard loop ----------


def start_loop(walker: Walk, tok: Token, node: n.Activity) -> None:
    """The walker's ``start_loop`` hook: the marker's own start."""
    (start if _loop(node) is not None else multi.start)(walker, tok, node)


def inner_done(walker: Walk, inner: Scope) -> None:
    """The settler of inner instances: an iteration of a standard loop, or an instance of
    a multi-instance activity."""
    node = walker.model.nodes.get(inner.node_id)
    (iteration_done if node is not None and _loop(node) else multi.inner_done)(walker, inner)


def draw_marker(parent: Element, node: n.Node) -> None:
    """Writes the standard loop marker of ``node`` (if it has one) into its drawn element."""
    loop = _loop(node)
    if loop is None:
        return
    attrs = {"testBefore": "true"} if loop.test_before else {}
    if loop.maximum is not None:
        attrs["loopMaximum"] = str(loop.maximum)
    marker = SubElement(parent, f"{{{BPMN}}}standardLoopCharacteristics", attrs)
    if loop.condition is not None:
        SubElement(marker, f"{{{BPMN}}}loopCondition").text = loop.condition
