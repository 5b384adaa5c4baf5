"""The JSON the cockpit API answers with: engine records as plain objects, ISO 8601 times."""

from __future__ import annotations

import base64
import binascii
from datetime import UTC, datetime
from typing import Any

from bpm.api.errors import bad_request
from bpm.engine.cockpit import (
    DefinitionSummary,
    IncidentGroup,
    InstancePage,
    InstanceView,
    PageCursor,
    WorkOverview,
)
from bpm.runtime.records import (
    ExternalTask,
    HistoryEvent,
    Incident,
    Instance,
    ProcessDefinition,
    Timer,
    Token,
    UserTask,
)
from bpm.runtime.states import TokenState


def iso(value: datetime | None) -> str | None:
    return value.astimezone(UTC).isoformat() if value is not None else None


def encode_cursor(cursor: PageCursor | None) -> str | None:
    if cursor is None:
        return None
    raw = f"{cursor.created_at.astimezone(UTC).isoformat()}|{cursor.id}"
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(text: str) -> PageCursor:
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
        at, _, instance_id = raw.partition("|")
        created = datetime.fromisoformat(at)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise bad_request("cursor is not one this API gave out; start again without it") from None
    if not instance_id or created.tzinfo is None:
        raise bad_request("cursor is not one this API gave out; start again without it")
    return PageCursor(created, instance_id)


def definition_json(d: ProcessDefinition) -> dict[str, Any]:
    return {
        "id": d.id,
        "key": d.key,
        "version": d.version,
        "name": d.name,
        "resource": d.resource,
        "versionTag": d.version_tag,
        "deployedAt": iso(d.created_at),
    }


def summary_json(s: DefinitionSummary) -> dict[str, Any]:
    return {**definition_json(s.definition), "counts": s.counts, "openIncidents": s.open_incidents}


def instance_row_json(inst: Instance, open_incidents: int = 0) -> dict[str, Any]:
    return {
        "id": inst.id,
        "definitionId": inst.definition_id,
        "definitionKey": inst.definition_key,
        "businessKey": inst.business_key,
        "state": inst.state.value,
        "startedAt": iso(inst.created_at),
        "updatedAt": iso(inst.updated_at),
        "endedAt": iso(inst.ended_at),
        "openIncidents": open_incidents,
    }


def page_json(page: InstancePage) -> dict[str, Any]:
    return {
        "items": [instance_row_json(i, page.open_incidents.get(i.id, 0)) for i in page.instances],
        "next": encode_cursor(page.next_cursor),
    }


def token_json(t: Token) -> dict[str, Any]:
    return {
        "id": t.id,
        "nodeId": t.node_id,
        "state": t.state.value,
        "blockedBy": {"kind": t.blocked_kind.value, "id": t.blocked_id} if t.blocked_kind else None,
        "attempt": t.attempt,
        "leaseOwner": t.lease_owner,
        "leaseExpiresAt": iso(t.lease_expires_at),
        "error": t.error,
        "scopeId": t.scope_id,
        "createdAt": iso(t.created_at),
        "updatedAt": iso(t.updated_at),
    }


def timer_json(t: Timer) -> dict[str, Any]:
    return {
        "id": t.id,
        "instanceId": t.instance_id,
        "tokenId": t.token_id,
        "nodeId": t.node_id,
        "kind": t.kind,
        "state": t.state,
        "dueAt": iso(t.fire_at),
        "repeatLeft": t.repeat_left,
    }


def external_task_json(t: ExternalTask) -> dict[str, Any]:
    return {
        "id": t.id,
        "tokenId": t.token_id,
        "nodeId": t.node_id,
        "topic": t.topic,
        "state": t.state.value,
        "lockOwner": t.lock_owner,
        "lockExpiresAt": iso(t.lock_expires_at),
        "retries": t.retries,
        "retryAt": iso(t.retry_at),
        "attempt": t.attempt,
        "errorMessage": t.error_message,
        "priority": t.priority,
    }


def user_task_json(t: UserTask) -> dict[str, Any]:
    return {
        "id": t.id,
        "tokenId": t.token_id,
        "nodeId": t.node_id,
        "name": t.name,
        "assignee": t.assignee,
        "candidateGroups": list(t.candidate_groups),
        "createdAt": iso(t.created_at),
    }


