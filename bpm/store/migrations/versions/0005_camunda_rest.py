"""Camunda 7 REST: task owner and description, an external task's last worker, the Camunda
types of variables, and the indexes the history and task lists page on

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30

Why each index (every list of ``/engine-rest`` is one index walk and a LIMIT):

- ``ix_process_instance_created`` (created_at, id): ``/history/process-instance`` lists
  instances of every state by start time.
- ``ix_process_instance_ended`` (ended_at): finished instances by end time
  (``sortBy=endTime``, ``finishedAfter``/``finishedBefore``).
- ``ix_process_instance_key_created`` (definition_key, created_at): the lists above for
  one process key (the usual filter of a report).
- ``ix_user_task_created`` (created_at, id): ``/history/task`` (open and finished tasks).
- ``ix_user_task_assignee`` (assignee, created_at): a person's task list (``assignee=``).
- ``ix_user_task_open_priority`` (priority DESC, created_at, id) of open tasks: a task list
  by priority (``sortBy=priority&sortOrder=desc``), without sorting every open task.
- ``ix_incident_created`` (created_at, id): ``/history/incident`` (every state).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("process_instance", schema=None) as batch_op:
        batch_op.add_column(sa.Column("variable_types", _JSON, nullable=True))
        batch_op.create_index("ix_process_instance_created", ["created_at", "id"], unique=False)
        batch_op.create_index("ix_process_instance_ended", ["ended_at"], unique=False)
        batch_op.create_index(
            "ix_process_instance_key_created", ["definition_key", "created_at"], unique=False
        )
    with op.batch_alter_table("user_task", schema=None) as batch_op:
        batch_op.add_column(sa.Column("owner", sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column("description", sa.Text(), nullable=True))
        batch_op.create_index("ix_user_task_created", ["created_at", "id"], unique=False)
        batch_op.create_index("ix_user_task_assignee", ["assignee", "created_at"], unique=False)
        batch_op.create_index(
            "ix_user_task_open_priority",
            [sa.text("priority DESC"), "created_at", "id"],
            unique=False,
            postgresql_where=sa.text("state = 'open'"),
            sqlite_where=sa.text("state = 'open'"),
        )
    with op.batch_alter_table("external_task", schema=None) as batch_op:
        batch_op.add_column(sa.Column("worker_id", sa.String(length=255), nullable=True))
    with op.batch_alter_table("incident", schema=None) as batch_op:
        batch_op.create_index("ix_incident_created", ["created_at", "id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("incident", schema=None) as batch_op:
        batch_op.drop_index("ix_incident_created")
    with op.batch_alter_table("external_task", schema=None) as batch_op:
        batch_op.drop_column("worker_id")
    with op.batch_alter_table("user_task", schema=None) as batch_op:
        batch_op.drop_index("ix_user_task_open_priority")
        batch_op.drop_index("ix_user_task_assignee")
        batch_op.drop_index("ix_user_task_created")
        batch_op.drop_column("description")
        batch_op.drop_column("owner")
    with op.batch_alter_table("process_instance", schema=None) as batch_op:
        batch_op.drop_index("ix_process_instance_key_created")
        batch_op.drop_index("ix_process_instance_ended")
        batch_op.drop_index("ix_process_instance_created")
        batch_op.drop_column("variable_types")
