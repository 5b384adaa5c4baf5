"""Correlating messages: ``engine.correlate(name, ...)`` and ``POST /message``.

One transaction: find the open waits for the message with set-based SQL (no lock), lock
their instances (in the one lock order), and deliver under the lock, where each wait is
checked again (:func:`bpm.runtime.messages.deliver`): of several callers correlating the
same message to the same wait, exactly one delivers it; the others find it consumed and
get the no-match answer (or buffer their message, when they gave a time to live). Without
a waiting instance, a message start event of the latest version of a process starts one.

:func:`correlate_many` commits several messages in one transaction (group commit: the API
hands it the ``POST /message`` calls that arrive together): every message's waits are
found in one statement, all their instances locked together in the one lock order, then
each message is delivered in the order given, as :func:`correlate` would have.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from bpm.engine.core import EngineCore
from bpm.engine.instances import begin_instance
from bpm.engine.unit import Unit, unit_of_work
from bpm.errors import BpmError, InvalidOperation, MessageCorrelationError
from bpm.runtime import messages as rt
from bpm.runtime.records import Subscription
from bpm.runtime.states import InstanceState
from bpm.runtime.variable_types import split
from bpm.runtime.work import InstanceWork, check_variables
from bpm.store import definitions as defs_store
from bpm.store import messages as store
from bpm.store import work as work_store

MESSAGE = "message"

__all__ = ["Correlation", "Message", "correlate", "correlate_many"]


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


@dataclass(frozen=True)
class Message:
    """One message for :func:`correlate_many`; the fields mean what the keyword arguments
    of :meth:`bpm.engine.Engine.correlate` mean."""

    name: str
    variables: Mapping[str, Any] | None = None
    business_key: str | None = None
    correlation_key: Any = None
    correlation_keys: Mapping[str, Any] | None = None
    instance_id: str | None = None
    all: bool = False
    ttl: timedelta | float | None = None


@dataclass(frozen=True)
class _Checked:
    """A message whose input passed every check (nothing locked yet)."""

    message: Message
    variables: dict[str, Any]
    match: dict[str, Any]
    key: str | None
    ttl: timedelta | None

    @property
    def query(self) -> store.WaitQuery:
        m = self.message
        return store.WaitQuery(m.name, m.business_key, m.instance_id, self.key)


def _check(core: EngineCore, message: Message) -> _Checked:
    """Every check of a message's input, before anything is read or locked."""
    _check_name(message.name)
    delta = _check_ttl(message.ttl)
    clean = check_variables(
        dict(message.variables) if message.variables is not None else None,
        core.config.max_variable_bytes,
    )
    keys = message.correlation_keys
    match = check_variables(dict(keys) if keys is not None else None)
    key = None if message.correlation_key is None else rt.key_text(message.correlation_key)
    return _Checked(message, clean, match, key, delta)


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
    message = Message(
        name, variables, business_key, correlation_key, correlation_keys, instance_id, all, ttl
    )
    return _alone(core, _check(core, message), now)


def _alone(core: EngineCore, checked: _Checked, now: datetime | None) -> list[Correlation]:
    m = checked.message
    with unit_of_work(core, now) as unit:
        found = store.waiting(
            unit.conn,
            MESSAGE,
            m.name,
            business_key=m.business_key,
            instance_id=m.instance_id,
            correlation_key=checked.key,
        )
        by_instance = _by_instance(checked, found)
        done = _deliver(unit, by_instance, checked.variables, m.all)
        return _rest(unit, checked, done)


def _by_instance(checked: _Checked, found: Sequence[store.Waiting]) -> dict[str, list[str]]:
    """The waits that match, by instance; :class:`MessageCorrelationError` when they are
    in several instances and the message is not for all of them."""
    by_instance: dict[str, list[str]] = defaultdict(list)
    for w in found:
        if _variables_match(checked.match, w.variables):
            by_instance[w.instance_id].append(w.subscription_id)
    if len(by_instance) > 1 and not checked.message.all:
        raise MessageCorrelationError(
            f"message '{checked.message.name}' matches {len(by_instance)} waiting process "
            "instances; correlate with all=True (all: true), or narrow it down with a "
            "business key, correlation keys or the process instance id"
        )
    if not checked.message.all:
        # As Camunda 7 (MismatchingMessageCorrelationException): two waits of one instance
        # for the same message are ambiguous; delivering to the first would be arbitrary.
        for instance_id, waits in by_instance.items():
            if len(waits) > 1:
                raise MessageCorrelationError(
                    f"message '{checked.message.name}' matches {len(waits)} waits of process "
                    f"instance {instance_id}; correlate with all=True (all: true) to deliver "
                    "it to each, or narrow it down with correlation keys"
                )
    return by_instance


