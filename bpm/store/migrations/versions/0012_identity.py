"""identity: users, groups, memberships and tenants of the task list; task comments

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01

Users sign in to the REST API (HTTP Basic) and the task list with a password kept only as
an argon2 hash. Groups are what candidate groups of user tasks name; a membership puts a
user in one. Tenants are names only (for filtering). Comments on user tasks are kept after
the task ends, like Camunda's.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "identity_user",
        sa.Column("id", sa.String(length=255), nullable=False),
        sa.Column("first_name", sa.String(length=255), nullable=True),
        sa.Column("last_name", sa.String(length=255), nullable=True),
        sa.Column("email", sa.String(length=255), nullable=True),
        sa.Column("password_hash", sa.String(length=255), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "identity_group",
        sa.Column("id", sa.String(length=255), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=True),
        sa.Column("type", sa.String(length=255), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "identity_membership",
        sa.Column("user_id", sa.String(length=255), nullable=False),
        sa.Column("group_id", sa.String(length=255), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["identity_user.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["group_id"], ["identity_group.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("user_id", "group_id"),
    )
    op.create_index("ix_identity_membership_group", "identity_membership", ["group_id"])
    op.create_table(
        "identity_tenant",
        sa.Column("id", sa.String(length=255), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "task_comment",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("task_id", sa.String(length=64), nullable=False),
        sa.Column("instance_id", sa.String(length=64), nullable=True),
        sa.Column("user_id", sa.String(length=255), nullable=True),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_task_comment_task", "task_comment", ["task_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_task_comment_task", table_name="task_comment")
    op.drop_table("task_comment")
    op.drop_table("identity_tenant")
    op.drop_index("ix_identity_membership_group", table_name="identity_membership")
    op.drop_table("identity_membership")
    op.drop_table("identity_group")
    op.drop_table("identity_user")