def incident_json(i: Incident) -> dict[str, Any]:
    return {
        "id": i.id,
        "instanceId": i.instance_id,
        "tokenId": i.token_id,
        "nodeId": i.node_id,
        "type": i.type,
        "state": i.state,
        "message": i.message,
        "details": (i.details or "")[:20_000] or None,
        "externalTaskId": i.external_task_id,
        "createdAt": iso(i.created_at),
        "resolvedAt": iso(i.resolved_at),
    }


def node_overlay(view: InstanceView) -> dict[str, dict[str, Any]]:
    """Per node: live tokens by display state, and why they wait (the diagram overlay)."""
    failed_nodes = {i.node_id for i in view.incidents}
    out: dict[str, dict[str, Any]] = {}
    for t in view.instance.tokens:
        if t.state in (TokenState.COMPLETED, TokenState.TERMINATED):
            continue
        entry = out.setdefault(t.node_id, {"executing": 0, "waiting": 0, "failed": 0,
                                           "ready": 0, "reasons": []})  # fmt: skip
        if t.state is TokenState.FAILED:
            entry["failed"] += 1
        elif t.state is TokenState.EXECUTING:
            entry["executing"] += 1
        elif t.state is TokenState.WAITING:
            entry["waiting"] += 1
            if t.blocked_kind is not None and t.blocked_kind.value not in entry["reasons"]:
                entry["reasons"].append(t.blocked_kind.value)
        else:
            entry["ready"] += 1
    for node_id in failed_nodes:
        out.setdefault(node_id, {"executing": 0, "waiting": 0, "failed": 0, "ready": 0,
                                 "reasons": []})  # fmt: skip
    return out


def instance_view_json(view: InstanceView) -> dict[str, Any]:
    inst = view.instance
    return {
        **instance_row_json(inst, len(view.incidents)),
        "definition": definition_json(view.definition) if view.definition else None,
        "variables": inst.variables,
        "tokens": [token_json(t) for t in inst.tokens],
        "overlay": node_overlay(view),
        "timers": [timer_json(t) for t in view.timers],
        "externalTasks": [external_task_json(t) for t in view.external_tasks],
        "userTasks": [user_task_json(t) for t in view.user_tasks],
        "incidents": [incident_json(i) for i in view.incidents],
        "parentId": view.parent_id,
        "childIds": list(view.child_ids),
    }


def event_json(e: HistoryEvent) -> dict[str, Any]:
    return {
        "seq": e.seq,
        "at": iso(e.at),
        "type": e.type,
        "nodeId": e.node_id,
        "tokenId": e.token_id,
        "from": e.from_state,
        "to": e.to_state,
        "payload": e.payload,
    }


def group_json(g: IncidentGroup) -> dict[str, Any]:
    return {
        "definitionId": g.definition_id,
        "definitionKey": g.definition_key,
        "nodeId": g.node_id,
        "count": g.count,
        "oldest": iso(g.oldest),
    }


def work_json(w: WorkOverview) -> dict[str, Any]:
    return {
        "at": iso(w.at),
        "readyTokens": sum(x.count for x in w.ready_by_node),
        "readyByNode": [
            {"nodeId": x.node_id, "count": x.count, "oldest": iso(x.oldest)}
            for x in w.ready_by_node
        ],
        "executingByNode": [
            {"nodeId": x.node_id, "count": x.count, "oldest": iso(x.oldest)}
            for x in w.executing_by_node
        ],
        "topics": [
            {"topic": x.topic, "ready": x.ready, "locked": x.locked, "expired": x.expired}
            for x in w.topics
        ],
        "timersDueNextMinute": w.timers_due_next_minute,
        "timersDue": [timer_json(t) for t in w.timers_due],
        "workers": [
            {
                "name": x.name,
                "kind": x.kind,
                "holding": x.holding,
                "lockExpiresAt": iso(x.lock_expires_at),
                "topics": list(x.topics),
            }
            for x in w.workers
        ],
        "celeryWorkers": list(w.celery_workers),
    }
