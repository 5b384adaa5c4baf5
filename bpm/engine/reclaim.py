"""Taking back the steps of lost workers: a lease that ran out, or a holder proven dead.

Either way it is a failed attempt ("worker lost") under the step's retry policy, so the
step runs again, or ends in an incident when its attempts are used up: a handler that
kills its worker every time does not loop. History gets a ``lease_lost`` event first.
The next attempt is due after the policy's delay, or after the handler's
``lost_worker_delay`` when it has one (Celery tasks: at once, as Celery redelivers).
"""

from __future__ import annotations

import logging
from datetime import datetime

from bpm.engine import observed
from bpm.engine.core import EngineCore
from bpm.engine.lost_workers import provably_dead
from bpm.engine.step_policy import policy_for
from bpm.engine.unit import unit_of_work
from bpm.errors import NotFound
from bpm.runtime.failure import Failure, fail_attempt
from bpm.runtime.states import TokenState
from bpm.store import tokens as token_store

log = logging.getLogger("bpm.execution")


def reclaim_expired_leases(
    core: EngineCore, *, now: datetime | None = None, limit: int = 100
) -> int:
    """Expired leases count as failed attempts ("worker lost"); returns how many."""
    at = core.now(now)
    with core.db.connect() as conn:
        expired = token_store.expired_leases(conn, at, limit)
    return sum(
        take_back(core, instance_id, token_id, at, cause="lease_expired")
        for instance_id, token_id in expired
    )


def take_back(
    core: EngineCore,
    instance_id: str,
    token_id: str,
    at: datetime,
    *,
    cause: str,
    owner: str | None = None,
) -> bool:
    """The worker holding a step is lost: a failed attempt under the retry policy.

    ``cause`` ``lease_expired``: only if the lease ran out by ``at``; ``holder_died``: only
    if ``owner`` still holds it (its process was proven dead). History gets a
    ``lease_lost`` event, then the failed attempt and the way back to Ready (or the
    incident). Returns whether it was taken back.
    """
    try:
        with unit_of_work(core, at) as unit:
            work = unit.work(instance_id)
            tok = work.tokens.get(token_id)
            if tok is None or tok.state is not TokenState.EXECUTING:
                return False
            if cause == "lease_expired" and (
                tok.lease_expires_at is None or tok.lease_expires_at >= at
            ):
                return False
            if cause == "holder_died" and tok.lease_owner != owner:
                return False
            walker = unit.walker(work)
            node = walker.model.node(tok.node_id)
            spec = core.registry.find(getattr(node, "handler", None) or "")
            policy = policy_for(node, spec)
            if cause == "lease_expired":
                error = f"worker lost: lease of {tok.lease_owner} expired"
            else:
                error = f"worker lost: process {tok.lease_owner} died"
            work.record(
                "lease_lost",
                token_id=tok.id,
                node_id=tok.node_id,
                payload={
                    "owner": tok.lease_owner,
                    "attempt": tok.attempt,
                    "cause": cause,
                    "lease_expires_at": (
                        tok.lease_expires_at.isoformat() if tok.lease_expires_at else None
                    ),
                },
            )
            delay = spec.lost_worker_delay if spec is not None else None
            fail_attempt(walker, tok, policy, Failure(error=error, failed_at=at, delay=delay))
            walker.run()
            incident = observed.incident_of(work, tok.id) if core.observers else None
    except NotFound:  # purged since the scan
        return False
    if cause == "holder_died":
        core.stats.dead_holders_reclaimed += 1
    log.warning("took back step %s attempt %d: %s", tok.id, tok.attempt, error)
    if core.observers:
        retried = policy.has_attempt_after(tok.attempt)
        observed.lease_expired(core, tok, walker.model.key, retried, at, error, incident)
    return True


def holder_died(core: EngineCore, token_id: str, now: datetime) -> bool:
    """The asked step is Executing for a process of this host that no longer runs: take
    it back now instead of when its lease runs out, and every other step that process
    held (the rest of its batch). Returns whether the asked step was taken back."""
    with core.tx() as conn:  # the connection run_token holds: no pool checkout, no ping
        found = token_store.holder(conn, token_id)
        if found is None or not provably_dead(found[1]):
            return False
        owner = found[1]
        held = token_store.held_by(conn, owner)
    taken = False
    for instance_id, held_id in held:
        back = take_back(core, instance_id, held_id, now, cause="holder_died", owner=owner)
        taken = taken or (back and held_id == token_id)
    return taken
