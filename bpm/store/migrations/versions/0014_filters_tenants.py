"""saved task filters per user; tenant memberships of users and groups

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01

A filter (Camunda's ``/filter``) is a named task query its owner saved: the task list
shows the signed-in user's and runs them merged with the page's own query. A tenant
(a name only, migration 0012) now has members, users or groups, so a user may read the
tenants they belong to.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "task_filter",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("resource_type", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("owner", sa.String(length=255), nullable=True),
        sa.Column("query", _JSON, nullable=False),
        sa.Column("properties", _JSON, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_task_filter_owner", "task_filter", ["owner", "name"])
    op.create_table(
        "identity_tenant_member",
        sa.Column("tenant_id", sa.String(length=255), nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("member_id", sa.String(length=255), nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["identity_tenant.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("tenant_id", "kind", "member_id"),
    )
    op.create_index(
        "ix_identity_tenant_member_member", "identity_tenant_member", ["kind", "member_id"]
    )


def downgrade() -> None:
    op.drop_index("ix_identity_tenant_member_member", table_name="identity_tenant_member")
    op.drop_table("identity_tenant_member")
    op.drop_index("ix_task_filter_owner", table_name="task_filter")
    op.drop_table("task_filter")
