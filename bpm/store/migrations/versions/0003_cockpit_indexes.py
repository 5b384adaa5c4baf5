"""indexes the cockpit's list queries need

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30

Instance counts by definition and state are an index-only scan of this index, and the
cockpit's instance list filtered by definition walks it newest first, one state at a time.
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_process_instance_definition_state_created",
        "process_instance",
        ["definition_id", "state", "created_at"],
    )


def downgrade() -> None:
    op.drop_index("ix_process_instance_definition_state_created", table_name="process_instance")
