"""compact history: one row per transaction and instance, holding its events in order

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30

Existing events are carried over, each as a row of one event (their order is kept).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
_SEQ = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_BATCH = 5000


def _old_table() -> sa.Table:
    return sa.Table(
        "history_event",
        sa.MetaData(),
        sa.Column("seq", _SEQ, primary_key=True),
        sa.Column("instance_id", sa.String(64)),
        sa.Column("token_id", sa.String(64)),
        sa.Column("node_id", sa.String(255)),
        sa.Column("type", sa.String(48)),
        sa.Column("from_state", sa.String(16)),
        sa.Column("to_state", sa.String(16)),
        sa.Column("payload", _JSON),
        sa.Column("at", sa.DateTime(timezone=True)),
    )


def _new_table() -> sa.Table:
    return sa.Table(
        "history",
        sa.MetaData(),
        sa.Column("seq", _SEQ, primary_key=True),
        sa.Column("instance_id", sa.String(64)),
        sa.Column("at", sa.DateTime(timezone=True)),
        sa.Column("events", _JSON),
    )


def _event(r: Any) -> dict[str, Any]:
    item: dict[str, Any] = {"type": r.type}
    for key, value in (
        ("token", r.token_id),
        ("node", r.node_id),
        ("from", r.from_state),
        ("to", r.to_state),
    ):
        if value is not None:
            item[key] = value
    if r.payload:
        item["data"] = r.payload
    return item


def upgrade() -> None:
    op.create_table(
        "history",
        sa.Column("seq", _SEQ, autoincrement=True, nullable=False),
        sa.Column("instance_id", sa.String(length=64), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("events", _JSON, nullable=False),
        sa.PrimaryKeyConstraint("seq"),
    )
    with op.batch_alter_table("history", schema=None) as batch_op:
        batch_op.create_index("ix_history_by_instance", ["instance_id", "seq"], unique=False)

    conn = op.get_bind()
    old, new = _old_table(), _new_table()
    last = None
    while True:
        q = sa.select(old).order_by(old.c.seq).limit(_BATCH)
        if last is not None:
            q = q.where(old.c.seq > last)
        rows = conn.execute(q).all()
        if not rows:
            break
        conn.execute(
            sa.insert(new),
            [{"instance_id": r.instance_id, "at": r.at, "events": [_event(r)]} for r in rows],
        )
        last = rows[-1].seq

    with op.batch_alter_table("history_event", schema=None) as batch_op:
        batch_op.drop_index("ix_history_instance_seq")
    op.drop_table("history_event")


def downgrade() -> None:
    op.create_table(
        "history_event",
        sa.Column("seq", _SEQ, autoincrement=True, nullable=False),
        sa.Column("instance_id", sa.String(length=64), nullable=False),
        sa.Column("token_id", sa.String(length=64), nullable=True),
        sa.Column("node_id", sa.String(length=255), nullable=True),
        sa.Column("type", sa.String(length=48), nullable=False),
        sa.Column("from_state", sa.String(length=16), nullable=True),
        sa.Column("to_state", sa.String(length=16), nullable=True),
        sa.Column("payload", _JSON, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("seq"),
    )
    conn = op.get_bind()
    old, new = _old_table(), _new_table()
    for r in conn.execute(sa.select(new).order_by(new.c.seq)):
        conn.execute(
            sa.insert(old),
            [
                {
                    "instance_id": r.instance_id,
                    "token_id": e.get("token"),
                    "node_id": e.get("node"),
                    "type": e["type"],
                    "from_state": e.get("from"),
                    "to_state": e.get("to"),
                    "payload": e.get("data") or {},
                    "at": r.at,
                }
                for e in r.events
            ],
        )
    with op.batch_alter_table("history_event", schema=None) as batch_op:
        batch_op.create_index("ix_history_instance_seq", ["instance_id", "seq"], unique=False)
    with op.batch_alter_table("history", schema=None) as batch_op:
        batch_op.drop_index("ix_history_by_instance")
    op.drop_table("history")
