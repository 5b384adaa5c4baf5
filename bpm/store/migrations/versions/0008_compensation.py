"""compensation: completed activities with something to undo (the saga)

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-30

One ``compensable`` row per completed activity that has a compensation handler (or a
sub-process with compensable activities inside), in completion order per instance.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "compensable",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("instance_id", sa.String(length=64), nullable=False),
        sa.Column("token_id", sa.String(length=64), nullable=False),
        sa.Column("node_id", sa.String(length=255), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("handler_node", sa.String(length=255), nullable=True),
        sa.Column("scope_id", sa.String(length=64), nullable=True),
        sa.Column("inner_scope_id", sa.String(length=64), nullable=True),
        sa.Column("run_id", sa.String(length=64), nullable=True),
        sa.Column("handler_token_id", sa.String(length=64), nullable=True),
        sa.Column("variables", _JSON, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("compensated_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["instance_id"], ["process_instance.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("instance_id", "seq", name="uq_compensable_instance_seq"),
    )


def downgrade() -> None:
    op.drop_table("compensable")
