"""Incidents: steps that ran out of attempts and wait for an operator, and retrying them."""

from __future__ import annotations

from datetime import datetime

from bpm.engine import oplog
from bpm.engine.core import EngineCore
from bpm.engine.unit import unit_of_work
from bpm.errors import InvalidOperation, NotFound
from bpm.model import nodes as n
from bpm.runtime.records import ExternalTask, Incident
from bpm.runtime.states import BlockKind, IncidentState, InstanceState, TaskState, TokenState
from bpm.store import history as history_store
from bpm.store import incidents as store
from bpm.store import instances as instance_store

__all__ = ["Incident", "incidents", "retry_incident", "step_failed"]


def incidents(
    core: EngineCore,
    instance_id: str | None = None,
    *,
    state: str | None = IncidentState.OPEN.value,
    limit: int | None = None,
) -> list[Incident]:
    """Open incidents (all of them, or of one instance), oldest first."""
    if state is not None and state not in {s.value for s in IncidentState}:
        raise InvalidOperation(f"unknown incident state '{state}'; use open, resolved or deleted")
    with core.db.connect() as conn:
        return store.list_incidents(conn, instance_id=instance_id, state=state, limit=limit)


def step_failed(core: EngineCore, instance_id: str, node_id: str) -> str | None:
    """The persisted final error of ``node_id`` (attempts used up), or None.

    Only a *final* failure counts: an attempt that will be retried is not reported, and a
    step whose incident was retried is no longer failed (until it fails for good again).
    """
    with core.db.connect() as conn:
        if instance_store.get(conn, instance_id, with_tokens=False) is None:
            raise NotFound(f"process instance {instance_id} does not exist")
        events = history_store.events_of(conn, instance_id)
    for e in reversed(events):
        if e.node_id == node_id and e.type in ("step_failed", "incident_retried"):
            if e.type != "step_failed":
                return None
            error = e.payload.get("error")
            return str(error) if error is not None else None
    return None


def retry_incident(
    core: EngineCore, incident_id: str, *, by: str | None = None, now: datetime | None = None
) -> Incident:
    """Run the failed step again with a fresh set of attempts and resolve the incident.

    An inline service task goes ``failed -> ready`` with its attempt counter reset (the
    handler sees ``ctx.attempt == 1`` again; history keeps every earlier attempt) and is
    dispatched after commit. Any other failed node (a gateway, a timer whose ``${var}``
    was missing) is entered again, so it re-evaluates with the current variables. An
    external task is made fetchable again with one retry.
    """
    with unit_of_work(core, now) as unit:
        work = unit.work_of(Incident, incident_id)  # the instance lock, first
        inc = work.item(Incident, incident_id) if work else None  # read under the lock
        if work is None or inc is None:
            raise NotFound(
                f"incident {incident_id} does not exist; list open ones with `bpm incidents`"
            )
        if inc.state is not IncidentState.OPEN:
            raise InvalidOperation(
                f"incident {incident_id} is {inc.state.value}, not open: there is nothing to retry"
            )
        inst = work.instance
        if inst.state is InstanceState.SUSPENDED:
            raise InvalidOperation(
                f"instance {inst.id} is suspended; resume it before retrying its incidents"
            )
        if inst.ended:
            raise InvalidOperation(f"instance {inst.id} is already {inst.state.value}")
        walker = unit.walker(work)
        tok = work.tokens.get(inc.token_id)
        if inc.external_task_id is None and (tok is None or tok.state is not TokenState.FAILED):
            raise InvalidOperation(
                f"the step of incident {incident_id} is no longer failed; nothing to retry"
            )
        oplog.write(unit.conn, unit.now, "SetJobRetries", "Job", by=by, instance=inst,
                    changes=(("retries", "0", "1"), ("incidentId", None, inc.id)))  # fmt: skip
        resolved = work.move(
            inc,
            IncidentState.RESOLVED,
            event="incident_retried",
            payload={"type": inc.type},
            resolved_at=unit.now,
        )
        if inc.external_task_id is not None:
            task = work.item(ExternalTask, inc.external_task_id)
            if task is not None and task.state is TaskState.FAILED:
                work.move(
                    task,
                    TaskState.READY,
                    retries=1,
                    lock_owner=None,
                    lock_expires_at=None,
                    retry_at=None,
                    updated_at=unit.now,
                )
                work.notify.add(task.topic)
            if tok is not None and tok.state is TokenState.FAILED:
                work.transition(tok.id, TokenState.READY, payload={"incident": inc.id})
                work.transition(
                    tok.id,
                    TokenState.WAITING,
                    blocked=(BlockKind.EXTERNAL_TASK, inc.external_task_id),
                )
        else:
            assert tok is not None
            node = walker.model.node(tok.node_id)
            tok = work.transition(tok.id, TokenState.READY, attempt=0, payload={"incident": inc.id})
            if n.inline_task(node) is not None and inc.type == "failedJob":
                work.to_dispatch.append(tok.id)  # boundary timers are still pending
            else:
                walker.continue_tokens([tok])
        walker.run()
    return resolved
