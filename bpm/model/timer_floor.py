"""Timer cycles that repeat too often: refused at deploy (``EngineConfig.min_timer_cycle``).

A cycle such as ``R/PT0.001S`` would fire thousands of times in one poll of the timer
waiter, each firing a transaction: it cannot run, so it does not deploy. A cycle read from a
variable (``${every}``) is not known at deploy and is not checked here.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

from bpm.errors import Problem
from bpm.model import nodes as n
from bpm.model.element_types import element_type
from bpm.model.process import ProcessModel
from bpm.recurrence import recurrence
from bpm.timeexpr import TimerError, parse_cycle, variable_name


def too_frequent(model: ProcessModel, minimum: timedelta) -> Iterator[Problem]:
    """A problem per literal timer cycle of ``model`` whose interval is under ``minimum``."""
    for node in model.nodes.values():
        spec = getattr(node, "timer", None)
        if not isinstance(spec, n.TimerSpec) or spec.kind is not n.TimerKind.CYCLE:
            continue
        if variable_name(spec.expression) is not None:
            continue
        try:
            if isinstance(node, n.StartEvent) and node.container is None:
                interval = recurrence(spec).interval
            else:
                interval = parse_cycle(spec.expression)[1]
        except TimerError:
            continue  # validation reports what does not parse
        if interval is not None and interval < minimum:
            yield Problem(
                f"timer cycle '{spec.expression}' repeats every {interval.total_seconds():g} s, "
                f"more often than the minimum of {minimum.total_seconds():g} s; repeat less "
                "often (or lower BPM_MIN_TIMER_CYCLE_SECONDS)",
                node.id,
                node.line,
                element_type=element_type(node),
            )
