"""The activity instance tree of a running instance, in Camunda 7's terms (issue 22).

Camunda shows where an instance stands as a tree: the process instance at the root, an
*activity instance* for each activity a token is in (a sub-process holds the activity
instances inside it, a multi-instance activity's body ``X#multiInstanceBody`` holds one
activity instance per inner instance) and a *transition instance* for each token that
waits to run an asynchronous step. Here that is:

- a live token at a node is an activity instance ``node:token`` (its ``executionIds`` the
  token), but a token at a step waiting for (or run by, or waiting to retry on) a worker,
  or failed with an incident, is a transition instance (id and ``executionId``: the token):
  inline steps always run in their own transaction, Camunda's ``asyncBefore``;
- a token that waits for a sub-process's scope is that sub-process's activity instance; a
  token that waits for a multi-instance body is the body ``X#multiInstanceBody:token``, and
  the inner instances' tokens are its children;
- an event sub-process that runs is an activity instance ``node:scope`` (no token opens it);
- tokens that listen at event sub-processes' start events are no activity instances (as in
  Camunda, they are event subscriptions); forks, activities' own variables and compensation
  runs are no level of the tree.

Ids are made of token and scope ids, so they are the same on every call while the token
or scope lives: :mod:`bpm.engine.modification` cancels by them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from bpm.engine.core import EngineCore
from bpm.errors import NotFound
from bpm.kinds import KINDS
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from bpm.runtime.records import Incident, Instance, Scope, Token
from bpm.runtime.states import SUBSCRIBED, BlockKind, ScopeKind, TokenState
from bpm.store import activity_tree as tree_store

MULTI_INSTANCE_BODY = "#multiInstanceBody"
"""What Camunda appends to an activity's id for the body of its multi-instance loop."""

ROOT_TYPE = "processDefinition"
BODY_TYPE = "multiInstanceBody"

_REGIONS = frozenset(
    {
        ScopeKind.SUBPROCESS,
        ScopeKind.EVENT_SUBPROCESS,
        ScopeKind.INNER_INSTANCE,
        ScopeKind.MULTI_INSTANCE,
    }
)
_LISTENS = frozenset({BlockKind.TIMER, *SUBSCRIBED})
_TRANSIT = frozenset({TokenState.CREATED, TokenState.READY, TokenState.EXECUTING})


@dataclass(frozen=True)
class IncidentRef:
    """An incident of an activity or transition instance (Camunda's
    ``ActivityInstanceIncidentDto``: the incident and the instance it is on)."""

    id: str
    parent_activity_instance_id: str


@dataclass(frozen=True)
class TransitionInstance:
    """A token waiting to run an asynchronous step (Camunda's ``TransitionInstanceDto``)."""

    id: str
    parent_activity_instance_id: str
    activity_id: str
    activity_type: str
    activity_name: str | None
    process_instance_id: str
    process_definition_id: str
    execution_id: str
    incident_ids: tuple[str, ...] = ()
    incidents: tuple[IncidentRef, ...] = ()
    token_id: str = ""
    """The token (same as ``execution_id``)."""


@dataclass(frozen=True)
class ActivityInstance:
    """One node of the tree (Camunda's ``ActivityInstanceDto``); the root is the process
    instance itself (``activity_id``: the definition id, type ``processDefinition``)."""

    id: str
    parent_activity_instance_id: str | None
    activity_id: str
    activity_type: str
    activity_name: str | None
    process_instance_id: str
    process_definition_id: str
    child_activity_instances: tuple[ActivityInstance, ...] = ()
    child_transition_instances: tuple[TransitionInstance, ...] = ()
    execution_ids: tuple[str, ...] = ()
    incident_ids: tuple[str, ...] = ()
    incidents: tuple[IncidentRef, ...] = ()
    token_id: str | None = None
    """The token this activity instance is (None: the root, or an event sub-process)."""
    scope_id: str | None = None
    """The scope this activity instance holds (a sub-process, body, event sub-process)."""

    def walk(self) -> Iterable[ActivityInstance]:
        """This activity instance and every one below it, depth first."""
        yield self
        for child in self.child_activity_instances:
            yield from child.walk()

    def transitions(self) -> Iterable[TransitionInstance]:
        """Every transition instance of the tree below (and at) this one."""
        for node in self.walk():
            yield from node.child_transition_instances

    def find(self, instance_id: str) -> ActivityInstance | None:
        """The activity instance ``instance_id`` in this tree (None: not in it)."""
        return next((x for x in self.walk() if x.id == instance_id), None)


