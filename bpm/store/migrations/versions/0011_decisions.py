"""decisions: deployed DMN decision definitions, their requirements graphs, and the history
of evaluated decisions

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-21

A ``.dmn`` file deployed with (or without) BPMN makes one decision requirements definition
(its ``<definitions>``) and one decision definition per decision, each versioned by its id
like processes (an unchanged file keeps its versions). Each evaluation, from a business
rule task or ``POST /decision-definition/.../evaluate``, appends decision instances with
their inputs, matched rules and outputs.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

JSONDoc = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "decision_requirements_definition",
        sa.Column("id", sa.String(length=300), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=True),
        sa.Column("namespace", sa.String(length=255), nullable=True),
        sa.Column("checksum", sa.String(length=64), nullable=False),
        sa.Column("resource", sa.String(length=255), nullable=False),
        sa.Column("deployment_id", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=True),
        sa.ForeignKeyConstraint(["deployment_id"], ["deployment.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("key", "version", name="uq_drd_key_version"),
    )
    op.create_table(
        "decision_definition",
        sa.Column("id", sa.String(length=300), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=True),
        sa.Column("checksum", sa.String(length=64), nullable=False),
        sa.Column("resource", sa.String(length=255), nullable=False),
        sa.Column("deployment_id", sa.String(length=64), nullable=False),
        sa.Column("drd_id", sa.String(length=300), nullable=True),
        sa.Column("drd_key", sa.String(length=255), nullable=True),
        sa.Column("version_tag", sa.String(length=255), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=True),
        sa.ForeignKeyConstraint(["deployment_id"], ["deployment.id"]),
        sa.ForeignKeyConstraint(["drd_id"], ["decision_requirements_definition.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("key", "version", name="uq_decision_definition_key_version"),
    )
    with op.batch_alter_table("decision_definition", schema=None) as batch_op:
        batch_op.create_index("ix_decision_definition_deployment", ["deployment_id"], unique=False)
    op.create_table(
        "decision_instance",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("definition_id", sa.String(length=300), nullable=False),
        sa.Column("definition_key", sa.String(length=255), nullable=False),
        sa.Column("definition_name", sa.String(length=255), nullable=True),
        sa.Column("drd_id", sa.String(length=300), nullable=True),
        sa.Column("drd_key", sa.String(length=255), nullable=True),
        sa.Column("evaluated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("process_definition_id", sa.String(length=300), nullable=True),
        sa.Column("process_definition_key", sa.String(length=255), nullable=True),
        sa.Column("process_instance_id", sa.String(length=64), nullable=True),
        sa.Column("activity_id", sa.String(length=255), nullable=True),
        sa.Column("root_id", sa.String(length=64), nullable=True),
        sa.Column("tenant_id", sa.String(length=64), nullable=True),
        sa.Column("inputs", JSONDoc, nullable=False),
        sa.Column("outputs", JSONDoc, nullable=False),
        sa.Column("collect_result", JSONDoc, nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("decision_instance", schema=None) as batch_op:
        batch_op.create_index(
            "ix_decision_instance_definition", ["definition_key", "evaluated_at"], unique=False
        )
        batch_op.create_index("ix_decision_instance_process", ["process_instance_id"], unique=False)


def downgrade() -> None:
    op.drop_table("decision_instance")
    op.drop_table("decision_definition")
    op.drop_table("decision_requirements_definition")
