"""Conditional start events of processes: Camunda 7's ``RuntimeService
.createConditionEvaluation().evaluateStartConditions()`` and ``POST /condition``.

Every conditional start event of the latest version of each process (armed at deploy as a
start subscription of kind ``conditional``, as message starts are), or of the one
definition named, is evaluated over the variables given; each that holds starts an
instance there with those variables, all in one transaction. A conditional start with
``camunda:variableName`` counts only when that variable is given; a condition that cannot
be evaluated is false (:func:`bpm.kinds.conditional.start_holds`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from bpm.engine.core import EngineCore
from bpm.engine.instances import begin_instance
from bpm.engine.unit import unit_of_work
from bpm.errors import InvalidOperation, NotFound
from bpm.kinds.conditional import KIND, start_holds
from bpm.model import nodes as n
from bpm.runtime.records import Instance
from bpm.runtime.variable_types import split
from bpm.runtime.work import check_variables
from bpm.store import definitions as defs_store
from bpm.store import messages as store

__all__ = ["evaluate_start_conditions"]


def evaluate_start_conditions(
    core: EngineCore,
    variables: Mapping[str, Any] | None = None,
    *,
    business_key: str | None = None,
    definition_id: str | None = None,
    now: datetime | None = None,
) -> list[Instance]:
    """Start an instance at every conditional start event whose condition holds (see the
    module docstring); the instances started, in definition and event order. Raises
    :class:`NotFound` for an unknown ``definition_id`` and :class:`InvalidOperation` when
    there is no conditional start event to evaluate (Camunda's errors)."""
    cfg = core.config
    clean = check_variables(
        dict(variables) if variables is not None else None,
        cfg.max_variable_bytes,
        min(cfg.max_update_bytes, cfg.max_instance_variable_bytes),
    )
    seen = split(clean)[0]  # the conditions read plain values
    started: list[Instance] = []
    with unit_of_work(core, now) as unit:
        if definition_id is not None:
            definition = defs_store.by_id(unit.conn, definition_id)
            if definition is None:
                raise NotFound(f"no deployed process definition found with id '{definition_id}'")
            starts = [(definition_id, s.id) for s in _conditional_starts(unit.model(definition_id))]
            if not starts:
                raise InvalidOperation(
                    f"process definition with id '{definition_id}' does not declare a "
                    "conditional start event"
                )
        else:
            starts = [
                (s.definition_id, s.node_id) for s in store.start_events(unit.conn, KIND, None)
            ]
            if not starts:
                raise InvalidOperation(
                    "no subscriptions were found during evaluation of the conditional start "
                    "events: deploy a process with a conditional start event"
                )
        for def_id, node_id in starts:
            node = unit.model(def_id).nodes.get(node_id)
            ref = getattr(node, "event", None)
            if not isinstance(ref, n.EventRef) or not start_holds(ref, seen):
                continue
            definition = defs_store.by_id(unit.conn, def_id)
            if definition is None or definition.suspended:
                continue
            work = begin_instance(
                unit, definition, clean, business_key=business_key, start_event=node_id
            )
            started.append(work.instance)
    return started


def _conditional_starts(model: Any) -> list[n.StartEvent]:
    return [
        s
        for s in model.start_events
        if s.event is not None and s.event.kind is n.EventKind.CONDITIONAL
    ]
