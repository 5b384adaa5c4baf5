"""Broadcasting signals: ``engine.signal(name, ...)``, ``POST /signal`` and signal throw
events. Every open signal wait of an active instance catches it, and every signal start
event of a latest version starts an instance; no receiver is not an error."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bpm.engine.core import EngineCore
from bpm.engine.instances import begin_instance
from bpm.engine.unit import unit_of_work
from bpm.errors import InvalidOperation
from bpm.runtime import messages as rt
from bpm.runtime.states import InstanceState
from bpm.runtime.work import InstanceWork, check_variables
from bpm.store import definitions as defs_store
from bpm.store import messages as store

SIGNAL = "signal"
log = logging.getLogger("bpm.signals")

__all__ = ["SignalResult", "after_unit", "broadcast_thrown", "signal"]


@dataclass(frozen=True)
class SignalResult:
    """Which instances caught the signal, and which it started."""

    caught: tuple[str, ...]
    started: tuple[str, ...]


def signal(
    core: EngineCore,
    name: str,
    variables: Mapping[str, Any] | None = None,
    *,
    now: datetime | None = None,
    exclude: str | None = None,
) -> SignalResult:
    """Broadcast signal ``name`` in one transaction (to every instance but ``exclude``:
    a throwing instance caught its own signal in the throwing transaction)."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidOperation("a signal needs a name: pass name (a non-empty string)")
    clean = check_variables(
        dict(variables) if variables is not None else None, core.config.max_variable_bytes
    )
    caught: list[str] = []
    started: list[str] = []
    with unit_of_work(core, now) as unit:
        by_instance: dict[str, list[str]] = defaultdict(list)
        for w in store.waiting(unit.conn, SIGNAL, name):
            if w.instance_id != exclude:
                by_instance[w.instance_id].append(w.subscription_id)
        works = unit.lock(sorted(by_instance)) if by_instance else {}
        for instance_id in sorted(works):
            work = works[instance_id]
            if work.instance.state is not InstanceState.ACTIVE:
                continue
            walker = unit.walker(work)
            hit = False
            for sub_id in by_instance[instance_id]:
                hit = rt.deliver(walker, sub_id, clean) or hit
            walker.run()
            if hit:
                caught.append(instance_id)
        for start in store.start_events(unit.conn, SIGNAL, name):
            definition = defs_store.by_id(unit.conn, start.definition_id)
            if definition is None or definition.suspended:
                continue
            work = begin_instance(unit, definition, clean, start_event=start.node_id)
            started.append(work.instance.id)
    return SignalResult(tuple(caught), tuple(started))


def after_unit(core: EngineCore, works: Sequence[InstanceWork]) -> None:
    """The unit-of-work hook (``EngineCore.after_unit``) that broadcasts the signals its
    signal throw events threw. They reach other instances, which are locked by
    transactions of their own (never inside the throwing one: that would break the lock
    order)."""
    thrown = [s for w in works for s in w.signals]
    if thrown:
        broadcast_thrown(core, thrown)


def broadcast_thrown(core: EngineCore, thrown: Sequence[tuple[str, dict[str, Any], str]]) -> None:
    """Signals thrown by signal throw events of a transaction that just committed (not to
    the instance that threw each: it caught it in that transaction)."""
    for name, variables, thrower in thrown:
        try:
            signal(core, name, variables, exclude=thrower)
        except Exception:  # the throwing transaction is committed: log, never undo it
            log.exception("broadcasting signal %r thrown by a process failed", name)
