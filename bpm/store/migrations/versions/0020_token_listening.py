"""token.listening: the execution listeners a worker runs for a token

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-02

Execution listeners of elements whose own work no worker runs (events, gateways,
sub-processes, user and external tasks, flows, the process) run on a worker in a step of
their own; the token carries which (``start``/``take`` before it enters its element,
``end`` before it leaves, with the flows it leaves by) so that a retry, a lost worker or
an operator's retry runs the same listeners again (:mod:`bpm.runtime.listening`).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("token", schema=None) as batch_op:
        batch_op.add_column(sa.Column("listening", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("token", schema=None) as batch_op:
        batch_op.drop_column("listening")
