"""What a token arriving at the plainer kinds of node does (each kind names its behaviour
in :mod:`bpm.kinds`, which hands the walker the table).

Every behaviour gets the walker, the Ready token and the node; it either moves the token on
(:meth:`Walk.leave`), makes it wait (a work item it waits for, or a join), or leaves it
Ready for a worker (inline service tasks, published after commit).
"""

from __future__ import annotations

from bpm.errors import BpmError, ExpressionError
from bpm.expressions import compile_condition, compile_expression, is_feel
from bpm.model import nodes as n
from bpm.runtime import (
    calls,
    compensation,
    intermediate,
    listening,
    scopes,
    task_events,
    throwing,
)
from bpm.runtime.hooks import Walk
from bpm.runtime.records import ExternalTask, Token, UserTask
from bpm.runtime.states import BlockKind, InstanceState, TaskState, TokenState, UserTaskState
from bpm.runtime.usertasks import user_task_fields
from bpm.runtime.variables import chain, reference
from bpm.runtime.work import new_id
from bpm.timeexpr import variable_name

JOB_TYPE_INCIDENT = "failedJobType"
"""Incident type of a Zeebe job type expression that gave no topic."""
SCRIPT_INCIDENT = "failedScript"
"""Incident type of a CEL script that could not be evaluated or stored."""


def start_event(walker: Walk, tok: Token, node: n.StartEvent) -> None:
    walker.leave(tok)


def pass_through(walker: Walk, tok: Token, node: n.PassThrough) -> None:
    """``task``, ``manualTask``, a none intermediate throw event: nothing to do.

    (A node without outgoing flows needs nothing special anywhere: leaving it completes the
    token, and the instance completes when no token is left, BPMN's implicit end.)"""
    walker.leave(tok)


def boundary_event(walker: Walk, tok: Token, node: n.BoundaryEvent) -> None:
    # A token is only ever created here when the boundary event has been triggered.
    walker.leave(tok)


def end_event(walker: Walk, tok: Token, node: n.EndEvent) -> None:
    """A none end event ends the path; a terminate end event ends its scope (the whole
    instance at the top); an error or escalation end event throws to the nearest catcher
    (:mod:`bpm.runtime.throwing`), and ends the path when nothing catches it."""
    w = walker.work
    if walker.model.listens and walker.listen_last(tok, (), again=True):
        return  # its end listeners run on a worker first; then this runs again
    if node.kind is n.EndKind.COMPENSATE:
        compensation.end_event(walker, tok, node)
        return
    w.transition(tok.id, TokenState.COMPLETED)
    if node.kind is n.EndKind.TERMINATE:
        region = scopes.region_of(w, tok.scope_id) if walker.model.scoped else None
        if region is not None:
            scopes.stop_inside(walker, region.id, f"terminate end event {node.id}")
            return
        walker.terminate_all(f"terminate end event {node.id}")
        w.set_state(InstanceState.TERMINATED, by=node.id)
        if w.instance.parent_id is not None:
            # A called process that terminates itself ended normally for its caller
            # (Camunda 7: the call activity completes, with its outputs, and goes on).
            calls.child_completed(walker)
    elif node.kind is n.EndKind.ERROR:
        w.record(
            "error_end", token_id=tok.id, node_id=node.id, payload={"error_code": node.error_code}
        )
        throwing.throw(walker, w.token(tok.id), node.error_code, f"error end event {node.id}")
    elif node.kind is n.EndKind.ESCALATION:
        intermediate.escalate(walker, w.token(tok.id), node.escalation_code or "", node.id)


