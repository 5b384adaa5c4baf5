"""The events inline execution tells its observers (see :mod:`bpm.observe`).

Kept apart from :mod:`bpm.engine.execution` so that running a step reads as claim, run,
finish: each call site there is one guarded line, ``if core.observers: observed.x(...)``,
and builds nothing when no observer is subscribed.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from bpm.engine.core import EngineCore
from bpm.observe import (
    HandlerFinished,
    HandlerStarted,
    LeaseExpired,
    MessageIgnored,
    StepFinished,
    StepOutcome,
)
from bpm.runtime.records import Incident, Token
from bpm.runtime.states import IncidentState
from bpm.runtime.work import InstanceWork

if TYPE_CHECKING:
    from bpm.engine.steps import Claimed, Outcome


def handler_started(core: EngineCore, step: Claimed, worker: str, started: float) -> None:
    tok = step.token
    core.observers.emit(
        HandlerStarted(
            step.definition_key,
            tok.node_id,
            tok.instance_id,
            tok.id,
            tok.attempt,
            worker,
            max(0.0, started - step.claimed_at),
        )
    )


def handler_finished(core: EngineCore, step: Claimed, worker: str, outcome: Outcome) -> None:
    tok = step.token
    core.observers.emit(
        HandlerFinished(
            step.definition_key,
            tok.node_id,
            tok.instance_id,
            tok.id,
            tok.attempt,
            worker,
            outcome.seconds or 0.0,
            outcome.error,
        )
    )


def incident_of(work: InstanceWork, token_id: str) -> str | None:
    """The id of the open incident on ``token_id`` (the newest), if there is one."""
    open_ = [i for i in work.items_of(Incident, token_id) if i.state is IncidentState.OPEN]
    return max(open_, key=lambda i: i.created_at).id if open_ else None


def steps_finished(
    core: EngineCore,
    results: Sequence[tuple[Claimed, Outcome]],
    outcomes: Sequence[tuple[StepOutcome, str | None] | None],
    worker: str,
) -> None:
    """After the finish committed: one event per step, with the incident its failure
    opened (None: its instance was purged)."""
    now = time.perf_counter()
    for (step, outcome), done in zip(results, outcomes, strict=True):
        if done is None:
            continue
        result, incident = done
        tok = step.token
        core.observers.emit(
            StepFinished(
                step.definition_key,
                tok.node_id,
                tok.instance_id,
                tok.id,
                tok.attempt,
                worker,
                result,
                max(0.0, now - step.claimed_at),
                outcome.seconds,
                outcome.error,
                incident,
            )
        )


def lease_expired(
    core: EngineCore,
    tok: Token,
    definition_key: str,
    retried: bool,
    at: datetime,
    error: str,
    incident: str | None = None,
) -> None:
    """After the reclaimer committed a lost worker's attempt as failed."""
    core.observers.emit(
        LeaseExpired(
            definition_key, tok.node_id, tok.instance_id, tok.id, tok.attempt, tok.lease_owner
        )
    )
    # Claimed at ``updated_at``: the step held its lease from then until now.
    held = (at - tok.updated_at).total_seconds()
    core.observers.emit(
        StepFinished(
            definition_key,
            tok.node_id,
            tok.instance_id,
            tok.id,
            tok.attempt,
            tok.lease_owner or "",
            StepOutcome.RETRIED if retried else StepOutcome.FAILED,
            max(0.0, held),
            None,
            error,
            incident,
        )
    )


def message_ignored(core: EngineCore, token_id: str, reason: str) -> None:
    core.observers.emit(MessageIgnored(token_id, reason))
