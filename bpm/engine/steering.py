"""Operator actions that had no engine operation of their own: fire a timer now, set
variables. Each is one transaction that takes the instance lock first and records a
history event, like every other change of an instance.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection

from bpm.engine import oplog
from bpm.engine.core import EngineCore
from bpm.engine.unit import unit_of_work
from bpm.errors import InvalidOperation, NotFound, VariableError
from bpm.runtime.records import Instance, Timer
from bpm.runtime.states import RUNNING_INSTANCE_STATES, TimerState
from bpm.runtime.work import check_variables
from bpm.store import cockpit as cockpit_store

MAX_VARIABLES_PER_EDIT = 100


def fire_timer_now(
    core: EngineCore, timer_id: str, *, by: str | None = None, now: datetime | None = None
) -> Timer:
    """Make a pending timer due now; the next poll (beat, ``bpm dev``) fires it.

    Only the due time changes, in the transaction that records ``timer_due_now``: firing
    itself stays the poller's job, so a timer still fires exactly once.
    """
    with unit_of_work(core, now) as unit:
        work = unit.work_of(Timer, timer_id)  # the instance lock, first
        timer = work.item(Timer, timer_id) if work else None  # read under the lock
        if work is None or timer is None:
            raise NotFound(f"timer {timer_id} does not exist")
        if timer.state is not TimerState.PENDING:
            raise InvalidOperation(f"timer {timer_id} is {timer.state.value}, not pending")
        if work.instance.state not in RUNNING_INSTANCE_STATES:
            raise InvalidOperation(
                f"instance {work.instance.id} is {work.instance.state.value}; resume it first"
            )
        work.change(
            timer,
            event="timer_due_now",
            payload={
                "kind": timer.kind,
                "was_due": timer.fire_at.isoformat(),
                "by": by or "operator",
            },
            fire_at=unit.now,
        )
    return _timer_after(core, timer_id)


def _timer(conn: Connection, timer_id: str) -> Timer:
    found = cockpit_store.timer_by_id(conn, timer_id)
    if found is None:
        raise NotFound(f"timer {timer_id} does not exist")
    return found


def _timer_after(core: EngineCore, timer_id: str) -> Timer:
    with core.db.connect() as conn:
        return _timer(conn, timer_id)


def set_variables(
    core: EngineCore,
    instance_id: str,
    variables: dict[str, Any],
    *,
    by: str | None = None,
    now: datetime | None = None,
) -> Instance:
    """Merge ``variables`` into a running (active or suspended) instance's variables.

    Checked before anything is written (names, JSON, the per-variable size limit); the
    change and its ``variables_updated`` event are one transaction under the instance lock.
    """
    if not isinstance(variables, dict) or not variables:
        raise VariableError("give at least one variable to set, as a JSON object")
    return modify_variables(core, instance_id, variables, (), by=by, now=now)


def modify_variables(
    core: EngineCore,
    instance_id: str,
    modifications: dict[str, Any] | None,
    deletions: Sequence[str] = (),
    *,
    by: str | None = None,
    now: datetime | None = None,
) -> Instance:
    """Set ``modifications`` and remove ``deletions`` of a running instance's variables, in
    one transaction under the instance lock (Camunda's order: a name both set and deleted
    ends up deleted; deleting a missing variable is no error).

    Values may be :class:`~bpm.runtime.variables.Typed` (their Camunda type is kept).
    Recorded as ``variables_updated`` and ``variables_deleted`` events naming ``by``.
    """
    changes = dict(modifications or {})
    if not isinstance(deletions, (list, tuple)) or not all(
        isinstance(d, str) and d for d in deletions
    ):
        raise VariableError("deletions must be a list of variable names")
    if len(changes) + len(deletions) > MAX_VARIABLES_PER_EDIT:
        raise VariableError(
            f"{len(changes) + len(deletions)} variables in one edit; change at most "
            f"{MAX_VARIABLES_PER_EDIT}"
        )
    clean = check_variables(changes, core.config.max_variable_bytes, core.config.max_update_bytes)
    gone = tuple(dict.fromkeys(deletions))
    clean = {k: v for k, v in clean.items() if k not in gone}
    with unit_of_work(core, now) as unit:
        work = unit.work(instance_id)
        if work.instance.ended:
            raise InvalidOperation(
                f"instance {instance_id} is {work.instance.state.value}; only a running "
                "instance's variables can be changed"
            )
        present = tuple(name for name in gone if name in work.instance.variables)
        if not clean and not present:
            return work.instance
        work.write_variables(clean, present)
        oplog.write(
            unit.conn,
            unit.now,
            "ModifyVariable" if present else "SetVariable",
            "Variable",
            by=by,
            instance=work.instance,
            changes=[("name", None, name) for name in sorted(clean)]
            + [("name", name, None) for name in sorted(present)],
        )
        who = by or "operator"
        if clean:
            work.record("variables_updated", payload=work.written(clean, by=who))
        if present:
            work.record("variables_deleted", payload={"names": sorted(present), "by": who})
    return work.instance
