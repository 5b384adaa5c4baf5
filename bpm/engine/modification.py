"""Process instance modification (issue 22, item 2): start and cancel activities of a
running instance, Camunda 7's ``POST /process-instance/{id}/modification``.

An operator's repair tool: move a token that is stuck or was routed wrongly (a cancel and a
start in one call), start a step again, or cancel a branch. Every instruction of one call
runs in one transaction under the instance lock, in the order given; the first one that
cannot be carried out raises :class:`ModificationError` naming it, and nothing is written.

- ``StartBefore(activity)``: a token at the activity. Inside a sub-process it runs in the
  sub-process's active instance; when none is active, the missing sub-processes are
  created (their boundary events armed, their input mappings applied unless
  ``skip_io_mappings``); when more than one is, ``ancestor`` must say which.
  ``X#multiInstanceBody`` starts the whole multi-instance body of X; ``X`` in an active
  parallel body of X adds one inner instance to it.
- ``StartAfter(activity)``: a token on the activity's single outgoing flow.
- ``StartTransition(flow)``: a token on the flow, at its target.
- ``Cancel``: by ``activity_instance_id`` or ``transition_instance_id`` (ids of
  :func:`bpm.engine.activity_tree.activity_instances`), or every instance of
  ``activity_id`` (``current_only``: only those active before this modification, Camunda's
  ``cancelCurrentActiveActivityInstances``). A cancelled token takes its user or external
  task, timers, message and signal waits and incidents with it; a cancelled sub-process
  everything inside.

A scope left without tokens by the cancels is cancelled too, never completed (no flow
after it is taken), and the instance ends (``terminated``) only if nothing is left after
every instruction: cancel-then-start moves a token even when it was the last one. The
starts are walked last, as a step's continuation would be.

Each modification is recorded as one ``instance_modified`` history event naming its author
(the API key, or the Python caller's ``by``), its annotation and its instructions, before
the token events it caused, and as one entry of the operation log (``ModifyProcessInstance``,
``/history/user-operation``), in the same transaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bpm.engine import oplog
from bpm.engine.activity_tree import (
    MULTI_INSTANCE_BODY,
    ActivityInstance,
    build_tree,
    is_listener,
)
from bpm.engine.core import EngineCore
from bpm.engine.unit import unit_of_work
from bpm.errors import BpmError, InvalidOperation
from bpm.kinds import KINDS
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from bpm.model.reach import upstream_of
from bpm.runtime import multi, scopes
from bpm.runtime import variables as v
from bpm.runtime.calls import terminated_by_operator
from bpm.runtime.records import Instance, Scope, Token
from bpm.runtime.states import (
    LIVE_TOKEN_STATES,
    BlockKind,
    InstanceState,
    ScopeKind,
    ScopeState,
    TokenState,
)
from bpm.runtime.walker import Walker
from bpm.runtime.work import InstanceWork, check_variables

#: Instructions of one modification (the REST body is bounded by the same number).
MAX_INSTRUCTIONS = 100
#: Camunda's ``operationType`` of a modification in the operation log.
OPERATION_TYPE = "ModifyProcessInstance"
#: The reason stopped tokens and scopes carry in the trail.
REASON = "cancelled by modification"


class ModificationError(InvalidOperation):
    """An instruction cannot be carried out; nothing of the modification was applied."""


@dataclass(frozen=True)
class StartBefore:
    """Start ``activity_id`` (``X#multiInstanceBody``: the whole body of multi-instance X)."""

    activity_id: str
    variables: Mapping[str, Any] | None = None
    local_variables: Mapping[str, Any] | None = None
    ancestor: str | None = None
    """The activity instance to start it in (Camunda's ``ancestorActivityInstanceId``)."""


@dataclass(frozen=True)
class StartAfter:
    """Start on the single outgoing flow of ``activity_id``."""

    activity_id: str
    variables: Mapping[str, Any] | None = None
    local_variables: Mapping[str, Any] | None = None
    ancestor: str | None = None


@dataclass(frozen=True)
class StartTransition:
    """Start on the sequence flow ``transition_id`` (a token at its target)."""

    transition_id: str
    variables: Mapping[str, Any] | None = None
    local_variables: Mapping[str, Any] | None = None
    ancestor: str | None = None


@dataclass(frozen=True)
class Cancel:
    """Cancel one activity or transition instance, or every instance of an activity.
    Exactly one of the three ids."""

    activity_id: str | None = None
    activity_instance_id: str | None = None
    transition_instance_id: str | None = None
    current_only: bool = False
    """With ``activity_id``: only the instances active before the modification began."""


Instruction = StartBefore | StartAfter | StartTransition | Cancel


def describe(instruction: Instruction) -> dict[str, Any]:
    """An instruction as the trail keeps it (Camunda's instruction names)."""
    if isinstance(instruction, Cancel):
        out: dict[str, Any] = {"type": "cancel"}
        for key, value in (
            ("activityId", instruction.activity_id),
            ("activityInstanceId", instruction.activity_instance_id),
            ("transitionInstanceId", instruction.transition_instance_id),
        ):
            if value is not None:
                out[key] = value
        if instruction.current_only:
            out["cancelCurrentActiveActivityInstances"] = True
        return out
    if isinstance(instruction, StartTransition):
        out = {"type": "startTransition", "transitionId": instruction.transition_id}
    elif isinstance(instruction, StartAfter):
        out = {"type": "startAfterActivity", "activityId": instruction.activity_id}
    else:
        out = {"type": "startBeforeActivity", "activityId": instruction.activity_id}
    if instruction.ancestor is not None:
        out["ancestorActivityInstanceId"] = instruction.ancestor
    names = sorted({*(instruction.variables or {}), *(instruction.local_variables or {})})
    if names:
        out["variables"] = names
    return out


@dataclass
class _Run:
    """One modification being applied (inside the unit of work)."""

    work: InstanceWork
    walker: Walker
    model: ProcessModel
    skip_io_mappings: bool
    before: ActivityInstance
    started: list[str] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)

    # -- the tree as it is now -------------------------------------------------------------
    def tree(self) -> ActivityInstance:
        live = [t for t in self.work.tokens.values() if t.state in LIVE_TOKEN_STATES]
        active = [
            s for s in self.work.scope_changes.records.values() if s.state is ScopeState.ACTIVE
        ]
        return build_tree(self.work.instance, self.model, live, active, (), KINDS.activity_type)

    # -- cancel ------------------------------------------------------------------------------
    def cancel(self, where: str, ins: Cancel) -> None:
        chosen = [
            x for x in (ins.activity_id, ins.activity_instance_id, ins.transition_instance_id)
        ]
        if sum(x is not None for x in chosen) != 1:
            raise ModificationError(
                f"{where}: give exactly one of activityId, activityInstanceId and "
                "transitionInstanceId"
            )
        tree = self.tree()
        if ins.activity_instance_id is not None:
            found = tree.find(ins.activity_instance_id)
            if found is None:
                raise ModificationError(
                    f"{where}: activity instance '{ins.activity_instance_id}' is not active in "
                    f"instance {self.work.instance.id} (read its activity instance tree again)"
                )
            self.cancel_activity_instance(found)
            return
        if ins.transition_instance_id is not None:
            hit = [t for t in tree.transitions() if t.id == ins.transition_instance_id]
            if not hit:
                raise ModificationError(
                    f"{where}: transition instance '{ins.transition_instance_id}' is not "
                    f"active in instance {self.work.instance.id}"
                )
            self.stop(hit[0].token_id)
            return
        activity = str(ins.activity_id)
        if activity not in self.model.nodes and _body_of(activity) not in self.model.nodes:
            raise ModificationError(f"{where}: activity '{activity}' does not exist")
        source = self.before if ins.current_only else tree
        instances = [
            x for x in source.walk() if x.activity_id == activity and x.parent_activity_instance_id
        ]
        transitions = [t for t in source.transitions() if t.activity_id == activity]
        if not instances and not transitions:
            raise ModificationError(
                f"{where}: no token is at activity '{activity}' in instance {self.work.instance.id}"
            )
        for found in instances:
            self.cancel_activity_instance(found)
        for tr in transitions:
            self.stop(tr.token_id)

    def cancel_activity_instance(self, found: ActivityInstance) -> None:
        if found.parent_activity_instance_id is None:  # the root: everything
            for tok in list(self.work.tokens.values()):
                self.stop(tok.id)
            return
        if found.token_id is not None:
            self.stop(found.token_id)
        elif found.scope_id is not None:  # an event sub-process
            scopes.terminate(self.walker, found.scope_id, REASON)

    def stop(self, token_id: str) -> None:
        tok = self.work.tokens.get(token_id)
        if tok is None or tok.state not in LIVE_TOKEN_STATES:
            return  # ended with a scope cancelled before it
        self.walker.stop_token(tok, payload={"reason": REASON})
        self.cancelled.append(token_id)

    def prune(self) -> None:
        """Cancel the scopes the cancels left without tokens, innermost first, until none
        is left (a sub-process, a body, an event sub-process: never completed)."""
        w = self.work
        while True:
            occupied: set[str] = set()
            for tok in w.tokens.values():
                if tok.state not in LIVE_TOKEN_STATES or is_listener(self.model, tok):
                    continue
                for scope in v.chain(w, tok.scope_id):
                    occupied.add(scope.id)
            empty = [
                s
                for s in w.scope_changes.records.values()
                if s.state is ScopeState.ACTIVE
                and s.id not in occupied
                and s.kind
                in (
                    ScopeKind.SUBPROCESS,
                    ScopeKind.EVENT_SUBPROCESS,
                    ScopeKind.INNER_INSTANCE,
                    ScopeKind.MULTI_INSTANCE,
                )
            ]
            if not empty:
                return
            scope = max(empty, key=lambda s: len(v.chain(w, s.id)))
            self.cancel_scope(scope)

    def cancel_scope(self, scope: Scope) -> None:
        w = self.work
        if scope.kind is ScopeKind.INNER_INSTANCE:
            # As Camunda's destroyInnerInstance: the body counts one instance fewer, so
            # the others can still complete it.
            body = w.scope(scope.parent_id or "")
            if body is not None and body.state is ScopeState.ACTIVE:
                counts = dict(body.variables)
                for name in (multi.INSTANCES, multi.ACTIVE):
                    counts[name] = max(int(counts.get(name, 0)) - 1, 0)
                w.set_scope_variables(body, counts, source=scope.node_id, token_id=body.token_id)
            scopes.close(w, scope, ScopeState.TERMINATED, reason=REASON)
            return
        opener = w.tokens.get(scope.token_id or "")
        if (
            opener is not None
            and opener.state is TokenState.WAITING
            and opener.blocked_kind is BlockKind.SCOPE
            and opener.blocked_id == scope.id
        ):
            self.stop(opener.id)  # ends the scope with it
        else:
            scopes.terminate(self.walker, scope.id, REASON)
        scopes.close(w, w.scope(scope.id) or scope, ScopeState.TERMINATED, reason=REASON)

    # -- start -------------------------------------------------------------------------------
    def start(self, where: str, ins: StartBefore | StartAfter | StartTransition) -> None:
        model = self.model
        if isinstance(ins, StartTransition):
            flow = next((f for f in model.flows if f.id == ins.transition_id), None)
            if flow is None:
                raise ModificationError(
                    f"{where}: sequence flow '{ins.transition_id}' does not exist"
                )
            target, body = flow.target, False
        elif isinstance(ins, StartAfter):
            node = model.nodes.get(ins.activity_id)
            if node is None:
                raise ModificationError(f"{where}: activity '{ins.activity_id}' does not exist")
            out = model.outgoing[node.id]
            if len(out) != 1:
                raise ModificationError(
                    f"{where}: activity '{ins.activity_id}' has {len(out)} outgoing sequence "
                    "flows; start after it needs exactly one (use startTransition to pick one)"
                )
            target, body = out[0].target, False
        else:
            target, body = ins.activity_id, False
            if target not in model.nodes and _body_of(target) in model.nodes:
                target, body = _body_of(target), True
            if target not in model.nodes:
                raise ModificationError(f"{where}: activity '{ins.activity_id}' does not exist")
        node = model.node(target)
        if node.host is not None:
            raise ModificationError(
                f"{where}: '{target}' is a boundary event; start before the activity after it"
            )
        if isinstance(node, n.Activity) and node.for_compensation:
            raise ModificationError(
                f"{where}: '{target}' is a compensation handler, run only by compensation"
            )
        if body and (not isinstance(node, n.Activity) or node.loop is None):
            raise ModificationError(f"{where}: '{target}' is not a multi-instance activity")
        scope_id, inner_of = self.place(where, node, ins.ancestor, body)
        try:
            variables = check_variables(
                dict(ins.variables or {}),
                self.work.max_variable_bytes,
                self.work.max_update_bytes,
            )
            local = check_variables(
                dict(ins.local_variables or {}),
                self.work.max_variable_bytes,
                self.work.max_update_bytes,
            )
        except BpmError as exc:
            raise ModificationError(f"{where}: {exc}") from exc
        if inner_of is not None:
            tok = self.add_inner(where, inner_of, node)
        else:
            tok = self.work.create_token(node.id, scope_id=scope_id, parent_id=None)
        if (
            self.skip_io_mappings
            and isinstance(node, n.Activity)
            and node.has_mappings
            and not isinstance(node, n.SubProcess)
            and node.loop is None
        ):
            # its own scope opened empty: the walk then skips the input mappings
            own = scopes.open_scope(
                self.work,
                ScopeKind.ACTIVITY,
                node.id,
                parent_id=tok.scope_id,
                token_id=tok.id,
            )
            tok = self.work.rescope(tok.id, own.id)
        try:
            if variables:
                self.walker.write_variables(tok, variables)
            if local:
                self.walker.write_variables(tok, local, local=True)
        except BpmError as exc:
            raise ModificationError(f"{where}: {exc}") from exc
        self.started.append(tok.id)

    def place(
        self, where: str, node: n.Node, ancestor: str | None, body: bool
    ) -> tuple[str | None, Scope | None]:
        """The scope a new token at ``node`` runs in, creating the sub-processes around it
        that are not active; second: the active parallel multi-instance body of ``node``
        to add an inner instance to (None: a token of its own)."""
        containers = self.containers(node)
        tree = self.tree()
        current = tree
        if ancestor is not None:
            found = tree.find(ancestor)
            if found is None:
                raise ModificationError(
                    f"{where}: ancestor activity instance '{ancestor}' is not active"
                )
            # the path from the root to the ancestor must be the node's containers
            path = self.path(tree, found)
            names = [x.activity_id for x in path if x.activity_type != "multiInstanceBody"]
            if names != containers[: len(names)] or found.activity_type == "multiInstanceBody":
                raise ModificationError(
                    f"{where}: '{node.id}' is not inside activity instance '{ancestor}'"
                )
            current, containers = found, containers[len(names) :]
        created = False
        for container in containers:
            choice = [] if created else self.candidates(current, container)
            if len(choice) > 1:
                raise ModificationError(
                    f"{where}: sub-process '{container}' has {len(choice)} active instances; "
                    "say which in ancestorActivityInstanceId"
                )
            if choice:
                current = choice[0]
                continue
            created = True
            current = self.open_container(where, current, container)
        scope_id = current.scope_id
        if (
            not body
            and not created
            and isinstance(node, n.Activity)
            and node.loop is not None
            and (found_body := self.active_body(current, node.id)) is not None
        ):
            return scope_id, found_body
        return scope_id, None

    def containers(self, node: n.Node) -> list[str]:
        out: list[str] = []
        container = node.container
        while container is not None:
            out.append(container)
            container = self.model.node(container).container
        return out[::-1]

    @staticmethod
    def path(tree: ActivityInstance, target: ActivityInstance) -> list[ActivityInstance]:
        """The activity instances from below the root down to ``target``."""
        by_id = {x.id: x for x in tree.walk()}
        out: list[ActivityInstance] = []
        at: ActivityInstance | None = target
        while at is not None and at.parent_activity_instance_id is not None:
            out.append(at)
            at = by_id.get(at.parent_activity_instance_id)
        return out[::-1]

    @staticmethod
    def candidates(current: ActivityInstance, container: str) -> list[ActivityInstance]:
        body = container + MULTI_INSTANCE_BODY
        out = []
        for child in current.child_activity_instances:
            if child.activity_id == container:
                out.append(child)
            elif child.activity_id == body:
                out.extend(c for c in child.child_activity_instances if c.activity_id == container)
        return [x for x in out if x.scope_id is not None]

    def active_body(self, current: ActivityInstance, node_id: str) -> Scope | None:
        bodies = [
            c
            for c in current.child_activity_instances
            if c.activity_id == node_id + MULTI_INSTANCE_BODY and c.scope_id is not None
        ]
        if len(bodies) != 1:
            return None
        return self.work.scope(str(bodies[0].scope_id))

    def open_container(
        self, where: str, parent: ActivityInstance, container: str
    ) -> ActivityInstance:
        """Create sub-process (or event sub-process) ``container`` in ``parent``."""
        node = self.model.node(container)
        w, walker = self.work, self.walker
        parent_scope = parent.scope_id
        if isinstance(node, n.Activity) and node.loop is not None:
            raise ModificationError(
                f"{where}: '{container}' is a multi-instance sub-process that is not active; "
                f"start '{container}{MULTI_INSTANCE_BODY}' first"
            )
        if isinstance(node, n.EventSubProcess):
            scope = scopes.open_scope(
                w, ScopeKind.EVENT_SUBPROCESS, node.id, parent_id=parent_scope, token_id=None
            )
            return ActivityInstance(
                id=f"{node.id}:{scope.id}",
                parent_activity_instance_id=parent.id,
                activity_id=node.id,
                activity_type=KINDS.activity_type(node),
                activity_name=node.name,
                process_instance_id=w.instance.id,
                process_definition_id=w.instance.definition_id,
                scope_id=scope.id,
            )
        if not isinstance(node, n.SubProcess):
            raise ModificationError(f"{where}: cannot start inside '{container}'")
        tok = w.create_token(node.id, scope_id=parent_scope, parent_id=None)
        if not walker.enter_activity(tok):
            raise ModificationError(
                f"{where}: sub-process '{container}' could not be entered (its boundary "
                "events failed)"
            )
        inputs: dict[str, Any] = {}
        if not self.skip_io_mappings:
            try:
                inputs = v.evaluate(node.inputs, v.visible(w, parent_scope))
            except BpmError as exc:
                raise ModificationError(f"{where}: input mapping of '{container}': {exc}") from exc
        scope = scopes.open_sub_process(w, tok, node, inputs)
        walker.hooks.arm(walker, node.id, scope.id)
        self.started.append(tok.id)
        return ActivityInstance(
            id=f"{node.id}:{tok.id}",
            parent_activity_instance_id=parent.id,
            activity_id=node.id,
            activity_type=KINDS.activity_type(node),
            activity_name=node.name,
            process_instance_id=w.instance.id,
            process_definition_id=w.instance.definition_id,
            token_id=tok.id,
            scope_id=scope.id,
        )

    def add_inner(self, where: str, body: Scope, node: n.Node) -> Token:
        """One more inner instance of an active parallel multi-instance body."""
        assert isinstance(node, n.Activity) and node.loop is not None
        if not node.loop.parallel:
            raise ModificationError(
                f"{where}: '{node.id}' is a sequential multi-instance activity; start "
                f"'{node.id}{MULTI_INSTANCE_BODY}' or cancel its body instead"
            )
        w = self.work
        counts = dict(body.variables)
        index = int(counts.get(multi.INSTANCES, 0))
        counts[multi.INSTANCES] = index + 1
        counts[multi.ACTIVE] = int(counts.get(multi.ACTIVE, 0)) + 1
        collection = node.loop.output_collection
        if collection is not None:
            counts[collection] = [*list(counts.get(collection) or []), None]
        w.set_scope_variables(body, counts, source=node.id, token_id=body.token_id)
        inner = scopes.open_scope(
            w,
            ScopeKind.INNER_INSTANCE,
            node.id,
            parent_id=body.id,
            token_id=None,
            variables={multi.COUNTER: index},
            loop_counter=index,
        )
        return w.create_token(node.id, scope_id=inner.id, parent_id=body.token_id)


