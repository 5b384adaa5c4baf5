"""task listeners: the events of an open user task whose listeners are still to run

Revision ID: 0019
Revises: 0016
Create Date: 2026-12-02

``user_task.listening``: a JSON list, oldest first, of the task events (``assignment``,
``update``, ``complete`` with its variables, ``timeout``, ...) whose listeners a worker has
not run yet (:mod:`bpm.engine.task_listeners`). NULL (rows from before) is empty.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0019"
down_revision = "0016"
branch_labels = None
depends_on = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("user_task", schema=None) as batch_op:
        batch_op.add_column(sa.Column("listening", _JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("user_task", schema=None) as batch_op:
        batch_op.drop_column("listening")
