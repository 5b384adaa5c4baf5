"""batches: operations on many instances, run in chunks by workers

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-02

A batch (Camunda's ``/batch``) is one operator action on many items (instances, tasks):
its items are cut into chunks when it is created, each chunk is claimed by a worker
with a lease and applied in one transaction, and what failed is kept per item with the
reason. The operation log gets a ``batch_id``. The batch row stays after it ended: it
is the batch's history (``/history/batch``).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "batch",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("type", sa.String(length=64), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("params", _JSON, nullable=False),
        sa.Column("total_items", sa.Integer(), nullable=False),
        sa.Column("total_jobs", sa.Integer(), nullable=False),
        sa.Column("chunk_size", sa.Integer(), nullable=False),
        sa.Column("jobs_per_seed", sa.Integer(), nullable=False),
        sa.Column("completed_jobs", sa.Integer(), nullable=False),
        sa.Column("failed_jobs", sa.Integer(), nullable=False),
        sa.Column("completed_items", sa.Integer(), nullable=False),
        sa.Column("failed_items", sa.Integer(), nullable=False),
        sa.Column("created_by", sa.String(length=255), nullable=True),
        sa.Column("annotation", sa.Text(), nullable=True),
        sa.Column("tenant_id", sa.String(length=255), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_batch_created", "batch", ["created_at", "id"])
    op.create_table(
        "batch_chunk",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("batch_id", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("items", _JSON, nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("lease_owner", sa.String(length=255), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("published_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("done_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("failures", _JSON, nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["batch_id"], ["batch.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_batch_chunk_batch", "batch_chunk", ["batch_id", "seq"])
    op.create_index("ix_batch_chunk_state", "batch_chunk", ["state", "published_at"])
    # the operation log names the batch an entry belongs to (Camunda's batchId)
    op.add_column("operation_log", sa.Column("batch_id", sa.String(length=64), nullable=True))


def downgrade() -> None:
    op.drop_column("operation_log", "batch_id")
    op.drop_index("ix_batch_chunk_state", table_name="batch_chunk")
    op.drop_index("ix_batch_chunk_batch", table_name="batch_chunk")
    op.drop_table("batch_chunk")
    op.drop_index("ix_batch_created", table_name="batch")
    op.drop_table("batch")
