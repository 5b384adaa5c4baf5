"""history partitioned by time on PostgreSQL: one partition per month, retention drops them

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01

The existing ``history`` table becomes the partition ``history_before_YYYY_MM`` (every row
older than that month; attached, not copied); a partitioned ``history`` takes its place
with the same columns, sequence and index, a default partition and the partitions of the
current month and the next two (:mod:`bpm.store.partitions`). SQLite keeps one table.
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from alembic import op

from bpm.store import partitions as parts

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_COLUMNS = (
    "seq BIGINT NOT NULL DEFAULT nextval('history_seq_seq'::regclass),"
    " instance_id VARCHAR(64) NOT NULL, at TIMESTAMP WITH TIME ZONE NOT NULL,"
    " events JSONB NOT NULL"
)


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    op.execute("ALTER TABLE history RENAME TO history_unpartitioned")
    # the partitioned table's key is (seq, at), built when the old table is attached
    op.execute("ALTER TABLE history_unpartitioned DROP CONSTRAINT history_pkey")
    op.execute("ALTER INDEX ix_history_by_instance RENAME TO ix_history_unpartitioned_by_instance")
    op.execute(
        f"CREATE TABLE history ({_COLUMNS}, CONSTRAINT history_pkey PRIMARY KEY (seq, at))"
        " PARTITION BY RANGE (at)"
    )
    op.execute("ALTER SEQUENCE history_seq_seq OWNED BY history.seq")
    op.execute("ALTER TABLE history_unpartitioned ALTER COLUMN seq DROP DEFAULT")
    op.execute("CREATE INDEX ix_history_by_instance ON history (instance_id, seq)")
    op.execute(f"CREATE TABLE {parts.DEFAULT} PARTITION OF history DEFAULT")
    now = bind.execute(sa.text("SELECT now()")).scalar()
    assert isinstance(now, datetime)
    newest = bind.execute(sa.text("SELECT max(at) FROM history_unpartitioned")).scalar()
    first = parts.month_start(now)
    if newest is None:
        op.execute("DROP TABLE history_unpartitioned")
    else:
        # the old rows stay where they are: the table becomes the partition of everything
        # before the month after its newest row (or this month, if that is later)
        first = max(first, parts.next_month(newest))
        name = f"history_before_{first.year:04d}_{first.month:02d}"
        op.execute(f"ALTER TABLE history_unpartitioned RENAME TO {name}")
        op.execute(
            f"ALTER TABLE history ATTACH PARTITION {name}"
            f" FOR VALUES FROM (MINVALUE) TO ('{first.isoformat()}')"
        )
    last = first
    for _ in range(parts.AHEAD):
        last = parts.next_month(last)
    parts.ensure(bind, first, last)


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    op.execute(
        f"CREATE TABLE history_plain ({_COLUMNS}, CONSTRAINT history_plain_pkey PRIMARY KEY (seq))"
    )
    op.execute("INSERT INTO history_plain SELECT seq, instance_id, at, events FROM history")
    op.execute("ALTER SEQUENCE history_seq_seq OWNED BY history_plain.seq")
    op.execute("DROP TABLE history CASCADE")
    op.execute("ALTER TABLE history_plain RENAME TO history")
    op.execute("ALTER TABLE history RENAME CONSTRAINT history_plain_pkey TO history_pkey")
    op.execute("CREATE INDEX ix_history_by_instance ON history (instance_id, seq)")
