"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table(
        "deployment",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=True),
        sa.Column("source", sa.String(length=255), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "history_event",
        sa.Column(
            "seq",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("instance_id", sa.String(length=64), nullable=False),
        sa.Column("token_id", sa.String(length=64), nullable=True),
        sa.Column("node_id", sa.String(length=255), nullable=True),
        sa.Column("type", sa.String(length=48), nullable=False),
        sa.Column("from_state", sa.String(length=16), nullable=True),
        sa.Column("to_state", sa.String(length=16), nullable=True),
        sa.Column(
            "payload",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("seq"),
    )
    with op.batch_alter_table("history_event", schema=None) as batch_op:
        batch_op.create_index("ix_history_instance_seq", ["instance_id", "seq"], unique=False)

    op.create_table(
        "process_definition",
        sa.Column("id", sa.String(length=300), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=True),
        sa.Column("version_tag", sa.String(length=255), nullable=True),
        sa.Column("checksum", sa.String(length=64), nullable=False),
        sa.Column("resource", sa.String(length=255), nullable=True),
        sa.Column("deployment_id", sa.String(length=64), nullable=True),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column(
            "model",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["deployment_id"],
            ["deployment.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("key", "version", name="uq_process_definition_key_version"),
    )
    op.create_table(
        "process_instance",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("definition_id", sa.String(length=300), nullable=False),
        sa.Column("definition_key", sa.String(length=255), nullable=False),
        sa.Column("business_key", sa.String(length=255), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column(
            "variables",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("idempotency_key", sa.String(length=255), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["definition_id"],
            ["process_definition.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("idempotency_key"),
    )
    with op.batch_alter_table("process_instance", schema=None) as batch_op:
        batch_op.create_index("ix_process_instance_business_key", ["business_key"], unique=False)
        batch_op.create_index(
            "ix_process_instance_definition_key", ["definition_key"], unique=False
        )
        batch_op.create_index(
            "ix_process_instance_state_created", ["state", "created_at"], unique=False
        )

    op.create_table(
        "external_task",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("instance_id", sa.String(length=64), nullable=False),
        sa.Column("token_id", sa.String(length=64), nullable=False),
        sa.Column("definition_id", sa.String(length=300), nullable=False),
        sa.Column("definition_key", sa.String(length=255), nullable=False),
        sa.Column("business_key", sa.String(length=255), nullable=True),
        sa.Column("node_id", sa.String(length=255), nullable=False),
        sa.Column("topic", sa.String(length=255), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("priority", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("lock_owner", sa.String(length=255), nullable=True),
        sa.Column("lock_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("retries", sa.Integer(), nullable=True),
        sa.Column("retry_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("attempt", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("error_details", sa.Text(), nullable=True),
        sa.Column("finished_by", sa.String(length=255), nullable=True),
        sa.Column("finish_kind", sa.String(length=16), nullable=True),
        sa.Column(
            "properties",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["instance_id"],
            ["process_instance.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("external_task", schema=None) as batch_op:
        batch_op.create_index("ix_external_task_instance", ["instance_id"], unique=False)
        batch_op.create_index(
            "ix_external_task_locked",
            ["lock_expires_at"],
            unique=False,
            postgresql_where=sa.text("state = 'locked'"),
            sqlite_where=sa.text("state = 'locked'"),
        )
        batch_op.create_index(
            "ix_external_task_ready",
            ["topic", "created_at"],
            unique=False,
            postgresql_where=sa.text("state = 'ready'"),
            sqlite_where=sa.text("state = 'ready'"),
        )
        batch_op.create_index(
            "ix_external_task_ready_priority",
            ["topic", sa.text("priority DESC"), "created_at"],
            unique=False,
            postgresql_where=sa.text("state = 'ready'"),
            sqlite_where=sa.text("state = 'ready'"),
        )

    op.create_table(
        "fork_scope",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("instance_id", sa.String(length=64), nullable=False),
        sa.Column("parent_id", sa.String(length=64), nullable=True),
        sa.Column("fork_node_id", sa.String(length=255), nullable=False),
        sa.Column("expected", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["instance_id"],
            ["process_instance.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("fork_scope", schema=None) as batch_op:
        batch_op.create_index("ix_fork_scope_instance", ["instance_id"], unique=False)

    op.create_table(
        "incident",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("instance_id", sa.String(length=64), nullable=False),
        sa.Column("token_id", sa.String(length=64), nullable=False),
        sa.Column("node_id", sa.String(length=255), nullable=False),
        sa.Column("type", sa.String(length=32), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("details", sa.Text(), nullable=True),
        sa.Column("external_task_id", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["instance_id"],
            ["process_instance.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("incident", schema=None) as batch_op:
        batch_op.create_index("ix_incident_instance", ["instance_id"], unique=False)
        batch_op.create_index("ix_incident_open", ["state", "created_at"], unique=False)

    op.create_table(
        "timer",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("instance_id", sa.String(length=64), nullable=False),
        sa.Column("token_id", sa.String(length=64), nullable=False),
        sa.Column("node_id", sa.String(length=255), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("fire_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("repeat_left", sa.Integer(), nullable=True),
        sa.Column("interval_ms", sa.BigInteger(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("fired_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["instance_id"],
            ["process_instance.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("timer", schema=None) as batch_op:
        batch_op.create_index(
            "ix_timer_due",
            ["fire_at"],
            unique=False,
            postgresql_where=sa.text("state = 'pending'"),
            sqlite_where=sa.text("state = 'pending'"),
        )
        batch_op.create_index("ix_timer_token", ["token_id"], unique=False)

    op.create_table(
        "token",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("instance_id", sa.String(length=64), nullable=False),
        sa.Column("node_id", sa.String(length=255), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("blocked_kind", sa.String(length=32), nullable=True),
        sa.Column("blocked_id", sa.String(length=64), nullable=True),
        sa.Column("scope_id", sa.String(length=64), nullable=True),
        sa.Column("parent_id", sa.String(length=64), nullable=True),
        sa.Column("attempt", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("lease_owner", sa.String(length=255), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["instance_id"],
            ["process_instance.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("token", schema=None) as batch_op:
        batch_op.create_index("ix_token_instance", ["instance_id"], unique=False)
        batch_op.create_index(
            "ix_token_lease",
            ["lease_expires_at"],
            unique=False,
            postgresql_where=sa.text("state = 'executing'"),
            sqlite_where=sa.text("state = 'executing'"),
        )
        batch_op.create_index(
            "ix_token_ready",
            ["updated_at"],
            unique=False,
            postgresql_where=sa.text("state = 'ready'"),
            sqlite_where=sa.text("state = 'ready'"),
        )

    op.create_table(
        "user_task",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("instance_id", sa.String(length=64), nullable=False),
        sa.Column("token_id", sa.String(length=64), nullable=False),
        sa.Column("node_id", sa.String(length=255), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("assignee", sa.String(length=255), nullable=True),
        sa.Column(
            "candidate_groups",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("completed_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["instance_id"],
            ["process_instance.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("user_task", schema=None) as batch_op:
        batch_op.create_index("ix_user_task_instance", ["instance_id"], unique=False)
        batch_op.create_index("ix_user_task_open", ["state", "created_at"], unique=False)


def downgrade() -> None:

    with op.batch_alter_table("user_task", schema=None) as batch_op:
        batch_op.drop_index("ix_user_task_open")
        batch_op.drop_index("ix_user_task_instance")

    op.drop_table("user_task")
    with op.batch_alter_table("token", schema=None) as batch_op:
        batch_op.drop_index(
            "ix_token_ready",
            postgresql_where=sa.text("state = 'ready'"),
            sqlite_where=sa.text("state = 'ready'"),
        )
        batch_op.drop_index(
            "ix_token_lease",
            postgresql_where=sa.text("state = 'executing'"),
            sqlite_where=sa.text("state = 'executing'"),
        )
        batch_op.drop_index("ix_token_instance")

    op.drop_table("token")
    with op.batch_alter_table("timer", schema=None) as batch_op:
        batch_op.drop_index("ix_timer_token")
        batch_op.drop_index(
            "ix_timer_due",
            postgresql_where=sa.text("state = 'pending'"),
            sqlite_where=sa.text("state = 'pending'"),
        )

    op.drop_table("timer")
    with op.batch_alter_table("incident", schema=None) as batch_op:
        batch_op.drop_index("ix_incident_open")
        batch_op.drop_index("ix_incident_instance")

    op.drop_table("incident")
    with op.batch_alter_table("fork_scope", schema=None) as batch_op:
        batch_op.drop_index("ix_fork_scope_instance")

    op.drop_table("fork_scope")
    with op.batch_alter_table("external_task", schema=None) as batch_op:
        batch_op.drop_index(
            "ix_external_task_ready_priority",
            postgresql_where=sa.text("state = 'ready'"),
            sqlite_where=sa.text("state = 'ready'"),
        )
        batch_op.drop_index(
            "ix_external_task_ready",
            postgresql_where=sa.text("state = 'ready'"),
            sqlite_where=sa.text("state = 'ready'"),
        )
        batch_op.drop_index(
            "ix_external_task_locked",
            postgresql_where=sa.text("state = 'locked'"),
            sqlite_where=sa.text("state = 'locked'"),
        )
        batch_op.drop_index("ix_external_task_instance")

    op.drop_table("external_task")
    with op.batch_alter_table("process_instance", schema=None) as batch_op:
        batch_op.drop_index("ix_process_instance_state_created")
        batch_op.drop_index("ix_process_instance_definition_key")
        batch_op.drop_index("ix_process_instance_business_key")

    op.drop_table("process_instance")
    op.drop_table("process_definition")
    with op.batch_alter_table("history_event", schema=None) as batch_op:
        batch_op.drop_index("ix_history_instance_seq")

    op.drop_table("history_event")
    op.drop_table("deployment")