def service_task(walker: Walk, tok: Token, node: n.ServiceTask) -> None:
    topic = node.topic
    # Zeebe's job type expression, or Camunda's camunda:topic="${name}": this task's topic
    if topic is not None and (is_feel(topic) or variable_name(topic) is not None):
        try:
            topic = reference(topic, walker.variables(tok), "a job type")
        except BpmError as exc:
            walker.fail_token(tok, f"job type of {node.id}: {exc}", incident_type=JOB_TYPE_INCIDENT)
            return
    if not walker.enter_activity(tok):
        return
    w = walker.work
    if not node.is_external:
        # Stays Ready: a worker claims it. Published after commit.
        w.to_dispatch.append(tok.id)
        return
    assert topic is not None
    task = w.add(
        ExternalTask(
            id=new_id(),
            instance_id=tok.instance_id,
            token_id=tok.id,
            definition_id=w.instance.definition_id,
            definition_key=w.instance.definition_key,
            business_key=w.instance.business_key,
            node_id=node.id,
            topic=topic,
            state=TaskState.READY,
            priority=node.priority,
            properties=dict(node.properties),
            created_at=w.now,
            updated_at=w.now,
        )
    )
    w.notify.add(topic)
    w.transition(tok.id, TokenState.WAITING, blocked=(BlockKind.EXTERNAL_TASK, task.id))


def script_task(walker: Walk, tok: Token, node: n.ScriptTask) -> None:
    """A CEL script is evaluated here, its value stored in the result variable; a script in
    any other language is an inline step like any other (the handler named by the task id,
    which finds the script on ``ctx.script``). Nothing is ever evaluated as Python."""
    if not node.is_cel:
        service_task(walker, tok, node)
        return
    try:
        value = compile_expression(node.script or "").evaluate(walker.variables(tok))
        if node.result_variable:
            walker.write_variables(tok, {node.result_variable: value})
    except BpmError as exc:  # ExpressionError, VariableError: the model's or the data's fault
        walker.fail_token(tok, f"script of {node.id}: {exc}", incident_type=SCRIPT_INCIDENT)
        return
    walker.leave(tok)


def user_task(walker: Walk, tok: Token, node: n.UserTask) -> None:
    if not walker.enter_activity(tok):
        return
    if node.listens_to_task and not task_events.arm(walker, tok, node):
        return  # a timeout listener's timer could not be computed: an incident, no task
    w = walker.work
    task = w.add(
        UserTask(
            id=new_id(),
            instance_id=tok.instance_id,
            token_id=tok.id,
            node_id=node.id,
            state=UserTaskState.OPEN,
            created_at=w.now,
            **user_task_fields(node, walker.variables(tok), w.now),  # name, assignee, form...
        )
    )
    w.transition(tok.id, TokenState.WAITING, blocked=(BlockKind.USER_TASK, task.id))
    if task.assignee is not None and node.listens_to_task:
        task_events.told(walker, task, "assignment", user=task.assignee)  # Camunda does too


def exclusive_gateway(walker: Walk, tok: Token, node: n.ExclusiveGateway) -> None:
    outgoing = walker.model.outgoing[node.id]
    if not outgoing:  # an implicit end (BPMN 2.0 13.2.1), as in Camunda
        walker.leave(tok, ())
        return
    if len(outgoing) == 1 and outgoing[0].condition is None:
        walker.leave(tok, outgoing)
        return
    variables = walker.variables(tok)
    default = None
    for f in outgoing:
        if f.id == node.default_flow:
            default = f
            continue
        if f.condition is None:  # taken, as Camunda does (flows are tried in order)
            walker.leave(tok, [f])
            return
        try:
            matched = compile_condition(f.condition).evaluate(variables)
        except ExpressionError as exc:
            walker.fail_token(tok, f"gateway {node.id}, flow {f.id}: {exc}")
            return
        if matched:
            walker.leave(tok, [f])
            return
    if default is not None:
        walker.leave(tok, [default])
        return
    walker.fail_token(tok, f"gateway {node.id}: no condition matched and there is no default flow")


