"""operation log: what operators did, with its author and annotation

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-01

Camunda's user operation log (``/history/user-operation``): one row per change of one
operation (a modification of an instance first), written in the operation's transaction.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "operation_log",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("operation_id", sa.String(length=64), nullable=False),
        sa.Column("operation_type", sa.String(length=64), nullable=False),
        sa.Column("entity_type", sa.String(length=64), nullable=False),
        sa.Column("category", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.String(length=255), nullable=True),
        sa.Column("instance_id", sa.String(length=64), nullable=True),
        sa.Column("definition_id", sa.String(length=300), nullable=True),
        sa.Column("definition_key", sa.String(length=255), nullable=True),
        sa.Column("property", sa.String(length=255), nullable=True),
        sa.Column("org_value", sa.Text(), nullable=True),
        sa.Column("new_value", sa.Text(), nullable=True),
        sa.Column("annotation", sa.Text(), nullable=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_operation_log_at", "operation_log", ["at", "id"])
    op.create_index("ix_operation_log_instance", "operation_log", ["instance_id", "at"])


def downgrade() -> None:
    op.drop_index("ix_operation_log_instance", table_name="operation_log")
    op.drop_index("ix_operation_log_at", table_name="operation_log")
    op.drop_table("operation_log")
