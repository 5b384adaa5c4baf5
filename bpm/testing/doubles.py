"""Handler doubles: a stand-in for a named handler that answers what the test says and
records every call.

>>> charge = bpm.mock("charge-card", returns={"charge_id": "c-1"})
>>> declined = bpm.mock("charge-card", raises=BpmnError("card-declined"))
>>> charge.calls[0].variables["amount"]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bpm.handlers import TaskContext

__all__ = ["Call", "HandlerDouble"]

Answer = Mapping[str, Any] | Callable[[TaskContext], Mapping[str, Any] | None] | None


@dataclass(frozen=True)
class Call:
    """One call of a double: which step, which attempt, the variables it saw."""

    instance_id: str
    node_id: str
    attempt: int
    variables: Mapping[str, Any]
    business_key: str | None = None


@dataclass
class HandlerDouble:
    """The handler registered under ``name`` for one test (the real one, if any, is left
    registered where it was and used again by the next test).

    ``returns``: the variables to merge (a mapping, or a function of the
    :class:`~bpm.TaskContext`); ``raises``: an exception raised on every call instead
    (``BpmnError("card-declined")`` for a business error, any other exception for a
    failure that takes the step's retry policy); ``answers``: one answer per call, in
    order (each a mapping, None or an exception), the last one repeated.
    """

    name: str
    returns: Answer = None
    raises: BaseException | None = None
    answers: Sequence[Mapping[str, Any] | BaseException | None] = ()
    calls: list[Call] = field(default_factory=list)

    def __call__(self, ctx: TaskContext) -> Mapping[str, Any] | None:
        self.calls.append(
            Call(ctx.instance_id, ctx.node_id, ctx.attempt, dict(ctx.variables), ctx.business_key)
        )
        if self.answers:
            answer = self.answers[min(len(self.calls), len(self.answers)) - 1]
            if isinstance(answer, BaseException):
                raise answer
            return answer
        if self.raises is not None:
            raise self.raises
        if callable(self.returns):
            return self.returns(ctx)
        return self.returns

    @property
    def called(self) -> bool:
        return bool(self.calls)

    @property
    def call_count(self) -> int:
        return len(self.calls)

    @property
    def last(self) -> Call:
        """The latest call (AssertionError when there was none)."""
        if not self.calls:
            raise AssertionError(f"handler double '{self.name}' was never called")
        return self.calls[-1]
