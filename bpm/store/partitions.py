"""History partitioned by time, on PostgreSQL: one partition per calendar month (UTC).

The ``history`` table is the engine's largest (a row per transaction and instance). On
PostgreSQL it is ``PARTITION BY RANGE (at)`` (migration 0013): ``history_pYYYY_MM`` holds
the rows of one month, ``history_default`` whatever falls outside the months created (never
lost, only never dropped whole), and ``history_before_YYYY_MM`` the rows a database had
before it was partitioned (everything older than that month). An instance's rows are found
through each partition's ``(instance_id, seq)`` index, so a lookup costs one index probe
per partition, whatever the number of rows.

Retention (:func:`bpm.engine.retention.purge_history`) drops a whole partition once every
row in it is older than the cutoff and no instance it still keeps has rows there (an
instance that is live, or ended after the cutoff); otherwise its rows go one instance at
a time, as on SQLite, which keeps one unpartitioned table. Partitions for the months ahead
are created by the migration and by every purge (:func:`ensure`), with a short lock
timeout: creating a partition locks the parent table for a moment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Connection, text

from bpm.runtime.states import FINAL_INSTANCE_STATES

PARENT = "history"
DEFAULT = "history_default"
_MONTH = re.compile(r"^history_p(\d{4})_(\d{2})$")
_BEFORE = re.compile(r"^history_before_(\d{4})_(\d{2})$")
# How many months after the current one get their partition ahead of time.
AHEAD = 2
LOCK_TIMEOUT = "2s"
# Two purges at once (beat on two hosts) take turns at creating and dropping partitions.
_MAINTAINER = 0x62706D68  # "bpmh"


def _take_turn(conn: Connection) -> None:
    """The lock timeout for what follows, then this transaction's turn (see _MAINTAINER)."""
    conn.execute(text(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'"))
    conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _MAINTAINER})


def is_partition(name: str) -> bool:
    """Whether a table name is one of history's partitions (not in the table metadata)."""
    return name == DEFAULT or bool(_MONTH.match(name) or _BEFORE.match(name))


def include_name(name: str | None, type_: str, parent_names: object) -> bool:
    """For Alembic's comparison: history's partitions are made at run time, not by the
    table metadata."""
    return not (type_ == "table" and name is not None and is_partition(name))


def month_start(at: datetime) -> datetime:
    at = at.astimezone(UTC)
    return datetime(at.year, at.month, 1, tzinfo=UTC)


def next_month(at: datetime) -> datetime:
    start = month_start(at)
    if start.month == 12:
        return start.replace(year=start.year + 1, month=1)
    return start.replace(month=start.month + 1)


def month_name(at: datetime) -> str:
    start = month_start(at)
    return f"history_p{start.year:04d}_{start.month:02d}"


@dataclass(frozen=True)
class Partition:
    """One partition: rows with ``lower <= at < upper`` (``lower`` None: no lower bound;
    both None: the default partition)."""

    name: str
    lower: datetime | None
    upper: datetime | None


def _bounds(name: str) -> Partition:
    if (m := _MONTH.match(name)) is not None:
        lower = datetime(int(m[1]), int(m[2]), 1, tzinfo=UTC)
        return Partition(name, lower, next_month(lower))
    if (m := _BEFORE.match(name)) is not None:
        return Partition(name, None, datetime(int(m[1]), int(m[2]), 1, tzinfo=UTC))
    return Partition(name, None, None)


def partitioned(conn: Connection) -> bool:
    """True on PostgreSQL once migration 0013 partitioned the history."""
    if conn.dialect.name != "postgresql":
        return False
    kind = conn.execute(
        text("SELECT relkind FROM pg_class WHERE oid = to_regclass(:t)"), {"t": PARENT}
    ).scalar()
    return kind == "p"


def partitions(conn: Connection) -> list[Partition]:
    """The history's partitions, oldest first (the default partition last)."""
    if not partitioned(conn):
        return []
    names = conn.execute(
        text(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
            " WHERE i.inhparent = to_regclass(:t)"
        ),
        {"t": PARENT},
    ).scalars()
    found = [_bounds(n) for n in names if is_partition(n)]
    far = datetime.max.replace(tzinfo=UTC)
    return sorted(found, key=lambda p: (p.upper is None, p.upper or far))


def ensure(conn: Connection, first: datetime, last: datetime) -> list[str]:
    """Create the monthly partitions from ``first``'s month to ``last``'s that are missing;
    returns their names. A month whose rows already went to the default partition keeps
    them there (PostgreSQL refuses a partition that would take rows from the default)."""
    if last < first:
        raise ValueError(f"the last month ({last:%Y-%m}) is before the first ({first:%Y-%m})")
    if not partitioned(conn):
        return []
    _take_turn(conn)  # then read what exists: another purge may just have made it
    have = {p.name for p in partitions(conn)}
    made: list[str] = []
    month = month_start(first)
    while month <= month_start(last):
        name, upper = month_name(month), next_month(month)
        if name not in have and not _in_default(conn, month, upper):
            conn.execute(
                text(
                    f'CREATE TABLE "{name}" PARTITION OF {PARENT}'
                    f" FOR VALUES FROM ('{month.isoformat()}') TO ('{upper.isoformat()}')"
                )
            )
            made.append(name)
        month = upper
    return made


def _in_default(conn: Connection, lower: datetime, upper: datetime) -> bool:
    q = text(f"SELECT EXISTS (SELECT 1 FROM {DEFAULT} WHERE at >= :lo AND at < :hi)")
    return bool(conn.execute(q, {"lo": lower, "hi": upper}).scalar())


def droppable(conn: Connection, cutoff: datetime) -> list[str]:
    """Partitions whose rows are all older than ``cutoff`` and hold no row of an instance
    retention keeps (live, or ended at or after ``cutoff``), oldest first.

    An instance's rows are never older than its start, so only the instances started
    before a partition's end are looked up in it (one index probe each)."""
    final = ", ".join(f"'{s.value}'" for s in FINAL_INSTANCE_STATES)
    out = []
    for p in partitions(conn):
        if p.upper is None or p.upper > cutoff:
            continue
        keeps = conn.execute(
            text(
                "SELECT EXISTS (SELECT 1 FROM process_instance pi"
                " WHERE pi.created_at < :upper"
                f" AND NOT (pi.state IN ({final}) AND pi.ended_at IS NOT NULL"
                " AND pi.ended_at < :cutoff)"
                f' AND EXISTS (SELECT 1 FROM "{p.name}" h WHERE h.instance_id = pi.id))'
            ),
            {"upper": p.upper, "cutoff": cutoff},
        ).scalar()
        if not keeps:
            out.append(p.name)
    return out


def drop(conn: Connection, name: str) -> None:
    """Drop one partition (its rows go with it, at the cost of a file unlink)."""
    if not (_MONTH.match(name) or _BEFORE.match(name)):
        raise ValueError(f"{name!r} is not a history partition that may be dropped")
    _take_turn(conn)
    conn.execute(text(f'DROP TABLE IF EXISTS "{name}"'))  # another purge may have been first
