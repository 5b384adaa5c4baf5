"""The change set of one transaction on one instance.

An engine operation gets an :class:`InstanceWork` from its unit of work (under the instance
lock), changes work items only through :meth:`InstanceWork.transition` (tokens) and
:meth:`InstanceWork.move` (external tasks, timers, user tasks, incidents), which check the
transition tables of :mod:`bpm.runtime.states` and record the history event, and the unit
of work writes everything in the same transaction. Nothing here does I/O: records this
transaction needs and did not load yet come from a :class:`Loader` the store provides.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from bpm.errors import VariableError
from bpm.runtime.changes import Changes, Item, Loader
from bpm.runtime.records import (
    Compensable,
    ExternalTask,
    HistoryEvent,
    Incident,
    Instance,
    Scope,
    Subscription,
    Timer,
    Token,
    UserTask,
    WorkItem,
)
from bpm.runtime.states import (
    FINAL_INSTANCE_STATES,
    LIVE_TOKEN_STATES,
    BlockKind,
    IncidentState,
    InstanceState,
    ScopeState,
    SubscriptionState,
    TimerState,
    TokenState,
    check_transition,
)
from bpm.runtime.variable_types import Typed, split, types_after
from bpm.runtime.work_scopes import ScopeChanges

DEFAULT_MAX_VARIABLE_BYTES = 256 * 1024
# all the variables of one update (a request, a handler's result) together
DEFAULT_MAX_UPDATE_BYTES = 1024 * 1024
# all the variables of one instance together (its JSON document)
DEFAULT_MAX_INSTANCE_VARIABLE_BYTES = 4 * 1024 * 1024

# The payload key naming the item in its events ("task" as Camunda calls both kinds).
_PAYLOAD_KEY = {"external_task": "task", "user_task": "task"}
ITEM_KINDS: tuple[type[WorkItem], ...] = (
    ExternalTask,
    Timer,
    UserTask,
    Incident,
    Scope,
    Subscription,
    Compensable,
)


def new_id() -> str:
    return str(uuid.uuid4())


def check_variables(
    variables: Any,
    max_bytes: int = DEFAULT_MAX_VARIABLE_BYTES,
    max_total_bytes: int = DEFAULT_MAX_UPDATE_BYTES,
) -> dict[str, Any]:
    """Return ``variables`` as plain JSON or raise :class:`VariableError` saying what is wrong.

    Each value is at most ``max_bytes`` of JSON, all of them together ``max_total_bytes``.
    A :class:`~bpm.runtime.variables.Typed` value stays wrapped (its value checked)."""
    if variables is None:
        return {}
    if not isinstance(variables, dict):
        raise VariableError(
            f"variables must be a JSON object (a dict), not {type(variables).__name__}"
        )
    out: dict[str, Any] = {}
    total = 0
    for name, given in variables.items():
        if not isinstance(name, str) or not name:
            raise VariableError(f"variable names must be non-empty strings, got {name!r}")
        value = given.value if isinstance(given, Typed) else given
        try:
            text = json.dumps(value, allow_nan=False, separators=(",", ":"))
        except (TypeError, ValueError) as exc:
            raise VariableError(
                f"variable '{name}' is not JSON ({exc}); pass str, int, float, bool, None, "
                "lists or dicts of those"
            ) from exc
        if len(text.encode()) > max_bytes:
            raise VariableError(
                f"variable '{name}' is {len(text.encode())} bytes, over the limit of "
                f"{max_bytes}; store large data elsewhere and pass a reference"
            )
        total += len(text.encode()) + len(name.encode())
        if total > max_total_bytes:
            raise VariableError(
                f"the {len(variables)} variables given are over {max_total_bytes} bytes "
                "together (the limit of one update); store large data elsewhere and pass "
                "references"
            )
        out[name] = json.loads(text)
        if isinstance(given, Typed):  # the type travels on to the instance's type map
            out[name] = Typed(out[name], given.type)
    return out


def _json_size(values: dict[str, Any]) -> int:
    return len(json.dumps(values, separators=(",", ":")).encode())


@dataclass
class InstanceWork(ScopeChanges):
    """Everything one transaction changes on one instance, in memory until flushed (the
    scope methods are in :mod:`bpm.runtime.work_scopes`)."""

    instance: Instance
    tokens: dict[str, Token]
    now: datetime
    loader: Loader | None = field(default=None, repr=False)
    max_variable_bytes: int = DEFAULT_MAX_VARIABLE_BYTES
    max_update_bytes: int = DEFAULT_MAX_UPDATE_BYTES
    max_instance_variable_bytes: int = DEFAULT_MAX_INSTANCE_VARIABLE_BYTES
    # The history keeps the values written, not only the names (EngineConfig).
    history_values: bool = False
    events: list[HistoryEvent] = field(default_factory=list)
    token_changes: Changes = field(default_factory=Changes)
    item_changes: dict[type, Changes] = field(
        default_factory=lambda: {kind: Changes() for kind in ITEM_KINDS}
    )
    instance_dirty: bool = False
    # The instance row itself is new: the flush inserts it (start).
    instance_new: bool = False
    # Ready tokens at inline service tasks, to publish after commit (or to run right away).
    to_dispatch: list[str] = field(default_factory=list)
    # External-task topics that became fetchable: long pollers are woken after commit.
    notify: set[str] = field(default_factory=set)
    # Signals thrown by signal throw events: broadcast after commit (bpm.engine.signals)
    # to every instance but the thrower's (name, variables, thrower's instance id), which
    # caught it at once.
    signals: list[tuple[str, dict[str, Any], str]] = field(default_factory=list)
    # Executing tokens whose claim this transaction recorded (see record_claim).
    _claims_recorded: set[str] = field(default_factory=set, repr=False)
    # (kind, token id) pairs whose records are all loaded already.
    _loaded_for: set[tuple[type, str]] = field(default_factory=set, repr=False)
    # The instance's open compensable records are loaded (bpm.runtime.compensation).
    compensables_loaded: bool = field(default=False, repr=False)
    # The last completion order number given to a compensable record (None: not read yet).
    compensable_seq: int | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.token_changes.records = self.tokens

    # -- tokens ---------------------------------------------------------------------------
    def token(self, token_id: str) -> Token:
        return self.tokens[token_id]

    def live_tokens(self) -> list[Token]:
        return [t for t in self.tokens.values() if t.state in LIVE_TOKEN_STATES]

    def create_token(self, node_id: str, *, scope_id: str | None, parent_id: str | None) -> Token:
        """A new token at ``node_id``, already Ready (Created -> Ready is recorded)."""
        tok = Token(
            id=new_id(),
            instance_id=self.instance.id,
            node_id=node_id,
            state=TokenState.CREATED,
            created_at=self.now,
            updated_at=self.now,
            scope_id=scope_id,
            parent_id=parent_id,
        )
        self.tokens[tok.id] = tok
        self.token_changes.new.append(tok.id)
        payload: dict[str, Any] = {}
        if scope_id:
            payload["scope"] = scope_id
            if depth := self.depth(scope_id):
                payload["depth"] = depth  # how far `bpm show` indents it
        self.events.append(
            HistoryEvent(
                instance_id=self.instance.id,
                type="token_created",
                at=self.now,
                token_id=tok.id,
                node_id=node_id,
                to_state=TokenState.CREATED.value,
                payload=payload,
            )
        )
        return self.transition(tok.id, TokenState.READY)

    def transition(
        self,
        token_id: str,
        target: TokenState,
        *,
        blocked: tuple[BlockKind, str] | None = None,
        error: str | None = None,
        payload: dict[str, Any] | None = None,
        **changes: Any,
    ) -> Token:
        """Move a token to ``target`` if the table allows it, and record the event.

        ``Ready -> Executing`` (a claim) is recorded when the attempt ends, with the time of
        the claim: a claim then costs no history write of its own.
        """
        tok = self.tokens[token_id]
        check_transition(f"token {token_id}", tok.state, target)
        kind, blocked_id = blocked if blocked else (None, None)
        if target is TokenState.WAITING and kind is None:
            raise ValueError("a waiting token needs a reason (blocked=(kind, id))")
        if tok.state is TokenState.EXECUTING:
            self.record_claim(tok)
        if target is not TokenState.EXECUTING:
            changes.setdefault("lease_owner", None)
            changes.setdefault("lease_expires_at", None)
        new = replace(
            tok,
            state=target,
            blocked_kind=kind,
            blocked_id=blocked_id,
            error=error if error is not None else tok.error,
            updated_at=self.now,
            **changes,
        )
        self.token_changes.put(token_id, new)
        if target is TokenState.EXECUTING:
            return new
        body = dict(payload or {})
        if kind is not None:
            body["blocked_by"] = {"kind": kind.value, "id": blocked_id}
        if error is not None:
            body["error"] = error
        if "attempt" in changes:
            body["attempt"] = changes["attempt"]
        self.events.append(
            HistoryEvent(
                instance_id=self.instance.id,
                type=f"token_{target.value}",
                at=self.now,
                token_id=token_id,
                node_id=tok.node_id,
                from_state=tok.state.value,
                to_state=target.value,
                payload=body,
            )
        )
        return new

    def set_listening(self, token_id: str, listening: str | None) -> Token:
        """Say which execution listeners a worker runs for the token (no state change:
        see :mod:`bpm.runtime.listening`)."""
        new = replace(self.tokens[token_id], listening=listening)
        self.token_changes.put(token_id, new)
        return new

    def record_claim(self, tok: Token) -> None:
        """Record the claim of an Executing token (once), before its attempt's outcome."""
        if tok.id not in self._claims_recorded:
            self._claims_recorded.add(tok.id)
            self.events.append(claim_event(tok))

    # -- other work items -----------------------------------------------------------------
    def add(self, record: Item) -> Item:
        """A work item this transaction creates (written at flush)."""
        changes = self.item_changes[type(record)]
        changes.records[record.id] = record
        changes.new.append(record.id)
        return record

    def adopt(self, record: Item) -> Item:
        """A record of this instance that the caller loaded itself (e.g. under SKIP LOCKED)."""
        self.item_changes[type(record)].records.setdefault(record.id, record)
        return record

    def item(self, kind: type[Item], item_id: str) -> Item | None:
        """The record ``item_id`` of ``kind`` of this instance, loaded on first use."""
        changes = self.item_changes[kind]
        found: Item | None = changes.records.get(item_id)
        if found is None and self.loader is not None:
            found = self.loader.item(kind, item_id)
            if found is not None and found.instance_id == self.instance.id:
                changes.records[item_id] = found
            else:
                found = None
        return found

    def item_if_loaded(self, kind: type[Item], item_id: str) -> Item | None:
        """The record ``item_id`` of ``kind`` if this change set has it (no database read)."""
        found: Item | None = self.item_changes[kind].records.get(item_id)
        return found

    def items_of(self, kind: type[Item], token_id: str) -> list[Item]:
        """Every record of ``kind`` that belongs to ``token_id`` (loaded once)."""
        changes = self.item_changes[kind]
        if (kind, token_id) not in self._loaded_for:
            self._loaded_for.add((kind, token_id))
            if self.loader is not None:
                for found in self.loader.items(kind, self.instance.id, token_id=token_id):
                    changes.records.setdefault(found.id, found)
        return [r for r in changes.records.values() if r.token_id == token_id]

    def adopt_of_tokens(
        self, kind: type[Item], records: Iterable[Item], token_ids: Iterable[str]
    ) -> None:
        """Records of ``kind`` the caller read itself: every one of ``token_ids`` (so
        :meth:`items_of` reads no more of them), e.g. all of an instance's in one query."""
        changes = self.item_changes[kind]
        for found in records:
            changes.records.setdefault(found.id, found)
        self._loaded_for.update((kind, t) for t in token_ids)

    def move(
        self,
        record: Item,
        target: StrEnum,
        *,
        event: str | None = None,
        payload: Mapping[str, Any] | None = None,
        **changes: Any,
    ) -> Item:
        """Change a work item's state if its table allows it, and record the event
        (``<kind>_<target>`` unless ``event`` names it)."""
        current: Item = self.item_changes[type(record)].records.get(record.id, record)
        check_transition(f"{current.KIND} {current.id}", current.state, target)
        return self.change(
            current,
            event=event or f"{current.KIND}_{target.value}",
            payload=payload,
            state=target,
            **changes,
        )

    def change(
        self, record: Item, *, event: str, payload: Mapping[str, Any] | None = None, **changes: Any
    ) -> Item:
        """Change fields of a work item (a state change goes through :meth:`move`)."""
        current: Item = self.item_changes[type(record)].records.get(record.id, record)
        new = replace(current, **changes)
        self.item_changes[type(record)].put(record.id, new)
        body: dict[str, Any] = {_PAYLOAD_KEY.get(current.KIND, current.KIND): current.id}
        body.update(payload or {})
        self.record(event, token_id=current.token_id, node_id=current.node_id, payload=body)
        return new

    def add_timer(
        self,
        tok: Token,
        node_id: str,
        kind: str,
        fire_at: datetime,
        *,
        record: bool = True,
        payload: Mapping[str, Any] | None = None,
        **extra: Any,
    ) -> Timer:
        """A pending timer of ``tok`` (``extra``: repeat_left, interval_ms), and its
        ``timer_scheduled`` event (with ``payload`` added) unless ``record`` is False: a
        timer fired in the transaction that made it says so in its ``timer_fired``."""
        timer = self.add(
            Timer(
                id=new_id(),
                instance_id=self.instance.id,
                token_id=tok.id,
                node_id=node_id,
                kind=kind,
                state=TimerState.PENDING,
                fire_at=fire_at,
                created_at=self.now,
                **extra,
            )
        )
        if record:
            body = {"timer": timer.id, "kind": kind, "due": fire_at.isoformat()}
            self.record(
                "timer_scheduled",
                token_id=tok.id,
                node_id=node_id,
                payload={**body, **(payload or {})},
            )
        return timer

    def open_incident(
        self,
        tok: Token,
        type_: str,
        message: str,
        *,
        details: str | None = None,
        external_task_id: str | None = None,
    ) -> Incident:
        """Open an incident on ``tok`` (an operator can retry it) and record the event."""
        incident = self.add(
            Incident(
                id=new_id(),
                instance_id=self.instance.id,
                token_id=tok.id,
                node_id=tok.node_id,
                type=type_,
                state=IncidentState.OPEN,
                created_at=self.now,
                message=message,
                details=details,
                external_task_id=external_task_id,
            )
        )
        payload: dict[str, Any] = {"incident": incident.id, "message": message}
        if external_task_id is not None:
            payload["task"] = external_task_id
        self.record("incident_opened", token_id=tok.id, node_id=tok.node_id, payload=payload)
        return incident

    # -- instance ---------------------------------------------------------------------------
    def merge_variables(
        self, updates: Any, *, source: str | None = None, token_id: str | None = None
    ) -> None:
        """Validate and merge ``updates`` into the instance variables (last write wins).

        ``source`` and ``token_id`` say which node and token wrote them, for the trail."""
        clean = check_variables(updates, self.max_variable_bytes, self.max_update_bytes)
        if not clean:
            return
        self.write_variables(clean)
        self.record(
            "variables_updated",
            token_id=token_id,
            node_id=source,
            payload=self.written(clean),
        )

    def written(self, clean: Mapping[str, Any], **payload: Any) -> dict[str, Any]:
        """The payload of an event that wrote ``clean``: the names, and the values when
        the history keeps them."""
        out: dict[str, Any] = {"names": sorted(clean), **payload}
        if self.history_values:
            out["values"] = split(clean)[0]
        return out

    def write_variables(self, clean: dict[str, Any], deleted: tuple[str, ...] = ()) -> None:
        """Set checked variables (plain or :class:`Typed`) and remove ``deleted`` ones;
        the caller records the event."""
        plain, types = split(clean)
        current = self.instance.variables
        values = {k: v for k, v in current.items() if k not in deleted}
        values.update(plain)
        self._check_instance_size(current, values)
        kinds = types_after(self.instance.variable_types, plain, types, deleted)
        self.instance = replace(self.instance, variables=values, variable_types=kinds)
        self.instance_dirty = True

    def _check_instance_size(self, before: dict[str, Any], after: dict[str, Any]) -> None:
        """:class:`VariableError` when a write takes the instance's variables over its
        limit (a write that shrinks an instance already over a lowered limit passes)."""
        size = _json_size(after)
        if size > self.max_instance_variable_bytes and size > _json_size(before):
            raise VariableError(
                f"instance {self.instance.id} would hold {size} bytes of variables, over the "
                f"limit of {self.max_instance_variable_bytes}; delete variables it no longer "
                "needs or store large data elsewhere and pass references"
            )

    def set_state(self, state: InstanceState, **payload: Any) -> None:
        if self.instance.state is state:
            return
        old = self.instance.state
        check_transition(f"instance {self.instance.id}", old, state)
        ended = self.now if state in FINAL_INSTANCE_STATES else None
        self.instance = replace(self.instance, state=state, ended_at=ended)
        self.instance_dirty = True
        self.events.append(
            HistoryEvent(
                instance_id=self.instance.id,
                type=f"instance_{state.value}",
                at=self.now,
                from_state=old.value,
                to_state=state.value,
                payload=payload,
            )
        )

    def record(
        self,
        type_: str,
        *,
        token_id: str | None = None,
        node_id: str | None = None,
        payload: dict[str, Any] | None = None,
    ) -> None:
        """Append a history event that is not a state change of a work item."""
        self.events.append(
            HistoryEvent(
                instance_id=self.instance.id,
                type=type_,
                at=self.now,
                token_id=token_id,
                node_id=node_id,
                payload=payload or {},
            )
        )

    # -- what the flush writes ----------------------------------------------------------------
    def tokens_written(self) -> tuple[list[Token], list[Token]]:
        """(tokens to insert, tokens to update). A token created and ended in this
        transaction (it passed through a gateway or an event) gets no row: its history
        events are all there is to keep of it."""
        new, dirty = self.token_changes.written()
        return [t for t in new if t.state in LIVE_TOKEN_STATES], dirty

    def items_written(self) -> Iterable[tuple[type, list[Any], list[Any]]]:
        """(kind, records to insert, records to update) per kind of work item. A timer
        created and cancelled, or a scope opened and closed, in this transaction gets no
        row."""
        for kind, changes in self.item_changes.items():
            new, dirty = changes.written()
            if kind is Timer:
                new = [t for t in new if t.state is not TimerState.CANCELLED]
            elif kind is Subscription:  # opened and closed in this transaction
                new = [x for x in new if x.state is SubscriptionState.OPEN]
            elif kind is Scope:  # entered and left in this transaction: its events remain
                new = [x for x in new if x.state is ScopeState.ACTIVE]
            if new or dirty:
                yield kind, new, dirty

    @property
    def changed(self) -> bool:
        return bool(
            self.events
            or self.token_changes.new
            or self.token_changes.dirty
            or any(c.new or c.dirty for c in self.item_changes.values())
            or self.instance_dirty
        )


def claim_event(tok: Token) -> HistoryEvent:
    """The ``Ready -> Executing`` event of an executing token's current attempt."""
    return HistoryEvent(
        instance_id=tok.instance_id,
        type="token_executing",
        at=tok.updated_at,
        token_id=tok.id,
        node_id=tok.node_id,
        from_state=TokenState.READY.value,
        to_state=TokenState.EXECUTING.value,
        payload={"attempt": tok.attempt, "worker": tok.lease_owner},
    )