def is_listener(model: ProcessModel, tok: Token) -> bool:
    """A token waiting at an event sub-process's start event for its trigger."""
    if tok.state is not TokenState.WAITING or tok.blocked_kind not in _LISTENS:
        return False
    return model.event_start(tok.node_id) is not None


def is_transition(tok: Token) -> bool:
    """Whether a live token is a transition instance (see the module docstring)."""
    return (
        tok.state in _TRANSIT
        or tok.state is TokenState.FAILED
        or (tok.state is TokenState.WAITING and tok.blocked_kind is BlockKind.RETRY_BACKOFF)
    )


def token_instance_id(tok: Token, body: bool = False) -> str:
    """The activity instance id of a token (``body``: it waits for a multi-instance body)."""
    if body:
        return f"{tok.node_id}{MULTI_INSTANCE_BODY}:{tok.id}"
    return f"{tok.node_id}:{tok.id}"


class _Builder:
    def __init__(
        self,
        instance: Instance,
        model: ProcessModel,
        tokens: Iterable[Token],
        scopes: Iterable[Scope],
        activity_type: Callable[[n.Node | None], str],
    ) -> None:
        self.instance = instance
        self.model = model
        self.activity_type = activity_type
        self.scopes = {s.id: s for s in scopes}
        self.tokens = [t for t in tokens if not is_listener(model, t)]
        self.by_id = {t.id: t for t in self.tokens}
        self.root_id = instance.id

    def region(self, scope_id: str | None) -> Scope | None:
        seen: set[str] = set()
        while scope_id is not None and scope_id not in seen:
            seen.add(scope_id)
            scope = self.scopes.get(scope_id)
            if scope is None:
                return None
            if scope.kind in _REGIONS:
                return scope
            scope_id = scope.parent_id
        return None

    def own_scope(self, tok: Token) -> str | None:
        """The scope ``tok``'s node sits in: outside the activity's own variables."""
        scope = self.scopes.get(tok.scope_id or "")
        if scope is not None and scope.kind is ScopeKind.ACTIVITY and scope.token_id == tok.id:
            return scope.parent_id
        return tok.scope_id

    def parent_of_region(self, region: Scope | None) -> str:
        """The activity instance id a region's tokens hang under."""
        if region is None:
            return self.root_id
        if region.kind is ScopeKind.EVENT_SUBPROCESS:
            return f"{region.node_id}:{region.id}"
        if region.kind in (ScopeKind.INNER_INSTANCE, ScopeKind.MULTI_INSTANCE):
            body = region if region.kind is ScopeKind.MULTI_INSTANCE else None
            if body is None:
                body = self.scopes.get(region.parent_id or "")
            opener = self.by_id.get(body.token_id or "") if body is not None else None
            if opener is not None:
                return token_instance_id(opener, body=True)
            return self.parent_of_region(self.region(body.parent_id if body else None))
        opener = self.by_id.get(region.token_id or "")
        if opener is not None:
            return token_instance_id(opener)
        return self.parent_of_region(self.region(region.parent_id))

    def build(self, incidents: Iterable[Incident]) -> ActivityInstance:
        inst = self.instance
        # token id -> its open incidents
        by_token: dict[str, list[str]] = defaultdict(list)
        for incident in incidents:
            by_token[incident.token_id].append(incident.id)
        rows: list[tuple[str, str, dict[str, object]]] = []  # (kind, parent, fields)
        for tok in self.tokens:
            parent = self.parent_of_region(self.region(self.own_scope(tok)))
            node = self.model.nodes.get(tok.node_id)
            name = node.name if node is not None else None
            waits_for = self.scopes.get(tok.blocked_id or "")
            body = (
                tok.state is TokenState.WAITING
                and tok.blocked_kind is BlockKind.SCOPE
                and waits_for is not None
                and waits_for.kind is ScopeKind.MULTI_INSTANCE
            )
            if is_transition(tok):
                rows.append(
                    (
                        "transition",
                        parent,
                        {"tok": tok, "id": tok.id, "name": name, "type": self.activity_type(node)},
                    )
                )
                continue
            rows.append(
                (
                    "activity",
                    parent,
                    {
                        "tok": tok,
                        "id": token_instance_id(tok, body),
                        "activity_id": tok.node_id + (MULTI_INSTANCE_BODY if body else ""),
                        "type": BODY_TYPE if body else self.activity_type(node),
                        "name": name,
                        "scope": waits_for.id if waits_for is not None else None,
                    },
                )
            )
        for scope in self.scopes.values():
            if scope.kind is ScopeKind.EVENT_SUBPROCESS:
                node = self.model.nodes.get(scope.node_id)
                rows.append(
                    (
                        "activity",
                        self.parent_of_region(self.region(scope.parent_id)),
                        {
                            "tok": None,
                            "id": f"{scope.node_id}:{scope.id}",
                            "activity_id": scope.node_id,
                            "type": self.activity_type(node),
                            "name": node.name if node is not None else None,
                            "scope": scope.id,
                        },
                    )
                )
        children: dict[str, list[dict[str, object]]] = defaultdict(list)
        transitions: dict[str, list[dict[str, object]]] = defaultdict(list)
        for kind, parent, fields in rows:
            (transitions if kind == "transition" else children)[parent].append(fields)

        def refs(tok: object, owner: str) -> tuple[tuple[str, ...], tuple[IncidentRef, ...]]:
            ids = tuple(by_token.get(tok.id, ())) if isinstance(tok, Token) else ()
            return ids, tuple(IncidentRef(i, owner) for i in ids)

        def make(fields: dict[str, object], parent: str, seen: frozenset[str]) -> ActivityInstance:
            own = str(fields["id"])
            tok = fields["tok"]
            ids, incs = refs(tok, own)
            scope = fields.get("scope")
            return ActivityInstance(
                id=own,
                parent_activity_instance_id=parent,
                activity_id=str(fields["activity_id"]),
                activity_type=str(fields["type"]),
                activity_name=fields["name"] if isinstance(fields["name"], str) else None,
                process_instance_id=inst.id,
                process_definition_id=inst.definition_id,
                child_activity_instances=tuple(
                    make(c, own, seen | {own}) for c in children.get(own, ()) if own not in seen
                ),
                child_transition_instances=trans(own),
                execution_ids=(tok.id,) if isinstance(tok, Token) else (str(scope),),
                incident_ids=ids,
                incidents=incs,
                token_id=tok.id if isinstance(tok, Token) else None,
                scope_id=scope if isinstance(scope, str) else None,
            )

        def trans(parent: str) -> tuple[TransitionInstance, ...]:
            out = []
            for fields in transitions.get(parent, ()):
                tok = fields["tok"]
                assert isinstance(tok, Token)
                ids, incs = refs(tok, tok.id)
                out.append(
                    TransitionInstance(
                        id=tok.id,
                        parent_activity_instance_id=parent,
                        activity_id=tok.node_id,
                        activity_type=str(fields["type"]),
                        activity_name=fields["name"] if isinstance(fields["name"], str) else None,
                        process_instance_id=inst.id,
                        process_definition_id=inst.definition_id,
                        execution_id=tok.id,
                        incident_ids=ids,
                        incidents=incs,
                        token_id=tok.id,
                    )
                )
            return tuple(out)

        return ActivityInstance(
            id=inst.id,
            parent_activity_instance_id=None,
            activity_id=inst.definition_id,
            activity_type=ROOT_TYPE,
            activity_name=self.model.name or inst.definition_key,
            process_instance_id=inst.id,
            process_definition_id=inst.definition_id,
            child_activity_instances=tuple(
                make(c, inst.id, frozenset({inst.id})) for c in children.get(inst.id, ())
            ),
            child_transition_instances=trans(inst.id),
            execution_ids=(inst.id,),
        )


def build_tree(
    instance: Instance,
    model: ProcessModel,
    tokens: Iterable[Token],
    scopes: Iterable[Scope],
    incidents: Iterable[Incident],
    activity_type: Callable[[n.Node | None], str],
) -> ActivityInstance:
    """The activity instance tree of ``instance`` from its live tokens, active scopes and
    open incidents (pure; ``activity_type``: Camunda's ``activityType`` of a node)."""
    return _Builder(instance, model, tokens, scopes, activity_type).build(incidents)


def activity_instances(core: EngineCore, instance_id: str) -> ActivityInstance:
    """The activity instance tree of an instance, read in one snapshot (an ended instance:
    the root alone). :class:`NotFound` when there is no such instance."""
    with core.db.connect() as conn:
        state = tree_store.live_state(conn, instance_id)
        if state is None:
            raise NotFound(f"process instance {instance_id} does not exist")
        model = core.model(conn, state.instance.definition_id)
    if state.instance.ended:
        return build_tree(state.instance, model, (), (), (), KINDS.activity_type)
    return build_tree(
        state.instance, model, state.tokens, state.scopes, state.incidents, KINDS.activity_type
    )
