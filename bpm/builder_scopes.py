"""The builder's scopes: sub-processes, event sub-processes, call activities, inclusive
gateways, multi-instance markers and variable mappings (mixed into
:class:`bpm.builder.Process`).

>>> from bpm.builder import Process
>>> model = (
...     Process("batch")
...     .start("start")
...     .service_task("charge", handler="charge", for_each="orders", as_="order",
...                   collect="receipts")
...     .sub_process("review", lambda s: s.start("rs").user_task("check").end("re")
...                  .sequence("rs", "check", "re"))
...     .end("end")
...     .sequence("start", "charge", "review", "end")
...     .build()
... )
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Self

from bpm.errors import ExpressionError, Problem
from bpm.expressions import to_cel
from bpm.model import nodes as n

__all__ = ["ScopeMethods"]

Mappings = Mapping[str, str]
"""Variable name -> expression (CEL, ``${JUEL}`` or ``=FEEL``)."""


class ScopeMethods:
    """Methods of :class:`bpm.builder.Process` that build scopes."""

    _problems: list[Problem]
    _containers: list[str]

    def _add(self, node: n.Node) -> Self:  # pragma: no cover - provided by Process
        raise NotImplementedError

    def _timer_spec(  # pragma: no cover - provided by Process
        self, id: str, duration: Any, date: Any, cycle: str | None = None
    ) -> n.TimerSpec | None:
        raise NotImplementedError

    # -- expressions ---------------------------------------------------------------------
    def _cel(self, owner: str, what: str, text: str | None) -> str | None:
        if text is None:
            return None
        try:
            return to_cel(str(text))
        except ExpressionError as exc:
            self._problems.append(Problem(f"{what} of '{owner}': {exc}", owner))
            return None

    def _mappings(self, owner: str, given: Mappings | None) -> tuple[n.VariableMapping, ...]:
        out = []
        for target, source in (given or {}).items():
            cel = self._cel(owner, f"mapping '{target}'", source)
            if cel is not None:
                out.append(n.VariableMapping(target, cel))
        return tuple(out)

    def _activity(
        self,
        id: str,
        *,
        for_each: str | None = None,
        as_: str | None = None,
        parallel: bool = True,
        collect: str | None = None,
        output: str | None = None,
        times: int | str | None = None,
        until: str | None = None,
        inputs: Mappings | None = None,
        outputs: Mappings | None = None,
        loop_while: str | None = None,
        test_before: bool = False,
        loop_maximum: int | None = None,
    ) -> dict[str, Any]:
        """The ``loop``, ``inputs`` and ``outputs`` of an activity from builder options:

        ``for_each`` (a collection expression) or ``times`` (a count or an expression)
        makes it multi-instance, ``as_`` names the element variable, ``parallel=False``
        runs the instances one after the other, ``collect`` names the list that gathers
        their outputs in input order (each one's ``output`` expression, or the variables
        it set), ``until`` is the completion condition (over ``nrOfCompletedInstances``,
        ``nrOfInstances``, ``nrOfActiveInstances``, ``loopCounter``...). ``inputs`` and
        ``outputs`` map variables into and out of the activity.

        ``loop_while`` (a condition) and/or ``loop_maximum`` make it a standard loop: it
        runs again while the condition holds (``loopCounter``: iterations done), tested
        after each iteration, or before it too with ``test_before=True``."""
        loop: n.MultiInstance | None = None
        if loop_while is not None or loop_maximum is not None or test_before:
            loop = n.StandardLoop(
                condition=self._cel(id, "loop_while", loop_while),
                test_before=test_before,
                maximum=loop_maximum,
            )
            if for_each is not None or times is not None:
                self._problems.append(
                    Problem(f"'{id}' is a standard loop and multi-instance: choose one", id)
                )
        elif for_each is not None or times is not None:
            loop = n.MultiInstance(
                parallel=parallel,
                cardinality=self._cel(id, "times", None if times is None else str(times)),
                collection=self._cel(id, "for_each", for_each),
                element=as_,
                output_collection=collect,
                output_element=self._cel(id, "output", output),
                completion=self._cel(id, "until", until),
            )
        elif any(x is not None for x in (as_, collect, output, until)):
            self._problems.append(
                Problem(f"'{id}' sets multi-instance options without for_each= or times=", id)
            )
        return {
            "loop": loop,
            "inputs": self._mappings(id, inputs),
            "outputs": self._mappings(id, outputs),
        }

    # -- scopes --------------------------------------------------------------------------
    @contextmanager
    def _inside(self, container: str) -> Iterator[None]:
        self._containers.append(container)
        try:
            yield
        finally:
            self._containers.pop()

    def sub_process(
        self,
        id: str,
        body: Callable[[Self], object],
        *,
        name: str | None = None,
        **options: Any,
    ) -> Self:
        """An embedded sub-process; ``body(builder)`` adds its nodes and flows (a start
        event, what it does, an end event). Takes the multi-instance and mapping options
        of :meth:`_activity`."""
        self._add(n.SubProcess(id, name, **self._activity(id, **options)))
        with self._inside(id):
            body(self)
        return self

    def transaction(
        self,
        id: str,
        body: Callable[[Self], object],
        *,
        name: str | None = None,
        inputs: Mappings | None = None,
        outputs: Mappings | None = None,
    ) -> Self:
        """A transaction sub-process: a sub-process (``body`` adds its nodes) that a
        :meth:`cancel_end` inside it undoes: what else runs inside is cancelled, the
        activities it completed are compensated newest first, then the flow of its
        :meth:`boundary_cancel` is taken (``docs/bpmn.md``)."""
        self._add(
            n.Transaction(
                id, name, inputs=self._mappings(id, inputs), outputs=self._mappings(id, outputs)
            )
        )
        with self._inside(id):
            body(self)
        return self

    def ad_hoc(
        self,
        id: str,
        body: Callable[[Self], object],
        *,
        completion: str | None = None,
        sequential: bool = False,
        cancel_remaining: bool = True,
        active_elements: str | None = None,
        name: str | None = None,
        inputs: Mappings | None = None,
        outputs: Mappings | None = None,
    ) -> Self:
        """An ad-hoc sub-process: ``body`` adds its activities (no start event); those
        without incoming flows start (or those the expression ``active_elements`` lists),
        all at once or one after the other (``sequential``); ``completion`` ends it early,
        cancelling what still runs (``cancel_remaining``)."""
        self._add(
            n.AdHocSubProcess(
                id,
                name,
                inputs=self._mappings(id, inputs),
                outputs=self._mappings(id, outputs),
                completion_condition=self._cel(id, "completion", completion),
                sequential=sequential,
                cancel_remaining=cancel_remaining,
                active_elements=self._cel(id, "active_elements", active_elements),
            )
        )
        with self._inside(id):
            body(self)
        return self

    def cancel_end(self, id: str, *, name: str | None = None) -> Self:
        """A cancel end event (inside :meth:`transaction` only): cancels the transaction."""
        return self._add(n.CancelEndEvent(id, name))

    def boundary_cancel(self, id: str, attached_to: str, *, name: str | None = None) -> Self:
        """The cancel boundary event of transaction ``attached_to``: where the instance
        goes once a cancelled transaction was compensated."""
        return self._add(n.CancelBoundaryEvent(id, name, attached_to=attached_to))

    def event_sub_process(
        self,
        id: str,
        body: Callable[[Self], object],
        *,
        name: str | None = None,
        inputs: Mappings | None = None,
        outputs: Mappings | None = None,
    ) -> Self:
        """An event sub-process of the enclosing (sub-)process: ``body`` adds a start
        event with a trigger (``start(..., duration=...)`` or ``start(..., error=...)``)
        and what follows it. ``inputs`` become its local variables, ``outputs`` are
        written to the enclosing scope when it completes."""
        self._add(
            n.EventSubProcess(
                id,
                name,
                inputs=self._mappings(id, inputs),
                outputs=self._mappings(id, outputs),
            )
        )
        with self._inside(id):
            body(self)
        return self

    def call_activity(
        self,
        id: str,
        process: str,
        *,
        binding: str = "latest",
        version: int | str | None = None,
        inputs: Mappings | None = None,
        outputs: Mappings | None = None,
        all_in: bool | None = None,
        all_out: bool | None = None,
        business_key: str | None = None,
        inherit_business_key: bool = False,
        name: str | None = None,
        **options: Any,
    ) -> Self:
        """Start an instance of ``process`` (a key, or ``${var}``) and wait for it.

        ``binding``: latest, deployment, version (with ``version``) or versionTag.
        Without ``inputs`` every variable is passed in (``all_in``), without ``outputs``
        every variable of the child comes back (``all_out``). ``business_key`` is an
        expression; ``inherit_business_key`` passes the caller's own. Takes the
        multi-instance options of :meth:`_activity` (not its mappings)."""
        try:
            kind = n.CallBinding(binding)
        except ValueError:
            message = f"binding '{binding}' of '{id}': use latest, deployment, version, versionTag"
            self._problems.append(Problem(message, id))
            kind = n.CallBinding.LATEST
        node = n.CallActivity(
            id,
            name,
            called_element=process,
            binding=kind,
            version=None if version is None else str(version),
            call_inputs=self._mappings(id, inputs),
            call_outputs=self._mappings(id, outputs),
            all_in=inputs is None if all_in is None else all_in,
            all_out=outputs is None if all_out is None else all_out,
            business_key=self._cel(id, "business_key", business_key),
            inherit_key=inherit_business_key,
            **self._activity(id, **options),
        )
        return self._add(node)

    def inclusive(self, id: str, *, default: str | None = None, name: str | None = None) -> Self:
        """An inclusive gateway: forks along every true condition (the default flow when
        none is), joins what can still arrive."""
        return self._add(n.InclusiveGateway(id, name, default_flow=default))

    def complex(
        self,
        id: str,
        *,
        activation: str | None = None,
        default: str | None = None,
        name: str | None = None,
    ) -> Self:
        """A complex gateway: forks as an inclusive gateway does; joins when
        ``activation`` (CEL, ``${JUEL}`` or ``=FEEL``; it sees the variables and
        ``activationCount``, the tokens arrived) holds, then consumes the round's later
        tokens without firing again. Without ``activation`` it joins as an inclusive
        gateway does (``docs/bpmn.md``)."""
        condition = self._cel(id, "the activation condition", activation)
        return self._add(
            n.ComplexGateway(id, name, default_flow=default, activation_condition=condition)
        )

    def _start_event(
        self,
        id: str,
        name: str | None,
        *,
        duration: Any = None,
        date: str | datetime | None = None,
        cycle: str | None = None,
        error: bool | str | None = None,
        interrupting: bool = True,
    ) -> n.StartEvent:
        if error is not None and error is not False:
            code = None if error is True else str(error)
            return n.StartEvent(
                id, name, error_start=True, error_code=code, interrupting=interrupting
            )
        if duration is None and date is None and cycle is None:
            return n.StartEvent(id, name, interrupting=interrupting)
        spec = self._timer_spec(id, duration, date, cycle)
        return n.StartEvent(id, name, timer=spec, interrupting=interrupting)


def in_container(node: n.Node, containers: list[str]) -> n.Node:
    """``node`` inside the innermost container being built."""
    if not containers or node.container is not None:
        return node
    return dataclasses.replace(node, container=containers[-1])
