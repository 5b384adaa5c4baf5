"""scopes: sub-processes, multi-instance, call activities; fork scopes become scopes

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-20

One ``scope`` table for every region of an instance: the fork scopes of parallel joins move
into it (same ids, so tokens keep pointing at them) and ``fork_scope`` goes. A called
instance knows its caller, its call tree's root and its depth.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "scope",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("instance_id", sa.String(length=64), nullable=False),
        sa.Column("parent_id", sa.String(length=64), nullable=True),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("node_id", sa.String(length=255), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("token_id", sa.String(length=64), nullable=True),
        sa.Column("variables", _JSON, nullable=False),
        sa.Column("expected", sa.Integer(), nullable=True),
        sa.Column("loop_counter", sa.Integer(), nullable=True),
        sa.Column("items", _JSON, nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["instance_id"], ["process_instance.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("scope", schema=None) as batch_op:
        batch_op.create_index("ix_scope_instance", ["instance_id"], unique=False)
    op.execute(
        sa.text(
            "INSERT INTO scope (id, instance_id, parent_id, kind, node_id, state, variables, "
            "expected, created_at) SELECT id, instance_id, parent_id, 'fork', fork_node_id, "
            "'active', '{}', expected, created_at FROM fork_scope"
        )
    )
    with op.batch_alter_table("fork_scope", schema=None) as batch_op:
        batch_op.drop_index("ix_fork_scope_instance")
    op.drop_table("fork_scope")
    with op.batch_alter_table("process_instance", schema=None) as batch_op:
        batch_op.add_column(sa.Column("parent_id", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("parent_token_id", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("root_id", sa.String(length=64), nullable=True))
        batch_op.add_column(
            sa.Column("call_depth", sa.Integer(), server_default=sa.text("0"), nullable=False)
        )
        batch_op.create_index("ix_process_instance_parent", ["parent_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("process_instance", schema=None) as batch_op:
        batch_op.drop_index("ix_process_instance_parent")
        for column in ("call_depth", "root_id", "parent_token_id", "parent_id"):
            batch_op.drop_column(column)
    op.create_table(
        "fork_scope",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("instance_id", sa.String(length=64), nullable=False),
        sa.Column("parent_id", sa.String(length=64), nullable=True),
        sa.Column("fork_node_id", sa.String(length=255), nullable=False),
        sa.Column("expected", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["instance_id"], ["process_instance.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("fork_scope", schema=None) as batch_op:
        batch_op.create_index("ix_fork_scope_instance", ["instance_id"], unique=False)
    op.execute(
        sa.text(
            "INSERT INTO fork_scope (id, instance_id, parent_id, fork_node_id, expected, "
            "created_at) SELECT id, instance_id, parent_id, node_id, expected, created_at "
            "FROM scope WHERE kind = 'fork'"
        )
    )
    with op.batch_alter_table("scope", schema=None) as batch_op:
        batch_op.drop_index("ix_scope_instance")
    op.drop_table("scope")
