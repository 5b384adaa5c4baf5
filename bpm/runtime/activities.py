"""Activity instances, read from the token events of an instance's history.

A token is one visit of the flow to one node: its ``token_created`` event starts an
activity instance and its ``token_completed`` or ``token_terminated`` event ends it
(``canceled`` when terminated). Tokens that passed through a gateway or an event in one
transaction have no token row, but their events are here like every other token's.
Pure functions over decoded history rows; the store pages the rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from bpm.runtime.records import HistoryEvent

_ENDS = {"token_completed": False, "token_terminated": True}


@dataclass(frozen=True)
class ActivityInstance:
    """One visit of a token to a node; ``ended_at`` None while it lasts.

    ``seq`` and ``position`` place its start in the history (row, index in the row)."""

    instance_id: str
    token_id: str
    node_id: str
    started_at: datetime
    seq: int
    position: int
    ended_at: datetime | None = None
    canceled: bool = False

    @property
    def id(self) -> str:
        """Camunda's activity instance id: ``activityId:executionId``."""
        return f"{self.node_id}:{self.token_id}"


def starts(rows: Iterable[tuple[int, list[HistoryEvent]]]) -> list[ActivityInstance]:
    """The activity instances started in ``rows`` ((seq, events) in history order)."""
    out = []
    for seq, events in rows:
        for position, e in enumerate(events):
            if e.type == "token_created" and e.token_id and e.node_id:
                out.append(
                    ActivityInstance(
                        instance_id=e.instance_id,
                        token_id=e.token_id,
                        node_id=e.node_id,
                        started_at=e.at,
                        seq=seq,
                        position=position,
                    )
                )
    return out


def ends(events: Iterable[HistoryEvent]) -> dict[str, tuple[datetime, bool]]:
    """token id -> (end time, canceled) of every token that ended in ``events``."""
    out: dict[str, tuple[datetime, bool]] = {}
    for e in events:
        if e.type in _ENDS and e.token_id:
            out[e.token_id] = (e.at, _ENDS[e.type])
    return out


def ended(activity: ActivityInstance, found: dict[str, tuple[datetime, bool]]) -> ActivityInstance:
    """``activity`` with its end from ``found`` (as returned by :func:`ends`), if there."""
    end = found.get(activity.token_id)
    if end is None:
        return activity
    return ActivityInstance(
        instance_id=activity.instance_id,
        token_id=activity.token_id,
        node_id=activity.node_id,
        started_at=activity.started_at,
        seq=activity.seq,
        position=activity.position,
        ended_at=end[0],
        canceled=end[1],
    )
