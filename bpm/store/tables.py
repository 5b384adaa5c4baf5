"""The schema as SQLAlchemy Core tables. Alembic migrations create it; this mirrors them.

``tests/test_store_schema.py`` checks that the migrations and these tables agree.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Dialect,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB


class UTCDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes on every backend (SQLite stores them naive, in UTC)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the store; pass an aware UTC datetime")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


JSONDoc: Any = JSON().with_variant(JSONB(), "postgresql")

metadata = MetaData()

deployment = Table(
    "deployment",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("name", String(255)),
    Column("source", String(255)),  # Camunda's deployment-source ("Camunda Modeler")
    Column("created_at", UTCDateTime, nullable=False),
    Column("tenant_id", String(64)),  # a name, for filtering
    Index("ix_deployment_name", "name"),
)

deployment_resource = Table(  # every file of a deployment, as it was uploaded
    "deployment_resource",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("deployment_id", String(64), ForeignKey("deployment.id"), nullable=False),
    Column("name", String(255), nullable=False),
    Column("data", LargeBinary, nullable=False),
    Column("checksum", String(64), nullable=False),  # SHA-256 of data, hex
    UniqueConstraint("deployment_id", "name", name="uq_deployment_resource_name"),
    Index("ix_deployment_resource_name", "name"),
)

process_definition = Table(
    "process_definition",
    metadata,
    Column("id", String(300), primary_key=True),
    Column("key", String(255), nullable=False),
    Column("version", Integer, nullable=False),
    Column("name", String(255)),
    Column("version_tag", String(255)),
    Column("checksum", String(64), nullable=False),
    Column("resource", String(255)),
    Column("deployment_id", String(64), ForeignKey("deployment.id")),
    Column("source", Text, nullable=False),
    Column("model", JSONDoc, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    # Suspended definitions start no instances and their timer start events pause.
    Column("suspended", Boolean, nullable=False, server_default=false()),
    Column("tenant_id", String(64)),  # the deployment's
    UniqueConstraint("key", "version", name="uq_process_definition_key_version"),
)

process_instance = Table(
    "process_instance",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("definition_id", String(300), ForeignKey("process_definition.id"), nullable=False),
    Column("definition_key", String(255), nullable=False),
    Column("business_key", String(255)),
    Column("state", String(16), nullable=False),
    Column("variables", JSONDoc, nullable=False),
    Column("idempotency_key", String(255), unique=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("ended_at", UTCDateTime),
    # Camunda type names of the variables whose JSON value does not tell it (Date, Long,
    # Json...): name -> type (migration 0005)
    Column("variable_types", JSONDoc),
    # A called instance: its caller (instance and waiting token), its call tree's root
    # (locked with it: bpm.engine.unit) and how deep it is in the tree.
    Column("parent_id", String(64)),
    Column("parent_token_id", String(64)),
    Column("root_id", String(64)),
    Column("call_depth", Integer, nullable=False, server_default=text("0")),
    Index("ix_process_instance_state_created", "state", "created_at"),
    Index("ix_process_instance_parent", "parent_id"),
    Index("ix_process_instance_business_key", "business_key"),
    Index("ix_process_instance_definition_key", "definition_key"),
    # counts by definition and state, lists by definition (migration 0002, the cockpit)
    Index("ix_process_instance_definition_state_created", "definition_id", "state", "created_at"),
    # the history lists of /engine-rest (migration 0005)
    Index("ix_process_instance_created", "created_at", "id"),
    Index("ix_process_instance_ended", "ended_at"),
    Index("ix_process_instance_key_created", "definition_key", "created_at"),
)

token = Table(
    "token",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("instance_id", String(64), ForeignKey("process_instance.id"), nullable=False),
    Column("node_id", String(255), nullable=False),
    Column("state", String(16), nullable=False),
    Column("blocked_kind", String(32)),
    Column("blocked_id", String(64)),
    Column("scope_id", String(64)),
    Column("parent_id", String(64)),
    Column("attempt", Integer, nullable=False, server_default=text("0")),
    Column("lease_owner", String(255)),
    Column("lease_expires_at", UTCDateTime),
    Column("error", Text),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    # execution listeners a worker runs for the token (migration 0020)
    Column("listening", Text),
    Index("ix_token_instance", "instance_id"),
    Index(
        "ix_token_ready",
        "updated_at",
        postgresql_where=text("state = 'ready'"),
        sqlite_where=text("state = 'ready'"),
    ),
    Index(
        "ix_token_lease",
        "lease_expires_at",
        postgresql_where=text("state = 'executing'"),
        sqlite_where=text("state = 'executing'"),
    ),
)

# Sub-processes, multi-instance bodies and their inner instances, activities' own
# variables, and parallel forks (the joins' state): bpm.runtime.records.Scope.
scope = Table(
    "scope",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("instance_id", String(64), ForeignKey("process_instance.id"), nullable=False),
    Column("parent_id", String(64)),
    Column("kind", String(16), nullable=False),
    Column("node_id", String(255), nullable=False),
    Column("state", String(16), nullable=False),
    Column("token_id", String(64)),
    Column("variables", JSONDoc, nullable=False),
    Column("expected", Integer),
    Column("loop_counter", Integer),
    Column("items", JSONDoc),
    Column("created_at", UTCDateTime, nullable=False),
    Column("ended_at", UTCDateTime),
    Index("ix_scope_instance", "instance_id"),
)

# Completed activities with something to undo, in completion order per instance
# (bpm.runtime.records.Compensable); written with the completion, read by compensation.
compensable = Table(
    "compensable",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("instance_id", String(64), ForeignKey("process_instance.id"), nullable=False),
    Column("token_id", String(64), nullable=False),
    Column("node_id", String(255), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("state", String(16), nullable=False),
    Column("handler_node", String(255)),
    Column("scope_id", String(64)),
    Column("inner_scope_id", String(64)),
    Column("run_id", String(64)),
    Column("handler_token_id", String(64)),
    Column("variables", JSONDoc, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("compensated_at", UTCDateTime),
    UniqueConstraint("instance_id", "seq", name="uq_compensable_instance_seq"),
)

timer = Table(
    "timer",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("instance_id", String(64), ForeignKey("process_instance.id"), nullable=False),
    Column("token_id", String(64), nullable=False),
    Column("node_id", String(255), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("state", String(16), nullable=False),
    Column("fire_at", UTCDateTime, nullable=False),
    Column("repeat_left", Integer),
    Column("interval_ms", BigInteger),
    Column("created_at", UTCDateTime, nullable=False),
    Column("fired_at", UTCDateTime),
    Index(
        "ix_timer_due",
        "fire_at",
        postgresql_where=text("state = 'pending'"),
        sqlite_where=text("state = 'pending'"),
    ),
    Index("ix_timer_token", "token_id"),
)

external_task = Table(
    "external_task",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("instance_id", String(64), ForeignKey("process_instance.id"), nullable=False),
    Column("token_id", String(64), nullable=False),
    Column("definition_id", String(300), nullable=False),
    Column("definition_key", String(255), nullable=False),
    Column("business_key", String(255)),
    Column("node_id", String(255), nullable=False),
    Column("topic", String(255), nullable=False),
    Column("state", String(16), nullable=False),
    Column("priority", BigInteger, nullable=False, server_default=text("0")),
    Column("lock_owner", String(255)),
    Column("lock_expires_at", UTCDateTime),
    Column("retries", Integer),
    Column("retry_at", UTCDateTime),
    Column("attempt", Integer, nullable=False, server_default=text("0")),
    Column("error_message", Text),
    Column("error_details", Text),
    Column("finished_by", String(255)),
    Column("finish_kind", String(16)),
    Column("properties", JSONDoc, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    # Camunda's workerId: set by a lock, kept after a failure, cleared only by an unlock
    Column("worker_id", String(255)),
    Index(  # fetch-and-lock in creation order
        "ix_external_task_ready",
        "topic",
        "created_at",
        postgresql_where=text("state = 'ready'"),
        sqlite_where=text("state = 'ready'"),
    ),
    Index(
        "ix_external_task_locked",
        "lock_expires_at",
        postgresql_where=text("state = 'locked'"),
        sqlite_where=text("state = 'locked'"),
    ),
    Index("ix_external_task_instance", "instance_id"),
)

Index(  # fetch-and-lock with usePriority: priority desc, then creation order
    "ix_external_task_ready_priority",
    external_task.c.topic,
    external_task.c.priority.desc(),
    external_task.c.created_at,
    postgresql_where=text("state = 'ready'"),
    sqlite_where=text("state = 'ready'"),
)

user_task = Table(
    "user_task",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("instance_id", String(64), ForeignKey("process_instance.id"), nullable=False),
    Column("token_id", String(64), nullable=False),
    Column("node_id", String(255), nullable=False),
    Column("name", String(255)),
    Column("state", String(16), nullable=False),
    Column("assignee", String(255)),
    Column("candidate_groups", JSONDoc, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("completed_at", UTCDateTime),
    Column("candidate_users", JSONDoc),
    Column("due_at", UTCDateTime),
    Column("follow_up_at", UTCDateTime),
    Column("priority", Integer, nullable=False, server_default=text("50")),
    Column("form_key", String(1000)),
    Column("form_ref", JSONDoc),
    Column("owner", String(255)),
    Column("description", Text),
    Column("listening", JSONDoc),  # task events whose listeners are to run (0019)
    Index("ix_user_task_instance", "instance_id"),
    Index("ix_user_task_open", "state", "created_at"),
    Index("ix_user_task_created", "created_at", "id"),
    Index("ix_user_task_assignee", "assignee", "created_at"),
)

Index(  # a task list by priority (highest first, then oldest): /task?sortBy=priority
    "ix_user_task_open_priority",
    user_task.c.priority.desc(),
    user_task.c.created_at,
    user_task.c.id,
    postgresql_where=text("state = 'open'"),
    sqlite_where=text("state = 'open'"),
)

# The schedule of one timer start event of one definition version: beat starts an
# instance at each due time. A new version replaces its key's schedules.
timer_schedule = Table(
    "timer_schedule",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("definition_id", String(300), ForeignKey("process_definition.id"), nullable=False),
    Column("definition_key", String(255), nullable=False),
    Column("node_id", String(255), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("expression", String(1000), nullable=False),
    Column("state", String(16), nullable=False),
    Column("next_due", UTCDateTime),
    Column("fired_count", Integer, nullable=False, server_default=text("0")),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Index(
        "ix_timer_schedule_due",
        "next_due",
        postgresql_where=text("state = 'active'"),
        sqlite_where=text("state = 'active'"),
    ),
    Index("ix_timer_schedule_key", "definition_key"),
)

# One row per due time that started an instance: the unique key makes a second start
# for the same due time impossible, whatever two beats do.
schedule_fire = Table(
    "schedule_fire",
    metadata,
    Column("schedule_id", String(64), ForeignKey("timer_schedule.id"), nullable=False),
    Column("due_at", UTCDateTime, nullable=False),
    Column("instance_id", String(64), nullable=False),
    Column("fired_at", UTCDateTime, nullable=False),
    UniqueConstraint("schedule_id", "due_at", name="uq_schedule_fire_due"),
)

incident = Table(
    "incident",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("instance_id", String(64), ForeignKey("process_instance.id"), nullable=False),
    Column("token_id", String(64), nullable=False),
    Column("node_id", String(255), nullable=False),
    Column("type", String(32), nullable=False),
    Column("state", String(16), nullable=False),
    Column("message", Text),
    Column("details", Text),
    Column("external_task_id", String(64)),
    Column("created_at", UTCDateTime, nullable=False),
    Column("resolved_at", UTCDateTime),
    Index("ix_incident_instance", "instance_id"),
    Index("ix_incident_open", "state", "created_at"),
    Index("ix_incident_created", "created_at", "id"),
)

# A token's wait for a message or a signal (bpm.runtime.messages). Rows without an
# instance are the message and signal start events of the latest version of a process
# (written at deploy). An open wait is consumed at most once: under its instance's lock.
event_subscription = Table(
    "event_subscription",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("instance_id", String(64), ForeignKey("process_instance.id")),
    Column("token_id", String(64)),
    Column("node_id", String(255), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("name", String(255), nullable=False),
    Column("state", String(16), nullable=False),
    Column("correlation_key", String(1000)),
    Column("definition_id", String(300)),
    Column("created_at", UTCDateTime, nullable=False),
    Column("consumed_at", UTCDateTime),
    Index(
        "ix_event_subscription_open",
        "kind",
        "name",
        "correlation_key",
        postgresql_where=text("state = 'open'"),
        sqlite_where=text("state = 'open'"),
    ),
    Index("ix_event_subscription_token", "token_id"),
    Index("ix_event_subscription_instance", "instance_id"),
)

# A message published with a time to live that nothing waited for yet: the first
# matching wait that opens before ``expires_at`` consumes it (a conditional UPDATE).
message_buffer = Table(
    "message_buffer",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("name", String(255), nullable=False),
    Column("business_key", String(255)),
    Column("correlation_key", String(1000)),
    Column("instance_id", String(64)),
    Column("match_variables", JSONDoc),
    Column("variables", JSONDoc, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime, nullable=False),
    Column("consumed_at", UTCDateTime),
    Column("consumed_by", String(64)),
    Index(
        "ix_message_buffer_live",
        "name",
        "expires_at",
        postgresql_where=text("consumed_at IS NULL"),
        sqlite_where=text("consumed_at IS NULL"),
    ),
)

history = Table(  # one row per transaction and instance: its events, in order
    "history",
    metadata,
    Column(
        "seq", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    ),
    Column("instance_id", String(64), nullable=False),
    Column("at", UTCDateTime, nullable=False),
    Column("events", JSONDoc, nullable=False),
    Index("ix_history_by_instance", "instance_id", "seq"),
)

worker_binding = Table(  # which API key a worker id belongs to (docs/rest-api.md)
    "worker_binding",
    metadata,
    Column("worker_id", String(255), primary_key=True),
    Column("key_id", String(255), nullable=False),
    Column("bound_at", UTCDateTime, nullable=False),
)

decision_requirements_definition = Table(  # a DMN <definitions>, versioned by its id
    "decision_requirements_definition",
    metadata,
    Column("id", String(300), primary_key=True),
    Column("key", String(255), nullable=False),
    Column("version", Integer, nullable=False),
    Column("name", String(255)),
    Column("namespace", String(255)),
    Column("checksum", String(64), nullable=False),  # of the DMN resource
    Column("resource", String(255), nullable=False),
    Column("deployment_id", String(64), ForeignKey("deployment.id"), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("tenant_id", String(64)),
    UniqueConstraint("key", "version", name="uq_drd_key_version"),
)

decision_definition = Table(  # one decision of a deployed DMN file, versioned by its id
    "decision_definition",
    metadata,
    Column("id", String(300), primary_key=True),
    Column("key", String(255), nullable=False),
    Column("version", Integer, nullable=False),
    Column("name", String(255)),
    Column("checksum", String(64), nullable=False),  # of the DMN resource
    Column("resource", String(255), nullable=False),
    Column("deployment_id", String(64), ForeignKey("deployment.id"), nullable=False),
    Column("drd_id", String(300), ForeignKey("decision_requirements_definition.id")),
    Column("drd_key", String(255)),
    Column("version_tag", String(255)),
    Column("created_at", UTCDateTime, nullable=False),
    Column("tenant_id", String(64)),
    UniqueConstraint("key", "version", name="uq_decision_definition_key_version"),
    Index("ix_decision_definition_deployment", "deployment_id"),
)

decision_instance = Table(  # history: one evaluated decision (Camunda's decision instance)
    "decision_instance",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("definition_id", String(300), nullable=False),
    Column("definition_key", String(255), nullable=False),
    Column("definition_name", String(255)),
    Column("drd_id", String(300)),
    Column("drd_key", String(255)),
    Column("evaluated_at", UTCDateTime, nullable=False),
    Column("process_definition_id", String(300)),
    Column("process_definition_key", String(255)),
    Column("process_instance_id", String(64)),
    Column("activity_id", String(255)),
    Column("root_id", String(64)),  # the decision evaluated first: its required ones point to it
    Column("tenant_id", String(64)),
    # [{"id", "name", "value"}] per table input; [{"id", "name", "rule_id", "rule_order",
    # "variable", "value"}] per output of each matched rule
    Column("inputs", JSONDoc, nullable=False),
    Column("outputs", JSONDoc, nullable=False),
    Column("collect_result", JSONDoc),  # a COLLECT aggregation's value
    Index("ix_decision_instance_definition", "definition_key", "evaluated_at"),
    Index("ix_decision_instance_process", "process_instance_id"),
)

# Identity (migration 0012): users sign in with a password kept as an argon2 hash only;
# groups are what user tasks' candidate groups name; tenants are names only.
identity_user = Table(
    "identity_user",
    metadata,
    Column("id", String(255), primary_key=True),
    Column("first_name", String(255)),
    Column("last_name", String(255)),
    Column("email", String(255)),
    Column("password_hash", String(255)),
    Column("created_at", UTCDateTime, nullable=False),
)

identity_group = Table(
    "identity_group",
    metadata,
    Column("id", String(255), primary_key=True),
    Column("name", String(255)),
    Column("type", String(255)),
)

identity_membership = Table(
    "identity_membership",
    metadata,
    Column(
        "user_id", String(255), ForeignKey("identity_user.id", ondelete="CASCADE"), primary_key=True
    ),
    Column(
        "group_id",
        String(255),
        ForeignKey("identity_group.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Index("ix_identity_membership_group", "group_id"),
)

identity_tenant = Table(
    "identity_tenant",
    metadata,
    Column("id", String(255), primary_key=True),
    Column("name", String(255)),
)

# Tenant members (migration 0014): a user or a group (``kind``) belongs to a tenant.
identity_tenant_member = Table(
    "identity_tenant_member",
    metadata,
    Column(
        "tenant_id",
        String(255),
        ForeignKey("identity_tenant.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("kind", String(8), primary_key=True),  # "user" or "group"
    Column("member_id", String(255), primary_key=True),
    Index("ix_identity_tenant_member_member", "kind", "member_id"),
)

# Saved task filters (``/filter``, migration 0014): a named task query of its owner.
task_filter = Table(
    "task_filter",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("resource_type", String(32), nullable=False),
    Column("name", String(255), nullable=False),
    Column("owner", String(255)),
    Column("query", JSONDoc, nullable=False),
    Column("properties", JSONDoc, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Index("ix_task_filter_owner", "owner", "name"),
)

# What operators did (``/history/user-operation``, migration 0015): one row per change of
# one operation (``operation_id`` groups them), with its author and annotation.
operation_log = Table(
    "operation_log",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("operation_id", String(64), nullable=False),
    Column("operation_type", String(64), nullable=False),
    Column("entity_type", String(64), nullable=False),
    Column("category", String(64), nullable=False),
    Column("user_id", String(255)),
    Column("instance_id", String(64)),
    Column("definition_id", String(300)),
    Column("definition_key", String(255)),
    Column("property", String(255)),
    Column("org_value", Text),
    Column("new_value", Text),
    Column("annotation", Text),
    Column("at", UTCDateTime, nullable=False),
    Column("batch_id", String(64)),  # migration 0016
    Index("ix_operation_log_at", "at", "id"),
    Index("ix_operation_log_instance", "instance_id", "at"),
)

# Comments on user tasks (``/task/{id}/comment``): kept after the task ends.
task_comment = Table(
    "task_comment",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("task_id", String(64), nullable=False),
    Column("instance_id", String(64)),
    Column("user_id", String(255)),
    Column("message", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Index("ix_task_comment_task", "task_id", "created_at"),
)

# Batches (``/batch``, migration 0016): one operator action on many items, cut into chunks
# that workers claim with a lease and apply one transaction each; failures kept per item.
batch = Table(
    "batch",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("type", String(64), nullable=False),
    Column("state", String(16), nullable=False),
    Column("params", JSONDoc, nullable=False),
    Column("total_items", Integer, nullable=False),
    Column("total_jobs", Integer, nullable=False),
    Column("chunk_size", Integer, nullable=False),
    Column("jobs_per_seed", Integer, nullable=False),
    Column("completed_jobs", Integer, nullable=False),
    Column("failed_jobs", Integer, nullable=False),
    Column("completed_items", Integer, nullable=False),
    Column("failed_items", Integer, nullable=False),
    Column("created_by", String(255)),
    Column("annotation", Text),
    Column("tenant_id", String(255)),
    Column("created_at", UTCDateTime, nullable=False),
    Column("ended_at", UTCDateTime),
    Index("ix_batch_created", "created_at", "id"),
)

batch_chunk = Table(
    "batch_chunk",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("batch_id", String(64), ForeignKey("batch.id", ondelete="CASCADE"), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("items", JSONDoc, nullable=False),
    Column("state", String(16), nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("lease_owner", String(255)),
    Column("lease_expires_at", UTCDateTime),
    Column("published_at", UTCDateTime),
    Column("done_at", UTCDateTime),
    Column("failures", JSONDoc),
    Column("error", Text),
    Index("ix_batch_chunk_batch", "batch_id", "seq"),
    Index("ix_batch_chunk_state", "state", "published_at"),
)

TABLES_IN_DROP_ORDER = (
    batch_chunk, batch, operation_log, task_filter, task_comment, identity_membership,
    identity_user, identity_group,
    identity_tenant_member, identity_tenant,
    decision_instance, decision_definition, decision_requirements_definition,
    worker_binding, history, message_buffer, event_subscription, incident, user_task,
    external_task, timer, compensable, scope, token,
    process_instance, schedule_fire, timer_schedule, process_definition, deployment_resource,
    deployment,
)  # fmt: skip
