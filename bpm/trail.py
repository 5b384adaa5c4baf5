"""Rendering an instance's history as a token trail, for ``bpm run`` and ``bpm show``.

The trail is indented by scope: a step inside a sub-process, a multi-instance body or one
of its inner instances is shifted right once per level (the depth each token was created
at is in its ``token_created`` event).
"""

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
    if e.type == "timer_scheduled":
        parts.append(f"{str(p.get('kind', '')).replace('_', ' ')} timer due {p.get('due')}")
    if e.type == "join_fired":
        parts.append(f"joined {len(p.get('tokens', []))} tokens")
    if "reason" in p:
        parts.append(str(p["reason"]))
    if e.type == "scope_entered":
        parts.append(str(p.get("kind", "scope")).replace("_", " "))
        if p.get("loop_counter") is not None:
            parts.append(f"#{p['loop_counter']}")
    if e.type == "compensation_thrown":
        parts.append("compensates " + (", ".join(p.get("activities") or []) or "nothing"))
    if e.type in ("compensation_running", "compensation_compensated") and p.get("handler"):
        done = "undone" if e.type.endswith("compensated") else "undo"
        parts.append(f"{done} {p.get('activity')} ({p['handler']})")
    if e.type == "call_started":
        parts.append(f"calls {p.get('process')} ({p.get('child', '')})")
    if e.type == "listeners_ran":
        parts.append("ran " + ", ".join(p.get("listeners") or []))
    if e.type == "task_listeners_queued":
        parts.append(f"{p.get('event')} listeners queued for a worker")
    if e.type == "task_listeners_done":
        parts.append("handled " + (", ".join(p.get("events") or []) or "nothing"))
    if e.type == "decision_evaluated":
        into = f" into {p['result_variable']}" if p.get("result_variable") else ""
        parts.append(f"decided {p.get('decision')} v{p.get('version')}{into}")
    if e.type == "instance_modified":
        steps = []
        for ins in p.get("instructions") or []:
            target = next(
                (ins[k] for k in ("activityId", "transitionId", "activityInstanceId",
                                  "transitionInstanceId") if k in ins),
                "",
            )  # fmt: skip
            steps.append(f"{ins.get('type')} {target}".strip())
        parts.append(f"by {p.get('by')}: " + ", ".join(steps))
        if p.get("annotation"):
            parts.append(str(p["annotation"]))
    if e.type == "instance_migrated":
        undo = f" (undo of {p['undo_of']})" if p.get("undo_of") else ""
        parts.append(f"by {p.get('by')}: {p.get('source')} -> {p.get('target')}{undo}")
        parts.append(f"operation {p.get('operation')}")
        if p.get("annotation"):
            parts.append(str(p["annotation"]))
    return "; ".join(parts)


def depths(events: Sequence[HistoryEvent]) -> list[int]:
    """How many scopes each event happened in (0: the process itself)."""
    token_depth: dict[str, int] = {}
    out = []
    for e in events:
        if e.type == "token_created" and e.token_id:
            token_depth[e.token_id] = int(e.payload.get("depth", 0))
        out.append(token_depth.get(e.token_id or "", 0))
    return out


def trail_table(events: Sequence[HistoryEvent], *, title: str | None = None) -> Table:
    """A table of every event: time since start, node, token, transition, details."""
    table = Table(title=title, header_style="bold", expand=False)
    for col in ("#", "+ms", "node", "token", "event", "details"):
        table.add_column(col, no_wrap=col != "details")
    start = events[0].at if events else None
    for e, depth in zip(events, depths(events), strict=True):
        ms = int((e.at - start).total_seconds() * 1000) if start else 0
        move = f"{e.from_state} -> {e.to_state}" if e.from_state and e.to_state else e.type
        if e.type.startswith("token_") and e.from_state is None:
            move = "created"
        node = "  " * depth + (e.node_id or "") if e.node_id else ""
        table.add_row(str(e.seq), str(ms), node, (e.token_id or "")[:8], move, _details(e))
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
        "parent_id": inst.parent_id,
        "root_id": inst.root_id,
        "children": list(inst.children),
        "scopes": [
            {
                "id": x.id,
                "kind": x.kind.value,
                "node_id": x.node_id,
                "state": x.state.value,
                "parent_id": x.parent_id,
                "loop_counter": x.loop_counter,
                "variables": x.variables,
            }
            for x in inst.scopes
        ],
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
