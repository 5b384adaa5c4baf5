"""The builder's escalation and link events (mixed into :class:`bpm.builder.Process`).

>>> from bpm.builder import Process
>>> model = (
...     Process("escalating")
...     .start("s")
...     .sub_process("work", lambda b: b.start("ws").throw_escalation("late", "LATE")
...                  .user_task("finish").end("we").sequence("ws", "late", "finish", "we"))
...     .boundary_escalation("on_late", "work", escalation_code="LATE", interrupting=False)
...     .user_task("tell").end("told").sequence("on_late", "tell", "told")
...     .end("e")
...     .sequence("s", "work", "e")
...     .build()
... )
"""

from __future__ import annotations

from typing import Self

from bpm.model import nodes as n

__all__ = ["EventMethods"]


class EventMethods:
    """Methods of :class:`bpm.builder.Process` that build escalation and link events."""

    def _add(self, node: n.Node) -> Self:  # pragma: no cover - provided by Process
        raise NotImplementedError

    def throw_escalation(self, id: str, escalation_code: str, *, name: str | None = None) -> Self:
        """An intermediate throw event: escalates ``escalation_code`` to the nearest catcher
        around it (a boundary event of an enclosing sub-process or call activity, or an
        escalation event sub-process), then the token moves on."""
        return self._add(n.EscalationThrowEvent(id, name, escalation_code=escalation_code))

    def boundary_escalation(
        self,
        id: str,
        attached_to: str,
        *,
        escalation_code: str | None = None,
        interrupting: bool = True,
        code_variable: str | None = None,
        name: str | None = None,
    ) -> Self:
        """Catch escalations from inside ``attached_to`` (a sub-process or call activity):
        one ``escalation_code``, or every escalation. ``interrupting=False`` leaves the
        activity running; ``code_variable`` receives the caught code."""
        return self._add(
            n.BoundaryEvent(
                id,
                name,
                attached_to=attached_to,
                cancel_activity=interrupting,
                escalation=True,
                escalation_code=escalation_code,
                code_variable=code_variable,
            )
        )

    def link_throw(self, id: str, link: str, *, name: str | None = None) -> Self:
        """An intermediate link throw event: the token continues at :meth:`link_catch` of
        the same ``link`` name in the same (sub-)process (no outgoing flow)."""
        return self._add(n.LinkThrowEvent(id, name, link=link))

    def link_catch(self, id: str, link: str, *, name: str | None = None) -> Self:
        """An intermediate link catch event: where throws of ``link`` continue (no
        incoming flow)."""
        return self._add(n.LinkCatchEvent(id, name, link=link))
