"""Rendering an instance's history as a token trail, for ``bpm run`` and ``bpm show``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table

from bpm.runtime.records import HistoryEvent, Instance


def _details(e: HistoryEvent) -> str:
    p = e.payload
    parts = []
    if "blocked_by" in p:
        parts.append(f"waits on {p['blocked_by']['kind']}")
    if "attempt" in p:
        parts.append(f"attempt {p['attempt']}")
    if p.get("error"):
        parts.append(f"error: {str(p['error'])[:80]}")
    if "names" in p:
        parts.append("set " + ", ".join(p["names"]))
    if e.type == "join_fired":
        parts.append(f"joined {len(p.get('tokens', []))} tokens")
    if "reason" in p:
        parts.append(str(p["reason"]))
    return "; ".join(parts)


def trail_table(events: Sequence[HistoryEvent], *, title: str | None = None) -> Table:
    """A table of every event: time since start, node, token, transition, details."""
    table = Table(title=title, header_style="bold", expand=False)
    for col in ("#", "+ms", "node", "token", "event", "details"):
        table.add_column(col, no_wrap=col != "details")
    start = events[0].at if events else None
    for e in events:
        ms = int((e.at - start).total_seconds() * 1000) if start else 0
        move = f"{e.from_state} -> {e.to_state}" if e.from_state and e.to_state else e.type
        if e.type.startswith("token_") and e.from_state is None:
            move = "created"
        table.add_row(
            str(e.seq), str(ms), e.node_id or "", (e.token_id or "")[:8], move, _details(e)
        )
    return table


def instance_json(inst: Instance, events: Sequence[HistoryEvent]) -> dict[str, Any]:
    """The instance, its tokens and its trail as JSON-ready data (``bpm show --json``)."""
    return {
        "id": inst.id,
        "definition_id": inst.definition_id,
        "business_key": inst.business_key,
        "state": inst.state.value,
        "variables": inst.variables,
        "created_at": inst.created_at.isoformat(),
        "ended_at": inst.ended_at.isoformat() if inst.ended_at else None,
        "tokens": [
            {
                "id": t.id,
                "node_id": t.node_id,
                "state": t.state.value,
                "blocked_by": (
                    {"kind": t.blocked_kind.value, "id": t.blocked_id} if t.blocked_kind else None
                ),
                "attempt": t.attempt,
                "scope_id": t.scope_id,
                "error": t.error,
            }
            for t in inst.tokens
        ],
        "history": [
            {
                "seq": e.seq,
                "at": e.at.isoformat(),
                "type": e.type,
                "node_id": e.node_id,
                "token_id": e.token_id,
                "from": e.from_state,
                "to": e.to_state,
                "payload": e.payload,
            }
            for e in events
        ],
    }
