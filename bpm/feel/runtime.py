"""What an evaluation carries: the scope chain and the budget that bounds its cost.

Every FEEL evaluation runs against one :class:`Run`: loops, filters and calls spend its
steps, lists and strings it builds are held to its sizes, and user functions may recurse
only so deep. Overspending raises :class:`FeelLimitError` naming the expression, so a hostile
expression ends with a clear error instead of holding a worker or the API.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bpm.errors import ExpressionError


class FeelLimitError(ExpressionError):
    """An expression spent more than its :class:`Limits` allow."""


@dataclass(frozen=True)
class Limits:
    """The bounds of one evaluation (a decision's evaluation shares one budget)."""

    steps: int = 1_000_000
    """Loop iterations, filtered items and function calls, all counted together."""
    items: int = 100_000
    """The longest list an expression may build."""
    string_length: int = 1_000_000
    """The longest string an expression may build."""
    depth: int = 100
    """How deep user functions may call one another."""


DEFAULT_LIMITS = Limits()
MISSING: Any = object()


class Run:
    """The budget of one evaluation."""

    __slots__ = ("depth", "limits", "now", "source", "steps", "trace")

    def __init__(
        self, limits: Limits = DEFAULT_LIMITS, source: str = "", now: datetime | None = None
    ) -> None:
        self.limits = limits
        self.source = source
        self.steps = 0
        self.depth = 0
        self.now = now
        """The clock reading ``now()`` and ``today()`` give (the operation's, when set)."""
        self.trace: list[Any] | None = None
        """Set to a list to collect what DMN decision tables matched (for the history)."""

    def tick(self, n: int = 1) -> None:
        self.steps += n
        if self.steps > self.limits.steps:
            raise FeelLimitError(
                f"expression `{_short(self.source)}` took more than {self.limits.steps} steps "
                "(loop iterations, filtered items and calls); simplify it or raise "
                "Limits.steps"
            )

    def check_items(self, count: int) -> None:
        if count > self.limits.items:
            raise FeelLimitError(
                f"expression `{_short(self.source)}` built a list of {count} items, over the "
                f"limit of {self.limits.items}"
            )

    def check_string(self, text: str) -> str:
        if len(text) > self.limits.string_length:
            raise FeelLimitError(
                f"expression `{_short(self.source)}` built a string of {len(text)} characters, "
                f"over the limit of {self.limits.string_length}"
            )
        return text

    def enter(self) -> None:
        self.depth += 1
        if self.depth > self.limits.depth:
            raise FeelLimitError(
                f"expression `{_short(self.source)}` nested function calls deeper than "
                f"{self.limits.depth} (unbounded recursion?)"
            )

    def leave(self) -> None:
        self.depth -= 1

    def too_deep(self) -> FeelLimitError:
        return FeelLimitError(
            f"expression `{_short(self.source)}` nests too deeply to evaluate "
            "(unbounded recursion?)"
        )


def _short(source: str) -> str:
    return source if len(source) <= 200 else source[:197] + "..."


class Env:
    """One scope: its names, the enclosing scope, and the evaluation's budget."""

    __slots__ = ("parent", "run", "vars")

    def __init__(self, names: Mapping[str, Any], parent: Env | None, run: Run) -> None:
        self.vars = names
        self.parent = parent
        self.run = run

    def lookup(self, name: str) -> Any:
        """The value bound to ``name`` here or in an enclosing scope; MISSING if none."""
        env: Env | None = self
        while env is not None:
            names = env.vars
            if name in names:
                return names[name]
            env = env.parent
        return MISSING

    def child(self, names: Mapping[str, Any]) -> Env:
        return Env(names, self, self.run)
