"""messages and signals: event subscriptions and the buffer of messages with a time to live

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "event_subscription",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("instance_id", sa.String(length=64), nullable=True),
        sa.Column("token_id", sa.String(length=64), nullable=True),
        sa.Column("node_id", sa.String(length=255), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("correlation_key", sa.String(length=1000), nullable=True),
        sa.Column("definition_id", sa.String(length=300), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("consumed_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["instance_id"], ["process_instance.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("event_subscription", schema=None) as batch_op:
        batch_op.create_index(
            "ix_event_subscription_open",
            ["kind", "name", "correlation_key"],
            unique=False,
            postgresql_where=sa.text("state = 'open'"),
            sqlite_where=sa.text("state = 'open'"),
        )
        batch_op.create_index("ix_event_subscription_token", ["token_id"], unique=False)
        batch_op.create_index("ix_event_subscription_instance", ["instance_id"], unique=False)
    op.create_table(
        "message_buffer",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("business_key", sa.String(length=255), nullable=True),
        sa.Column("correlation_key", sa.String(length=1000), nullable=True),
        sa.Column("instance_id", sa.String(length=64), nullable=True),
        sa.Column("match_variables", _JSON, nullable=True),
        sa.Column("variables", _JSON, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("consumed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("consumed_by", sa.String(length=64), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("message_buffer", schema=None) as batch_op:
        batch_op.create_index(
            "ix_message_buffer_live",
            ["name", "expires_at"],
            unique=False,
            postgresql_where=sa.text("consumed_at IS NULL"),
            sqlite_where=sa.text("consumed_at IS NULL"),
        )


def downgrade() -> None:
    with op.batch_alter_table("message_buffer", schema=None) as batch_op:
        batch_op.drop_index("ix_message_buffer_live")
    op.drop_table("message_buffer")
    with op.batch_alter_table("event_subscription", schema=None) as batch_op:
        batch_op.drop_index("ix_event_subscription_instance")
        batch_op.drop_index("ix_event_subscription_token")
        batch_op.drop_index("ix_event_subscription_open")
    op.drop_table("event_subscription")
