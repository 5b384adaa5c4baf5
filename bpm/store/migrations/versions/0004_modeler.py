"""models from any modeler: user-task settings, suspended definitions, timer start schedules

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-10
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("process_definition", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("suspended", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
    with op.batch_alter_table("user_task", schema=None) as batch_op:
        batch_op.add_column(sa.Column("candidate_users", _JSON, nullable=True))
        batch_op.add_column(sa.Column("due_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("follow_up_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(
            sa.Column("priority", sa.Integer(), server_default=sa.text("50"), nullable=False)
        )
        batch_op.add_column(sa.Column("form_key", sa.String(length=1000), nullable=True))
        batch_op.add_column(sa.Column("form_ref", _JSON, nullable=True))
    op.create_table(
        "timer_schedule",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("definition_id", sa.String(length=300), nullable=False),
        sa.Column("definition_key", sa.String(length=255), nullable=False),
        sa.Column("node_id", sa.String(length=255), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("expression", sa.String(length=1000), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("next_due", sa.DateTime(timezone=True), nullable=True),
        sa.Column("fired_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["definition_id"], ["process_definition.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("timer_schedule", schema=None) as batch_op:
        batch_op.create_index(
            "ix_timer_schedule_due",
            ["next_due"],
            unique=False,
            postgresql_where=sa.text("state = 'active'"),
            sqlite_where=sa.text("state = 'active'"),
        )
        batch_op.create_index("ix_timer_schedule_key", ["definition_key"], unique=False)
    op.create_table(
        "schedule_fire",
        sa.Column("schedule_id", sa.String(length=64), nullable=False),
        sa.Column("due_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("instance_id", sa.String(length=64), nullable=False),
        sa.Column("fired_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["schedule_id"], ["timer_schedule.id"]),
        sa.UniqueConstraint("schedule_id", "due_at", name="uq_schedule_fire_due"),
    )


def downgrade() -> None:
    op.drop_table("schedule_fire")
    with op.batch_alter_table("timer_schedule", schema=None) as batch_op:
        batch_op.drop_index("ix_timer_schedule_key")
        batch_op.drop_index("ix_timer_schedule_due")
    op.drop_table("timer_schedule")
    with op.batch_alter_table("user_task", schema=None) as batch_op:
        for column in (
            "form_ref", "form_key", "priority", "follow_up_at", "due_at", "candidate_users",
        ):  # fmt: skip
            batch_op.drop_column(column)
    with op.batch_alter_table("process_definition", schema=None) as batch_op:
        batch_op.drop_column("suspended")
