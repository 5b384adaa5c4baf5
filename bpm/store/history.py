"""History: one row per transaction and instance, holding that transaction's events in order.

A step's finish writes one row however many tokens it moved through gateways and events;
``Engine.history`` unpacks the rows back into one :class:`HistoryEvent` per transition.
An event stores its own time only when it differs from its row's (a claim recorded with
the attempt's outcome carries the time of the claim).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, insert, select

from bpm.runtime.records import HistoryEvent
from bpm.store import tables as t

h = t.history
_INSERT = insert(h).inline()  # nothing reads the new seq back (no RETURNING)


def encode(events: Sequence[HistoryEvent], at: datetime) -> list[dict[str, Any]]:
    """Events as the JSON list of one history row written at ``at``."""
    out = []
    for e in events:
        item: dict[str, Any] = {"type": e.type}
        if e.token_id is not None:
            item["token"] = e.token_id
        if e.node_id is not None:
            item["node"] = e.node_id
        if e.from_state is not None:
            item["from"] = e.from_state
        if e.to_state is not None:
            item["to"] = e.to_state
        if e.payload:
            item["data"] = e.payload
        if e.at != at:
            item["at"] = e.at.isoformat()
        out.append(item)
    return out


def decode(instance_id: str, at: datetime, items: Iterable[dict[str, Any]]) -> list[HistoryEvent]:
    return [
        HistoryEvent(
            instance_id=instance_id,
            type=item["type"],
            at=datetime.fromisoformat(item["at"]) if "at" in item else at,
            token_id=item.get("token"),
            node_id=item.get("node"),
            from_state=item.get("from"),
            to_state=item.get("to"),
            payload=dict(item.get("data") or {}),
        )
        for item in items
    ]


def row(instance_id: str, at: datetime, events: Sequence[HistoryEvent]) -> dict[str, Any]:
    """The values of one history row."""
    return {"instance_id": instance_id, "at": at, "events": encode(events, at)}


def append(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Insert history rows (:func:`row`), one statement for all of them."""
    if rows:
        conn.execute(_INSERT, list(rows))


def events_of(conn: Connection, instance_id: str) -> list[HistoryEvent]:
    """Every event of an instance in order, numbered from 1."""
    out: list[HistoryEvent] = []
    for r in conn.execute(
        select(h.c.at, h.c.events).where(h.c.instance_id == instance_id).order_by(h.c.seq)
    ):
        out.extend(decode(instance_id, r.at, r.events))
    return [_numbered(e, i) for i, e in enumerate(out, start=1)]


def started_trace(conn: Connection, instance_id: str) -> dict[str, str] | None:
    """The trace headers its start recorded (``instance_started``'s ``trace``), if any:
    one indexed read of the instance's first history row."""
    first = conn.execute(
        select(h.c.events).where(h.c.instance_id == instance_id).order_by(h.c.seq).limit(1)
    ).scalar()
    for item in first or ():
        if item.get("type") == "instance_started":
            trace = (item.get("data") or {}).get("trace")
            return dict(trace) if isinstance(trace, dict) else None
    return None


def retry_trace(conn: Connection, instance_id: str, token_id: str) -> dict[str, str] | None:
    """The trace headers the last failed attempt of ``token_id`` recorded for the next one
    (``attempt_failed``'s ``trace``: its parent), if any."""
    for event in reversed(events_of(conn, instance_id)):
        if event.type == "attempt_failed" and event.token_id == token_id:
            trace = event.payload.get("trace")
            return dict(trace) if isinstance(trace, dict) else None
    return None


def _numbered(e: HistoryEvent, seq: int) -> HistoryEvent:
    return replace(e, seq=seq)