def stuck_joins(model: ProcessModel, tokens: Sequence[Token]) -> set[str]:
    """The tokens waiting at parallel joins that no live token can reach any more (a
    token counts where its node, or the sub-process around it, sits in the join's
    container): they would wait for ever. Lenient on purpose: a token that might reach the
    join counts, whichever scope instance it is in."""
    live = [t for t in tokens if t.state in LIVE_TOKEN_STATES and not is_listener(model, t)]
    out: set[str] = set()
    for tok in live:
        node = model.nodes.get(tok.node_id)
        if not (
            isinstance(node, n.ParallelGateway)
            and tok.state is TokenState.WAITING
            and tok.blocked_kind is BlockKind.JOIN
        ):
            continue
        upstream = upstream_of(model, node.id)
        reachable = any(
            _at_level(model, other.node_id, node.container) in upstream
            for other in live
            if other.node_id != node.id
        )
        if not reachable:
            out.add(tok.id)
    return out


def _at_level(model: ProcessModel, node_id: str, container: str | None) -> str | None:
    """The node of ``container`` that ``node_id`` is (or is inside of); None: it is not
    inside ``container``."""
    at: str | None = node_id
    while at is not None:
        node = model.nodes.get(at)
        if node is None:
            return None
        if node.container == container:
            return at
        at = node.container
    return None


