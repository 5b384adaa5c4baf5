"""Incidents: steps that ran out of attempts and wait for an operator, and retrying them."""

from __future__ import annotations

from datetime import datetime

from bpm.engine.core import EngineCore
from bpm.errors import InvalidOperation, NotFound
from bpm.model import nodes as n
from bpm.runtime.advance import Flow
from bpm.runtime.states import BlockKind, InstanceState, TokenState
from bpm.store import incidents as store
from bpm.store import instances as instance_store
from bpm.store.incidents import Incident

T = TokenState

__all__ = ["Incident", "incidents", "retry_incident", "step_failed"]


def incidents(
    core: EngineCore,
    instance_id: str | None = None,
    *,
    state: str | None = store.OPEN,
    limit: int | None = None,
) -> list[Incident]:
    """Open incidents (all of them, or of one instance), oldest first."""
    if state is not None and state not in (store.OPEN, "resolved", "deleted"):
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
        return store.final_error(conn, instance_id, node_id)


def retry_incident(core: EngineCore, incident_id: str, *, now: datetime | None = None) -> Incident:
    """Run the failed step again with a fresh set of attempts and resolve the incident.

    An inline service task goes ``failed -> ready`` with its attempt counter reset (the
    handler sees ``ctx.attempt == 1`` again; history keeps every earlier attempt) and is
    dispatched after commit. Any other failed node (a gateway, a timer whose ``${var}``
    was missing) is entered again, so it re-evaluates with the current variables. An
    external task is made fetchable again with one retry.
    """
    at = core.now(now)
    with core.db.connect() as conn:
        found = store.get(conn, incident_id)
    if found is None:
        raise NotFound(
            f"incident {incident_id} does not exist; list open ones with `bpm incidents`"
        )
    with core.tx() as conn:
        work = core.load(conn, found.instance_id, at)  # the instance lock, first
        inc = store.get(conn, incident_id)  # re-read under the lock: a retry may have won
        assert inc is not None
        if inc.state != store.OPEN:
            raise InvalidOperation(
                f"incident {incident_id} is {inc.state}, not open: there is nothing to retry"
            )
        inst = work.instance
        if inst.state is InstanceState.SUSPENDED:
            raise InvalidOperation(
                f"instance {inst.id} is suspended; resume it before retrying its incidents"
            )
        if inst.ended:
            raise InvalidOperation(f"instance {inst.id} is already {inst.state.value}")
        model = core.model(conn, inst.definition_id)
        flow = Flow(work, model)
        tok = work.tokens.get(inc.token_id)
        if inc.external_task_id is None and (tok is None or tok.state is not T.FAILED):
            raise InvalidOperation(
                f"the step of incident {incident_id} is no longer failed; nothing to retry"
            )
        work.update_rows(
            "incident", {"id": inc.id, "state": store.OPEN}, state="resolved", resolved_at=at
        )
        work.record(
            "incident_retried",
            token_id=inc.token_id,
            node_id=inc.node_id,
            payload={"incident": inc.id, "type": inc.type},
        )
        if inc.external_task_id is not None:
            work.update_rows(
                "external_task",
                {"id": inc.external_task_id},
                state="ready",
                retries=1,
                lock_owner=None,
                lock_expires_at=None,
                retry_at=None,
                updated_at=at,
            )
            if tok is not None and tok.state is T.FAILED:
                work.transition(tok.id, T.READY, payload={"incident": inc.id})
                work.transition(
                    tok.id, T.WAITING, blocked=(BlockKind.EXTERNAL_TASK, inc.external_task_id)
                )
        else:
            assert tok is not None
            node = model.node(tok.node_id)
            tok = work.transition(tok.id, T.READY, attempt=0, payload={"incident": inc.id})
            if (
                isinstance(node, n.ServiceTask)
                and not node.is_external
                and (inc.type == "failedJob")
            ):
                work.to_dispatch.append(tok.id)  # boundary timers are still pending
            else:
                flow.continue_tokens([tok])
        flow.run(())
        core.flush(conn, work)
        resolved = store.get(conn, incident_id)
    core.dispatch(work.to_dispatch)
    assert resolved is not None
    return resolved