def parallel_gateway(walker: Walk, tok: Token, node: n.ParallelGateway) -> None:
    """Fork (one token per outgoing flow, in a new fork scope) and/or join.

    A join records each arriving token as ``Waiting(join)`` (``blocked_id`` names the flow
    it came by); the arrival that completes the set completes them all and goes on with one
    token. The set is the tokens of the arriving token's fork scope (a structured join);
    failing that, one token per incoming flow among the tokens of the same region (the
    process, a sub-process, an inner instance), whatever fork made them: BPMN 2.0.2's rule
    (13.4.3), which unstructured models (nested forks into one join) need. The instance
    lock is held, so exactly one arrival can be the last.
    """
    w = walker.work
    flows = walker.model.incoming[node.id]
    incoming = len(flows)
    if incoming <= 1:
        _fork(walker, tok, node, tok.scope_id)
        return
    w.transition(tok.id, TokenState.WAITING, blocked=(BlockKind.JOIN, _arrival(walker, tok, node)))
    waiting = [
        t
        for t in w.tokens.values()
        if t.state is TokenState.WAITING
        and t.node_id == node.id
        and t.blocked_kind is BlockKind.JOIN
    ]
    arrived = [t for t in waiting if t.scope_id == tok.scope_id]
    scope_id = tok.scope_id
    if len(arrived) >= incoming:
        arrived = arrived[:incoming]
        fork = w.scope(scope_id) if scope_id is not None else None
        if fork is not None and fork.is_fork:
            scope = w.shrink_scope(fork.id, incoming - 1)
            if scope.expected is not None and scope.expected <= 1:
                scope_id = scope.parent_id
    else:
        unstructured = _one_per_flow(walker, tok, flows, waiting)
        if unstructured is None:
            return
        arrived = unstructured
        scope_id = _common_scope(walker, arrived)
    for t in arrived:
        w.transition(t.id, TokenState.COMPLETED, payload={"joined": True})
    w.record(
        "join_fired",
        token_id=tok.id,
        node_id=node.id,
        payload={"tokens": [t.id for t in arrived], "scope": tok.scope_id},
    )
    _fork(walker, w.token(tok.id), node, scope_id)


def _arrival(walker: Walk, tok: Token, node: n.Node) -> str:
    """The id of the flow ``tok`` came to the join by: the flow from the node of the token
    that made it (in memory: a token reaches a join in the transaction that made it)."""
    via = listening.pending(tok).via  # it waited for its listeners: the parent is gone
    if via is not None:
        return via
    parent = walker.work.tokens.get(tok.parent_id) if tok.parent_id else None
    if parent is not None:
        for flow in walker.model.incoming[node.id]:
            if flow.source == parent.node_id:
                return flow.id
    return f"token:{tok.id}"  # not known: an arrival of its own, joined by fork scope only


def _one_per_flow(
    walker: Walk, tok: Token, flows: tuple[n.Flow, ...], waiting: list[Token]
) -> list[Token] | None:
    """The earliest waiting token of each incoming flow in ``tok``'s region, or None while
    a flow has none."""
    region = scopes.region_of(walker.work, tok.scope_id)
    here = region.id if region else None
    first: dict[str, Token] = {}
    for t in sorted(waiting, key=lambda t: (t.updated_at, t.id)):
        other = scopes.region_of(walker.work, t.scope_id)
        if (other.id if other else None) == here and t.blocked_id not in first:
            first[str(t.blocked_id)] = t
    if any(f.id not in first for f in flows):
        return None
    return [first[f.id] for f in flows]


def _common_scope(walker: Walk, tokens: list[Token]) -> str | None:
    """The innermost scope around every token of ``tokens`` (None: the process)."""
    chains = [[s.id for s in chain(walker.work, t.scope_id)] for t in tokens]
    for scope_id in chains[0]:
        if all(scope_id in c for c in chains[1:]):
            return scope_id
    return None


def _fork(walker: Walk, tok: Token, node: n.ParallelGateway, outer: str | None) -> None:
    outgoing = walker.model.outgoing[node.id]
    if len(outgoing) <= 1:
        walker.leave(tok, scope_id=outer, keep_scope=False)
        return
    scope = walker.work.open_scope(node.id, len(outgoing), outer)
    walker.leave(tok, scope_id=scope.id, keep_scope=False)


def event_sub_process(walker: Walk, tok: Token, node: n.EventSubProcess) -> None:
    # Validation refuses flows into an event sub-process: say so if a model slips through.
    walker.fail_token(tok, f"event sub-process '{node.id}' is started by its event, not a flow")
