"""Correlating messages: ``engine.correlate(name, ...)`` and ``POST /message``.

One transaction: find the open waits for the message with set-based SQL (no lock), lock
their instances (in the one lock order), and deliver under the lock, where each wait is
checked again (:func:`bpm.runtime.messages.deliver`): of several callers correlating the
same message to the same wait, exactly one delivers it; the others find it consumed and
get the no-match answer (or buffer their message, when they gave a time to live). Without
a waiting instance, a message start event of the latest version of a process starts one.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from bpm.engine.core import EngineCore
from bpm.engine.instances import begin_instance
from bpm.engine.unit import Unit, unit_of_work
from bpm.errors import InvalidOperation, MessageCorrelationError
from bpm.runtime import messages as rt
from bpm.runtime.records import Subscription
from bpm.runtime.states import InstanceState
from bpm.runtime.variable_types import split
from bpm.runtime.work import InstanceWork, check_variables
from bpm.store import definitions as defs_store
from bpm.store import messages as store

MESSAGE = "message"

__all__ = ["Correlation", "correlate"]


@dataclass(frozen=True)
class Correlation:
    """What one correlation did: ``kind`` is ``execution`` (a waiting instance got the
    message at ``node_id``), ``start`` (it started ``instance_id`` at ``node_id``) or
    ``buffered`` (nothing waited; kept as ``message_id`` until its time to live ends)."""

    kind: str
    instance_id: str | None = None
    node_id: str | None = None
    message_id: str | None = None


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise InvalidOperation("a message needs a name: pass messageName (a non-empty string)")
    return name


def _check_ttl(ttl: timedelta | float | None) -> timedelta | None:
    if ttl is None:
        return None
    delta = ttl if isinstance(ttl, timedelta) else timedelta(seconds=float(ttl))
    if delta <= timedelta(0):
        raise InvalidOperation(f"a time to live must be positive, got {delta}")
    return delta


def correlate(
    core: EngineCore,
    name: str,
    variables: Mapping[str, Any] | None = None,
    *,
    business_key: str | None = None,
    correlation_key: Any = None,
    correlation_keys: Mapping[str, Any] | None = None,
    instance_id: str | None = None,
    all: bool = False,
    ttl: timedelta | float | None = None,
    now: datetime | None = None,
) -> list[Correlation]:
    """Deliver message ``name`` (see :meth:`bpm.engine.Engine.correlate`)."""
    _check_name(name)
    delta = _check_ttl(ttl)
    clean = check_variables(
        dict(variables) if variables is not None else None, core.config.max_variable_bytes
    )
    match = check_variables(dict(correlation_keys) if correlation_keys is not None else None)
    key = None if correlation_key is None else rt.key_text(correlation_key)
    with unit_of_work(core, now) as unit:
        found = store.waiting(
            unit.conn,
            MESSAGE,
            name,
            business_key=business_key,
            instance_id=instance_id,
            correlation_key=key,
        )
        found = [w for w in found if _variables_match(match, w.variables)]
        by_instance: dict[str, list[str]] = defaultdict(list)
        for w in found:
            by_instance[w.instance_id].append(w.subscription_id)
        if len(by_instance) > 1 and not all:
            raise MessageCorrelationError(
                f"message '{name}' matches {len(by_instance)} waiting process instances; "
                "correlate with all=True (all: true), or narrow it down with a business key, "
                "correlation keys or the process instance id"
            )
        done = _deliver(unit, by_instance, clean, all)
        if not done and instance_id is None:
            done = _start(unit, name, clean, business_key, all)
        if not done:
            if delta is None:
                raise MessageCorrelationError(_no_match(name, business_key, key, instance_id))
            message_id = str(uuid.uuid4())
            # The buffer holds plain JSON: typed values (Long, Date, Json...) keep their
            # value, not their Camunda type.
            plain = split(clean)[0]
            plain_match = split(match)[0] if match else None
            store.buffer(
                unit.conn,
                store.Buffered(
                    message_id, name, business_key, key, instance_id, plain_match, plain
                ),
                unit.now,
                unit.now + delta,
            )
            done = [Correlation("buffered", message_id=message_id)]
    return done


def _variables_match(wanted: Mapping[str, Any], variables: Mapping[str, Any]) -> bool:
    return all(k in variables and variables[k] == v for k, v in wanted.items())


def _no_match(name: str, business_key: str | None, key: str | None, instance: str | None) -> str:
    given = [
        f"{label} '{value}'"
        for label, value in (
            ("business key", business_key),
            ("correlation key", key),
            ("process instance", instance),
        )
        if value is not None
    ]
    with_ = f" with {', '.join(given)}" if given else ""
    return (
        f"no process instance waits for message '{name}'{with_} and no process starts with "
        "it: check the message name and keys, or publish it with a time to live (ttl) to "
        "keep it until a wait opens"
    )


def _deliver(
    unit: Unit, by_instance: Mapping[str, list[str]], variables: dict[str, Any], all: bool
) -> list[Correlation]:
    if not by_instance:
        return []
    if len(by_instance) == 1:
        # One instance: lock it through its first wait, which is read in the same round
        # trip (the usual case: a key that names one instance).
        (only,) = by_instance
        found = unit.work_of(Subscription, by_instance[only][0])
        works = {only: found} if found is not None else {}
    else:
        works = unit.lock(sorted(by_instance))
    done: list[Correlation] = []
    for instance_id in sorted(by_instance):
        work = works.get(instance_id)
        if work is None or work.instance.state is not InstanceState.ACTIVE:
            continue
        walker = unit.walker(work)
        for sub_id in by_instance[instance_id]:
            node = _node_of(work, sub_id)
            if rt.deliver(walker, sub_id, variables):
                done.append(Correlation("execution", instance_id, node))
                if not all:
                    break
        walker.run()
        if done and not all:
            break
    return done


def _node_of(work: InstanceWork, sub_id: str) -> str | None:
    sub = work.item(Subscription, sub_id)
    return sub.node_id if sub is not None else None


def _start(
    unit: Unit, name: str, variables: dict[str, Any], business_key: str | None, all: bool
) -> list[Correlation]:
    starts = store.start_events(unit.conn, MESSAGE, name)
    if len(starts) > 1 and not all:
        raise MessageCorrelationError(
            f"message '{name}' starts {len(starts)} processes; correlate with all=True, or "
            "give the message start events different names"
        )
    done: list[Correlation] = []
    for start in starts:
        definition = defs_store.by_id(unit.conn, start.definition_id)
        if definition is None:
            continue
        work = begin_instance(
            unit, definition, variables, business_key=business_key, start_event=start.node_id
        )
        done.append(Correlation("start", work.instance.id, start.node_id))
    return done
