"""The builder's message and signal events and event-based gateways (mixed into
:class:`bpm.builder.Process`).

>>> from bpm.builder import Process
>>> model = (
...     Process("payment")
...     .start("start")
...     .event_gateway("wait")
...     .receive_message("paid", "payment-received", correlation_key="orderId")
...     .timer("too_late", duration="P1D")
...     .end("done").end("cancelled")
...     .sequence("start", "wait")
...     .flow("wait", "paid").flow("wait", "too_late")
...     .flow("paid", "done").flow("too_late", "cancelled")
...     .build()
... )
"""

from __future__ import annotations

from typing import Any, Self

from bpm.builder_scopes import ScopeMethods
from bpm.errors import ExpressionError, Problem
from bpm.expressions import to_cel
from bpm.model import nodes as n

__all__ = ["MessageMethods"]


class MessageMethods(ScopeMethods):
    """Methods of :class:`bpm.builder.Process` that build message and signal events."""

    def _message(self, owner: str, name: str, correlation_key: str | None) -> n.EventRef:
        key: str | None = None
        if correlation_key is not None:
            try:
                key = to_cel(correlation_key)
            except ExpressionError as exc:
                self._problems.append(Problem(f"correlation key of '{owner}': {exc}", owner))
        return n.EventRef(n.EventKind.MESSAGE, name, key)

    def receive_message(
        self, id: str, message: str, *, correlation_key: str | None = None, name: str | None = None
    ) -> Self:
        """An intermediate catch event that waits for ``message``; ``correlation_key``
        (CEL over the variables, evaluated when the wait opens) must equal the key the
        message is correlated with."""
        return self._add(n.CatchEvent(id, name, event=self._message(id, message, correlation_key)))

    def receive_task(
        self,
        id: str,
        message: str,
        *,
        correlation_key: str | None = None,
        name: str | None = None,
        **options: Any,
    ) -> Self:
        """A receive task (an activity: it may have boundary events) waiting for ``message``."""
        ref = self._message(id, message, correlation_key)
        return self._add(n.ReceiveTask(id, name, event=ref, **self._activity(id, **options)))

    def message_start(
        self,
        id: str,
        message: str,
        *,
        interrupting: bool = True,
        correlation_key: str | None = None,
        name: str | None = None,
    ) -> Self:
        """A message start event: correlating ``message`` starts an instance (or, inside an
        event sub-process, starts it; ``interrupting=False`` runs it beside its scope)."""
        ref = self._message(id, message, correlation_key)
        return self._add(n.StartEvent(id, name, event=ref, interrupting=interrupting))

    def boundary_message(
        self,
        id: str,
        attached_to: str,
        message: str,
        *,
        correlation_key: str | None = None,
        interrupting: bool = True,
        name: str | None = None,
    ) -> Self:
        """A message boundary event on activity ``attached_to``."""
        ref = self._message(id, message, correlation_key)
        return self._add(
            n.BoundaryEvent(
                id, name, attached_to=attached_to, cancel_activity=interrupting, event=ref
            )
        )

    def receive_signal(self, id: str, signal: str, *, name: str | None = None) -> Self:
        """An intermediate catch event that waits for the broadcast ``signal``."""
        return self._add(n.CatchEvent(id, name, event=n.EventRef(n.EventKind.SIGNAL, signal)))

    def signal_start(
        self, id: str, signal: str, *, interrupting: bool = True, name: str | None = None
    ) -> Self:
        """A signal start event: broadcasting ``signal`` starts an instance (or its event
        sub-process)."""
        ref = n.EventRef(n.EventKind.SIGNAL, signal)
        return self._add(n.StartEvent(id, name, event=ref, interrupting=interrupting))

    def boundary_signal(
        self,
        id: str,
        attached_to: str,
        signal: str,
        *,
        interrupting: bool = True,
        name: str | None = None,
    ) -> Self:
        """A signal boundary event on activity ``attached_to``."""
        ref = n.EventRef(n.EventKind.SIGNAL, signal)
        return self._add(
            n.BoundaryEvent(
                id, name, attached_to=attached_to, cancel_activity=interrupting, event=ref
            )
        )

    def throw_signal(self, id: str, signal: str, *, name: str | None = None) -> Self:
        """An intermediate throw (or, without outgoing flows, end) event broadcasting
        ``signal`` after the transaction commits."""
        return self._add(n.SignalThrow(id, name, signal=signal))

    def _condition(
        self, owner: str, condition: str, variable_name: str | None, variable_events: str
    ) -> n.EventRef:
        text = ""  # none: refused by the model's checks, naming the event
        try:
            text = to_cel(condition) if condition.strip() else ""
        except ExpressionError as exc:
            self._problems.append(Problem(f"condition of '{owner}': {exc}", owner))
        events = tuple(e.strip().lower() for e in variable_events.split(",") if e.strip())
        bad = [e for e in events if e not in ("create", "update", "delete")]
        if bad:
            self._problems.append(
                Problem(
                    f"variable_events of '{owner}' names {', '.join(bad)}: give some of "
                    "create, update, delete",
                    owner,
                )
            )
        return n.EventRef(
            n.EventKind.CONDITIONAL,
            variable_name or "",
            condition=text,
            variable_events=tuple(dict.fromkeys(events)),
        )

    def wait_condition(
        self,
        id: str,
        condition: str,
        *,
        variable_name: str | None = None,
        variable_events: str = "",
        name: str | None = None,
    ) -> Self:
        """An intermediate conditional catch event: the token passes when ``condition``
        (CEL, ``${JUEL}`` or ``=FEEL``) holds, at once or on a later variable change
        (only of ``variable_name``, only of the ``variable_events`` given: "create",
        "update", "delete", comma separated)."""
        ref = self._condition(id, condition, variable_name, variable_events)
        return self._add(n.CatchEvent(id, name, event=ref))

    def condition_start(
        self,
        id: str,
        condition: str,
        *,
        interrupting: bool = True,
        variable_name: str | None = None,
        variable_events: str = "",
        name: str | None = None,
    ) -> Self:
        """A conditional start event of an event sub-process: it starts when ``condition``
        holds as its scope starts or on a variable change the scope sees."""
        ref = self._condition(id, condition, variable_name, variable_events)
        return self._add(n.StartEvent(id, name, event=ref, interrupting=interrupting))

    def boundary_condition(
        self,
        id: str,
        attached_to: str,
        condition: str,
        *,
        interrupting: bool = True,
        variable_name: str | None = None,
        variable_events: str = "",
        name: str | None = None,
    ) -> Self:
        """A conditional boundary event on ``attached_to``: fires when ``condition`` holds
        as the activity is entered or on a variable change it sees (interrupting: the
        activity is cancelled; otherwise once per change that satisfies it)."""
        ref = self._condition(id, condition, variable_name, variable_events)
        return self._add(
            n.BoundaryEvent(
                id, name, attached_to=attached_to, cancel_activity=interrupting, event=ref
            )
        )

    def event_gateway(self, id: str, *, name: str | None = None) -> Self:
        """An event-based gateway: flow it to message, signal or timer catch events (or
        receive tasks); the first that happens wins, the others are cancelled."""
        return self._add(n.EventBasedGateway(id, name))
