"""worker bindings: a worker id belongs to the API key that first used it

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-30

An external worker's ``workerId`` is bound to one API key, so that another key cannot
complete, fail or extend a task locked under it (issue 13 item 3).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "worker_binding",
        sa.Column("worker_id", sa.String(length=255), nullable=False),
        sa.Column("key_id", sa.String(length=255), nullable=False),
        sa.Column("bound_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("worker_id"),
    )


def downgrade() -> None:
    op.drop_table("worker_binding")
