"""The change set of one transaction on one instance.

An engine operation loads an :class:`InstanceWork` under the instance lock, changes tokens
only through :meth:`InstanceWork.transition` (which checks the table and records the history
event), and hands it to the store, which writes everything in the same transaction.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from bpm.errors import VariableError
from bpm.runtime.records import ForkScope, HistoryEvent, Instance, Token
from bpm.runtime.states import (
    FINAL_INSTANCE_STATES,
    LIVE_TOKEN_STATES,
    BlockKind,
    InstanceState,
    TokenState,
    check_transition,
)

DEFAULT_MAX_VARIABLE_BYTES = 256 * 1024


def new_id() -> str:
    return str(uuid.uuid4())


def check_variables(variables: Any, max_bytes: int = DEFAULT_MAX_VARIABLE_BYTES) -> dict[str, Any]:
    """Return ``variables`` as plain JSON or raise :class:`VariableError` saying what is wrong."""
    if variables is None:
        return {}
    if not isinstance(variables, dict):
        raise VariableError(
            f"variables must be a JSON object (a dict), not {type(variables).__name__}"
        )
    out: dict[str, Any] = {}
    for name, value in variables.items():
        if not isinstance(name, str) or not name:
            raise VariableError(f"variable names must be non-empty strings, got {name!r}")
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
        out[name] = json.loads(text)
    return out


@dataclass(frozen=True)
class NewRow:
    """A row another table needs (timer, external task, user task, incident)."""

    table: str
    values: dict[str, Any]


@dataclass(frozen=True)
class RowUpdate:
    """``UPDATE table SET values WHERE`` every ``where`` column equals its value."""

    table: str
    where: dict[str, Any]
    values: dict[str, Any]


@dataclass
class InstanceWork:
    """Everything one transaction changes on one instance, in memory until flushed."""

    instance: Instance
    tokens: dict[str, Token]
    scopes: dict[str, ForkScope]
    now: datetime
    max_variable_bytes: int = DEFAULT_MAX_VARIABLE_BYTES
    events: list[HistoryEvent] = field(default_factory=list)
    new_tokens: list[str] = field(default_factory=list)
    dirty_tokens: set[str] = field(default_factory=set)
    new_scopes: list[str] = field(default_factory=list)
    dirty_scopes: set[str] = field(default_factory=set)
    rows: list[NewRow] = field(default_factory=list)
    updates: list[RowUpdate] = field(default_factory=list)
    instance_dirty: bool = False
    # The instance row itself is new: the flush inserts it (start).
    instance_new: bool = False
    # Ready tokens at inline service tasks, to publish after commit.
    to_dispatch: list[str] = field(default_factory=list)
    # Ids of other rows this transaction created that async listeners care about.
    notify: set[str] = field(default_factory=set)
    # Loads a fork scope on first use: only joins need them, so most steps skip the query.
    scope_loader: Callable[[str], ForkScope | None] | None = field(default=None, repr=False)

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
        self.new_tokens.append(tok.id)
        self._event("token_created", tok, payload={"scope": scope_id} if scope_id else {})
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
        """Move a token to ``target`` if the table allows it, and record the event."""
        tok = self.tokens[token_id]
        check_transition(token_id, tok.state, target)
        kind, blocked_id = blocked if blocked else (None, None)
        if target is TokenState.WAITING and kind is None:
            raise ValueError("a waiting token needs a reason (blocked=(kind, id))")
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
        self.tokens[token_id] = new
        if token_id not in self.new_tokens:
            self.dirty_tokens.add(token_id)
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

    # -- scopes ---------------------------------------------------------------------------
    def open_scope(self, fork_node_id: str, expected: int, parent_id: str | None) -> ForkScope:
        scope = ForkScope(
            id=new_id(),
            instance_id=self.instance.id,
            fork_node_id=fork_node_id,
            expected=expected,
            created_at=self.now,
            parent_id=parent_id,
        )
        self.scopes[scope.id] = scope
        self.new_scopes.append(scope.id)
        return scope

    def scope(self, scope_id: str) -> ForkScope | None:
        """The fork scope ``scope_id`` of this instance, loaded on first use."""
        found = self.scopes.get(scope_id)
        if found is None and self.scope_loader is not None:
            found = self.scope_loader(scope_id)
            if found is not None:
                self.scopes[scope_id] = found
        return found

    def shrink_scope(self, scope_id: str, by: int) -> ForkScope:
        current = self.scope(scope_id)
        if current is None:
            raise KeyError(f"fork scope {scope_id} of instance {self.instance.id} is missing")
        scope = replace(current, expected=current.expected - by)
        self.scopes[scope_id] = scope
        if scope_id not in self.new_scopes:
            self.dirty_scopes.add(scope_id)
        return scope

    # -- instance -------------------------------------------------------------------------
    def merge_variables(
        self, updates: Any, *, source: str | None = None, token_id: str | None = None
    ) -> None:
        """Validate and merge ``updates`` into the instance variables (last write wins).

        ``source`` and ``token_id`` say which node and token wrote them, for the trail."""
        clean = check_variables(updates, self.max_variable_bytes)
        if not clean:
            return
        self.instance = replace(self.instance, variables={**self.instance.variables, **clean})
        self.instance_dirty = True
        self.record(
            "variables_updated",
            token_id=token_id,
            node_id=source,
            payload={"names": sorted(clean)},
        )

    def set_state(self, state: InstanceState, **payload: Any) -> None:
        if self.instance.state is state:
            return
        old = self.instance.state
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

    # -- other rows and events -------------------------------------------------------------
    def add_row(self, table: str, **values: Any) -> str:
        values.setdefault("id", new_id())
        self.rows.append(NewRow(table, values))
        return str(values["id"])

    def add_timer(
        self,
        tok: Token,
        node_id: str,
        kind: str,
        fire_at: datetime,
        *,
        state: str = "pending",
        **extra: Any,
    ) -> str:
        """A timer row for ``tok`` (``extra``: repeat_left, interval_ms, fired_at)."""
        return self.add_row(
            "timer",
            instance_id=self.instance.id,
            token_id=tok.id,
            node_id=node_id,
            kind=kind,
            state=state,
            fire_at=fire_at,
            created_at=self.now,
            **extra,
        )

    def open_incident(
        self,
        tok: Token,
        type_: str,
        message: str,
        *,
        details: str | None = None,
        external_task_id: str | None = None,
    ) -> str:
        """Open an incident on ``tok`` (an operator can retry it) and record the event."""
        incident_id = self.add_row(
            "incident",
            instance_id=self.instance.id,
            token_id=tok.id,
            node_id=tok.node_id,
            type=type_,
            state="open",
            message=message,
            details=details,
            external_task_id=external_task_id,
            created_at=self.now,
        )
        payload: dict[str, Any] = {"incident": incident_id, "message": message}
        if external_task_id is not None:
            payload["task"] = external_task_id
        self.record("incident_opened", token_id=tok.id, node_id=tok.node_id, payload=payload)
        return incident_id

    def update_rows(self, table: str, where: dict[str, Any], **values: Any) -> None:
        """Update rows of another table in this transaction (e.g. cancel a timer)."""
        self.updates.append(RowUpdate(table, where, values))

    def record(
        self,
        type_: str,
        *,
        token_id: str | None = None,
        node_id: str | None = None,
        payload: dict[str, Any] | None = None,
    ) -> None:
        """Append a history event that is not a token transition."""
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

    def _event(self, type_: str, tok: Token, payload: dict[str, Any]) -> None:
        self.events.append(
            HistoryEvent(
                instance_id=self.instance.id,
                type=type_,
                at=self.now,
                token_id=tok.id,
                node_id=tok.node_id,
                to_state=tok.state.value,
                payload=payload,
            )
        )

    @property
    def changed(self) -> bool:
        return (
            bool(self.events or self.new_tokens or self.dirty_tokens or self.rows or self.updates)
            or self.instance_dirty
        )
