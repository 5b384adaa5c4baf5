"""What the runtime's mechanisms and the kinds see of the walker (:class:`Walk`), and
what the unit of work hands it (:class:`Relatives`, :class:`Decider`).

The walker (:mod:`bpm.runtime.walker`) calls the mechanisms (scopes, timers, messages,
calls...); they take it as a :class:`Walk`, declared here, below both, so that no
mechanism imports the walker back: imports run one way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from bpm.runtime.records import ProcessDefinition, Scope, Timer, Token
from bpm.runtime.states import ScopeKind, TokenState
from bpm.runtime.work import InstanceWork

__all__ = [
    "Behaviour",
    "Decided",
    "Decider",
    "Hooks",
    "Relatives",
    "SettleUnit",
    "TimerHooks",
    "Walk",
]


class StartEventSubProcess(Protocol):
    """Runs the event sub-process of ``trigger`` in scope ``region``."""

    def __call__(
        self, walker: Walk, trigger: n.StartEvent, region: str | None, *, parent_token: str | None
    ) -> None: ...


class SettleUnit(Protocol):
    """Runs when a unit of work is about to be written, over every instance it changed
    (``works``: asked again, as firing may change more), each walked by ``walker_of``;
    ``before``: the names of each loaded instance's variables as it was read."""

    def __call__(
        self,
        works: Callable[[], Iterable[InstanceWork]],
        walker_of: Callable[[InstanceWork], Walk],
        before: Mapping[str, frozenset[str]],
    ) -> None: ...


@dataclass(frozen=True)
class TimerHooks:
    """A kind of timer that a mechanism above the timers owns (an event sub-process's
    timer start, an event-based gateway's timer): whether the token still waits for it,
    and what firing it does."""

    still_waits: Callable[[Walk, Token, Timer], bool]
    fire: Callable[[Walk, Token, Timer], None]


@dataclass(frozen=True)
class Hooks:
    """What the walker and the shared mechanisms call without naming the module that
    does it, so that imports run one way (the registry, :mod:`bpm.kinds`, hands them):

    ``arm``/``disarm`` the listeners of the event sub-processes drawn in a container
    (``arm(walker, container, scope_id)``, ``disarm(walker, scope_id)``);
    ``start_event_subprocess`` runs one; ``start_loop`` opens a multi-instance body;
    ``release_joins`` fires an inclusive join nothing can reach any more (True: it did);
    ``settlers`` complete a scope no token is left in, by its kind; ``timers`` fire the
    timers of the kinds they name; ``settle_unit`` runs before a unit of work is written
    (conditional events evaluate the variable changes of the unit there).
    """

    arm: Callable[[Walk, str | None, str | None], None]
    disarm: Callable[[Walk, str | None], None]
    start_event_subprocess: StartEventSubProcess
    start_loop: Callable[[Walk, Token, n.Activity], None]
    release_joins: Callable[[Walk], bool]
    settlers: Mapping[ScopeKind, Callable[[Walk, Scope], None]] = field(default_factory=dict)
    timers: Mapping[str, TimerHooks] = field(default_factory=dict)
    settle_unit: SettleUnit | None = None


class Walk(Protocol):
    """The walker of one instance in one transaction, as the mechanisms and the kinds'
    behaviours use it (see :class:`bpm.runtime.walker.Walker` for each operation)."""

    work: InstanceWork
    model: ProcessModel
    terminating: bool
    relatives: Relatives | None
    decider: Decider | None
    hooks: Hooks

    def run(self, token_ids: Iterable[str] = ()) -> None: ...

    def variables(self, tok: Token) -> dict[str, Any]: ...

    def write_variables(self, tok: Token, updates: Any, *, local: bool = False) -> None: ...

    def outer_scope(self, tok: Token) -> str | None: ...

    def leave(
        self,
        tok: Token,
        flows: Iterable[n.Flow] | None = None,
        *,
        scope_id: str | None = None,
        keep_scope: bool = True,
    ) -> list[Token]: ...

    def listen_last(
        self,
        tok: Token,
        flows: Iterable[n.Flow] | None = None,
        *,
        scope_id: str | None = None,
        keep_scope: bool = True,
        again: bool = False,
    ) -> bool: ...

    def continue_tokens(self, tokens: Iterable[Token]) -> None: ...

    def cancel_boundaries(self, tok: Token) -> None: ...

    def stop_token(
        self, tok: Token, target: TokenState = TokenState.TERMINATED, **kw: Any
    ) -> None: ...

    def cancel_wait(self, tok: Token) -> None: ...

    def terminate_all(self, reason: str, *, except_token: str | None = None) -> None: ...

    def settle_instance(self) -> None: ...

    def fail_token(
        self, tok: Token, error: str, *, incident_type: str = "failedGateway"
    ) -> None: ...

    def enter_activity(self, tok: Token) -> bool: ...

    def is_inner(self, tok: Token) -> bool: ...


class Relatives(Protocol):
    """The other instances of a call tree, as the unit of work provides them."""

    @property
    def max_depth(self) -> int:
        """How deep call activities may nest."""
        ...

    def walker_of(self, instance_id: str) -> Walk | None:
        """Lock (if not yet) and load an instance of a call tree this transaction holds."""
        ...

    def called_definition(
        self, node: n.CallActivity, key: str, caller_definition_id: str
    ) -> ProcessDefinition | None:
        """The definition a call activity starts (by its binding), or None."""
        ...

    def start_child(
        self,
        definition: ProcessDefinition,
        caller: Walk,
        token: Token,
        child_id: str,
        variables: dict[str, Any],
        business_key: str | None,
    ) -> Walk:
        """Create the child instance and walk it to its first wait states."""
        ...


@dataclass(frozen=True)
class Decided:
    """An evaluated decision, not yet recorded: the variables to write, what the
    instance's history says of it, and the decision history to write (the decider's)."""

    updates: dict[str, Any]
    payload: dict[str, Any]
    history: tuple[Any, ...] = ()


class Decider(Protocol):
    """Deployed decisions, evaluated in the walker's transaction."""

    def decide(
        self,
        walker: Walk,
        tok: Token,
        node: n.DecisionTask,
        key: str,
        variables: Mapping[str, Any],
    ) -> Decided:
        """Evaluate decision ``key`` (by ``node``'s binding) and map its result; raises
        :class:`~bpm.errors.BpmError`. Nothing is written until :meth:`record`."""
        ...

    def record(self, decided: Decided) -> None:
        """Write the decision history of ``decided`` (in the same transaction)."""
        ...


Behaviour = Callable[[Walk, Token, Any], None]
"""What a token arriving at a node of one kind does (each kind's ``behave`` facet)."""