def _rest(unit: Unit, checked: _Checked, done: list[Correlation]) -> list[Correlation]:
    """What a message that no wait took does: start a process, or wait in the buffer for
    its time to live, or fail (before it changed anything)."""
    m = checked.message
    if not done and m.instance_id is None:
        done = _start(unit, m.name, checked.variables, m.business_key, m.all)
    if done:
        return done
    if checked.ttl is None:
        raise MessageCorrelationError(_no_match(m.name, m.business_key, checked.key, m.instance_id))
    message_id = str(uuid.uuid4())
    # The buffer holds plain JSON: typed values (Long, Date, Json...) keep their
    # value, not their Camunda type.
    plain = split(checked.variables)[0]
    plain_match = split(checked.match)[0] if checked.match else None
    store.buffer(
        unit.conn,
        store.Buffered(
            message_id, m.name, m.business_key, checked.key, m.instance_id, plain_match, plain
        ),
        unit.now,
        unit.now + checked.ttl,
    )
    return [Correlation("buffered", message_id=message_id)]


def correlate_many(
    core: EngineCore, messages: Sequence[Message], *, now: datetime | None = None
) -> list[list[Correlation] | BpmError]:
    """Correlate several messages in ONE transaction (see
    :meth:`bpm.engine.Engine.correlate_many`). Returns, per message, what
    :func:`correlate` would have returned for it, or the error it alone raised (nothing
    of a refused message is applied); the others commit.
    """
    results: list[list[Correlation] | BpmError | None] = [None] * len(messages)
    checked: dict[int, _Checked] = {}
    for i, message in enumerate(messages):
        try:
            checked[i] = _check(core, message)
        except BpmError as exc:
            results[i] = exc
    later: list[int] = []
    if checked:
        try:
            later = _together(core, checked, results, now)
        except Exception:
            # Something failed after a delivery had begun (a model's expression, a limit
            # met on the way): the batch rolled back as a whole, so each message runs
            # alone and meets its own fate, as it would have without the batch.
            later = sorted(checked)
        for i in later:
            try:
                results[i] = _alone(core, checked[i], now)
            except BpmError as exc:
                results[i] = exc
    out: list[list[Correlation] | BpmError] = []
    for r in results:
        assert r is not None
        out.append(r)
    return out


def _together(
    core: EngineCore,
    checked: Mapping[int, _Checked],
    results: list[list[Correlation] | BpmError | None],
    now: datetime | None,
) -> list[int]:
    """The batch's transaction; fills ``results`` and returns the messages to run alone
    after it commits (see :func:`_opened_for`)."""
    later: list[int] = []
    with unit_of_work(core, now) as unit:
        order = sorted(checked)
        found = store.waiting_many(
            unit.conn,
            MESSAGE,
            [checked[i].query for i in order],
            with_variables=any(checked[i].match for i in order),
        )
        wanted: dict[int, dict[str, list[str]]] = {}
        for i, waits in zip(order, found, strict=True):
            try:
                wanted[i] = _by_instance(checked[i], waits)
            except BpmError as exc:  # refused before anything was locked
                results[i] = exc
        every = sorted({iid for by in wanted.values() for iid in by})
        works = unit.lock(every) if every else {}
        # the waits, read again under those locks in one statement (not one read each)
        subs = [s for by in wanted.values() for ids in by.values() for s in ids]
        for sub in work_store.items_by_id(unit.conn, Subscription, subs):
            if sub.instance_id in works:
                works[sub.instance_id].adopt(sub)
        for i, by_instance in wanted.items():
            c = checked[i]
            if _opened_for(unit, c.message.name):
                # A wait for this name opened in this batch: alone, after the commit, the
                # message sees it, as it would have after the earlier messages one by one.
                later.append(i)
                continue
            mine = {iid: subs for iid, subs in by_instance.items() if iid in works}
            try:
                done = _deliver(unit, mine, c.variables, c.message.all, works=works)
                results[i] = _rest(unit, c, done)
            except MessageCorrelationError as exc:  # no match: raised before any change
                results[i] = exc
    return later


def _opened_for(unit: Unit, name: str) -> bool:
    """Did this transaction open a wait for message ``name``?"""
    for work in unit.works.values():
        changes = work.item_changes[Subscription]
        for sub_id in changes.new:
            sub = changes.records[sub_id]
            if sub.kind == MESSAGE and sub.name == name:
                return True
    return False


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
    unit: Unit,
    by_instance: Mapping[str, list[str]],
    variables: dict[str, Any],
    all: bool,
    *,
    works: Mapping[str, InstanceWork] | None = None,
) -> list[Correlation]:
    """Deliver to the waits found (``works``: the instances a batch locked already)."""
    if not by_instance:
        return []
    if works is None:
        works = _lock(unit, by_instance)
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


def _lock(unit: Unit, by_instance: Mapping[str, list[str]]) -> Mapping[str, InstanceWork]:
    if len(by_instance) == 1:
        # One instance: lock it through its first wait, which is read in the same round
        # trip (the usual case: a key that names one instance).
        (only,) = by_instance
        found = unit.work_of(Subscription, by_instance[only][0])
        return {only: found} if found is not None else {}
    return unit.lock(sorted(by_instance))


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
