"""Delivering buffered messages to the waits a transaction opens (before it commits).

A message correlated with a time to live while nothing waited for it is kept in
``message_buffer``. Every unit of work that opened message waits asks the buffer, once per
name, and the first matching message that is still live is taken with a conditional
UPDATE (:func:`bpm.store.messages.consume`): at most one wait gets it, whatever runs
concurrently. Delivering it may open further waits, which are asked in turn.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import Connection

from bpm.runtime import messages as rt
from bpm.runtime.records import Instance, Subscription
from bpm.runtime.states import SubscriptionState
from bpm.runtime.walker import Walker
from bpm.runtime.work import InstanceWork
from bpm.store import messages as store

MESSAGE = "message"


def _new_waits(work: InstanceWork, asked: set[str]) -> list[Subscription]:
    changes = work.item_changes[Subscription]
    return [
        sub
        for sub_id in changes.new
        if sub_id not in asked
        and (sub := changes.records[sub_id]).state is SubscriptionState.OPEN
        and sub.kind == MESSAGE
    ]


def matches(message: store.Buffered, sub: Subscription, instance: Instance) -> bool:
    """Whether a buffered message is for this wait (every key the message names)."""
    if message.name != sub.name:
        return False
    if message.instance_id is not None and message.instance_id != instance.id:
        return False
    if message.business_key is not None and message.business_key != instance.business_key:
        return False
    if sub.correlation_key is not None and message.correlation_key != sub.correlation_key:
        return False
    return _variables_match(message.match_variables, instance.variables)


def _variables_match(wanted: Mapping[str, Any] | None, variables: Mapping[str, Any]) -> bool:
    return all(name in variables and variables[name] == v for name, v in (wanted or {}).items())


def deliver_buffered(
    conn: Connection,
    works: list[InstanceWork],
    walker_of: Callable[[InstanceWork], Walker],
    now: datetime,
) -> None:
    """Give the waits ``works`` opened the buffered messages meant for them."""
    for work in works:
        asked: set[str] = set()
        while waits := _new_waits(work, asked):
            asked.update(sub.id for sub in waits)
            live = store.live_buffered(conn, {sub.name for sub in waits}, now)
            if not live:
                continue
            for sub in waits:
                current = work.item_changes[Subscription].records[sub.id]
                if current.state is not SubscriptionState.OPEN:
                    continue
                for message in live:
                    if not matches(message, current, work.instance):
                        continue
                    if not store.consume(conn, message.id, work.instance.id, now):
                        continue  # taken by another transaction: try the next one
                    live.remove(message)
                    walker = walker_of(work)
                    if rt.deliver(walker, sub.id, message.variables):
                        work.record(
                            "message_buffer_consumed",
                            node_id=sub.node_id,
                            payload={"message": message.id, "name": message.name},
                        )
                    walker.run()
                    break
