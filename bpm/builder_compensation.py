"""The builder's compensation: handlers, compensation boundary and throw events (mixed
into :class:`bpm.builder.Process`).

>>> from bpm.builder import Process
>>> from bpm.retry import RetryPolicy
>>> model = (
...     Process("order")
...     .start("start")
...     .service_task("reserve", handler="reserve-stock", compensate_with="release-stock")
...     .service_task("charge", handler="charge-card", compensate_with="refund-card",
...                   retry=RetryPolicy.fixed(3, 2).compensate_on_failure())
...     .end("end")
...     .sequence("start", "reserve", "charge", "end")
...     .build()
... )
"""

from __future__ import annotations

from typing import Self

from bpm.errors import Problem
from bpm.model import nodes as n
from bpm.retry import RetryPolicy

__all__ = ["CompensationMethods", "handler_id"]


def handler_id(activity: str) -> str:
    """The id of the handler node ``compensate_with=`` adds for ``activity``."""
    return f"{activity}.compensate"


class CompensationMethods:
    """Methods of :class:`bpm.builder.Process` that build compensation."""

    _problems: list[Problem]

    def _add(self, node: n.Node) -> Self:  # pragma: no cover - provided by Process
        raise NotImplementedError

    def _compensate_with(
        self,
        activity: str,
        handler: str | None,
        topic: str | None,
        retry: RetryPolicy | None,
    ) -> None:
        """A handler node and the compensation boundary event that names it."""
        if handler is None and topic is None:
            return
        if handler is not None and topic is not None:
            self._problems.append(
                Problem(
                    f"'{activity}' has both compensate_with and compensate_topic: keep one",
                    activity,
                )
            )
            return
        node_id = handler_id(activity)
        self._add(
            n.ServiceTask(
                node_id,
                f"compensate {activity}",
                handler=handler,
                topic=topic,
                retry=retry,
                for_compensation=True,
            )
        )
        self.boundary_compensation(f"{activity}.compensation", activity, handler=node_id)

    def boundary_compensation(
        self, id: str, attached_to: str, *, handler: str, name: str | None = None
    ) -> Self:
        """A compensation boundary event on ``attached_to`` whose handler is the node
        ``handler`` (a task added with ``for_compensation=True``): when the activity has
        completed and compensation is thrown, the handler runs."""
        return self._add(
            n.BoundaryEvent(id, name, attached_to=attached_to, compensate_with=handler)
        )

    def compensate(self, id: str, *, activity: str | None = None, name: str | None = None) -> Self:
        """An intermediate compensation throw event: compensate ``activity`` (None: every
        completed activity of the scope it is in), wait for the handlers, move on."""
        return self._add(n.CompensationThrowEvent(id, name, activity_ref=activity))

    def compensate_end(
        self, id: str, *, activity: str | None = None, name: str | None = None
    ) -> Self:
        """A compensation end event: compensate ``activity`` (None: every completed
        activity of its scope; at the top of the process, the whole instance, which then
        ends ``compensated``), then end the path."""
        return self._add(n.EndEvent(id, name, kind=n.EndKind.COMPENSATE, activity_ref=activity))

    def compensation_start(self, id: str, *, name: str | None = None) -> Self:
        """The start event of a compensation event sub-process (inside
        :meth:`event_sub_process`): it runs when its sub-process is compensated."""
        return self._add(n.StartEvent(id, name, compensation_start=True))
