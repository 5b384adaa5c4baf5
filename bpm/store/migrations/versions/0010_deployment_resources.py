"""deployment resources: every file of a deployment is kept (.bpmn, .form, .dmn, others)

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-20

A deployment keeps each of its files as a resource (its name, its bytes, a SHA-256), so
that Camunda Modeler's forms and decisions deploy beside the BPMN and can be read back
(``GET /deployment/{id}/resources``). ``deployment.source`` now holds Camunda's
``deployment-source`` (it held a resource name, never read: cleared), and deployments and
definitions carry a tenant id (a name, for filtering). The BPMN of earlier deployments
becomes their resources.
"""

from __future__ import annotations

import hashlib
import uuid

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "deployment_resource",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("deployment_id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("checksum", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(["deployment_id"], ["deployment.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("deployment_id", "name", name="uq_deployment_resource_name"),
    )
    with op.batch_alter_table("deployment_resource", schema=None) as batch_op:
        batch_op.create_index("ix_deployment_resource_name", ["name"], unique=False)
    with op.batch_alter_table("deployment", schema=None) as batch_op:
        batch_op.add_column(sa.Column("tenant_id", sa.String(length=64), nullable=True))
        batch_op.create_index("ix_deployment_name", ["name"], unique=False)
    with op.batch_alter_table("process_definition", schema=None) as batch_op:
        batch_op.add_column(sa.Column("tenant_id", sa.String(length=64), nullable=True))
    conn = op.get_bind()
    conn.execute(sa.text("UPDATE deployment SET source = NULL"))
    rows = conn.execute(
        sa.text(
            "SELECT deployment_id, key, resource, source FROM process_definition "
            "WHERE deployment_id IS NOT NULL AND source <> '' ORDER BY deployment_id, key"
        )
    ).all()
    seen: set[tuple[str, str]] = set()
    for deployment_id, key, resource, source in rows:
        name = (resource or f"{key}.bpmn")[:255]
        if (deployment_id, name) in seen:  # one file held several processes
            continue
        seen.add((deployment_id, name))
        data = source.encode()
        conn.execute(
            sa.text(
                "INSERT INTO deployment_resource (id, deployment_id, name, data, checksum) "
                "VALUES (:id, :dep, :name, :data, :sum)"
            ),
            {
                "id": str(uuid.uuid4()),
                "dep": deployment_id,
                "name": name,
                "data": data,
                "sum": hashlib.sha256(data).hexdigest(),
            },
        )


def downgrade() -> None:
    with op.batch_alter_table("process_definition", schema=None) as batch_op:
        batch_op.drop_column("tenant_id")
    with op.batch_alter_table("deployment", schema=None) as batch_op:
        batch_op.drop_index("ix_deployment_name")
        batch_op.drop_column("tenant_id")
    with op.batch_alter_table("deployment_resource", schema=None) as batch_op:
        batch_op.drop_index("ix_deployment_resource_name")
    op.drop_table("deployment_resource")