def _body_of(activity_id: str) -> str:
    return activity_id.removesuffix(MULTI_INSTANCE_BODY)


def modify(
    core: EngineCore,
    instance_id: str,
    instructions: Sequence[Instruction],
    *,
    skip_io_mappings: bool = False,
    annotation: str | None = None,
    by: str | None = None,
    now: datetime | None = None,
) -> Instance:
    """Apply ``instructions`` to a running instance in one transaction (module docstring).
    :class:`ModificationError` (nothing changed) when one cannot be carried out."""
    given = list(instructions)
    if not given:
        raise ModificationError("give at least one instruction")
    if len(given) > MAX_INSTRUCTIONS:
        raise ModificationError(
            f"{len(given)} instructions in one modification; give at most {MAX_INSTRUCTIONS}"
        )
    for index, ins in enumerate(given):
        if not isinstance(ins, (StartBefore, StartAfter, StartTransition, Cancel)):
            raise ModificationError(
                f"instruction {index}: {type(ins).__name__} is not an instruction (StartBefore, "
                "StartAfter, StartTransition or Cancel)"
            )
    if annotation is not None and len(annotation) > 4000:
        raise ModificationError("the annotation is over 4000 characters")
    with unit_of_work(core, now) as unit:
        work = unit.work(instance_id)
        if work.instance.state not in (InstanceState.ACTIVE, InstanceState.SUSPENDED):
            raise ModificationError(
                f"instance {instance_id} is {work.instance.state.value}; only an active or "
                "suspended instance can be modified"
            )
        walker = unit.walker(work)
        model = walker.model
        work.record(
            "instance_modified",
            payload={
                "by": by or "python",
                "annotation": annotation,
                "instructions": [describe(i) for i in given],
                **({"skip_io_mappings": True} if skip_io_mappings else {}),
            },
        )
        oplog.write(
            unit.conn,
            unit.now,
            OPERATION_TYPE,
            "ProcessInstance",
            by=by,
            instance=work.instance,
            annotation=annotation,
        )
        run = _Run(work, walker, model, skip_io_mappings, before=_empty_tree(work))
        run.before = run.tree()
        stuck_before = stuck_joins(model, list(work.tokens.values()))
        for index, ins in enumerate(given):
            where = f"instruction {index} ({describe(ins)['type']})"
            if isinstance(ins, Cancel):
                run.cancel(where, ins)
            else:
                run.start(where, ins)
        run.prune()
        stuck = stuck_joins(model, list(work.tokens.values())) - stuck_before
        if stuck:
            joins = sorted({work.tokens[t].node_id for t in stuck})
            raise ModificationError(
                f"the modification leaves the parallel join {', '.join(map(repr, joins))} "
                "waiting for ever: no token can reach it any more; cancel its waiting token "
                "too, or start a token before it"
            )
        live = [
            t
            for t in work.tokens.values()
            if t.state in LIVE_TOKEN_STATES and not is_listener(model, t)
        ]
        if not live:
            reason = "every token cancelled by modification"
            walker.terminate_all(reason)
            work.set_state(InstanceState.TERMINATED, reason=reason)
            if work.instance.parent_id is not None:
                terminated_by_operator(walker, reason)
        else:
            walker.run([t for t in run.started if work.tokens[t].state is TokenState.READY])
    return work.instance


def _empty_tree(work: InstanceWork) -> ActivityInstance:
    inst = work.instance
    return ActivityInstance(
        id=inst.id,
        parent_activity_instance_id=None,
        activity_id=inst.definition_id,
        activity_type="processDefinition",
        activity_name=None,
        process_instance_id=inst.id,
        process_definition_id=inst.definition_id,
    )
