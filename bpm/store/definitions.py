"""Queries on deployments and process definitions."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, bindparam, func, insert, select, update

from bpm.runtime.records import ProcessDefinition
from bpm.store import dialect
from bpm.store import tables as t
from bpm.store.rows import definition_from_row, record_of

# A definition's record: every column but the source and the compiled model (big).
_RECORD = [c for c in t.process_definition.c if c.name not in ("source", "model")]


_LATEST = (
    select(*_RECORD)
    .where(t.process_definition.c.key == bindparam("key"))
    .order_by(t.process_definition.c.version.desc())
    .limit(1)
)


def latest(conn: Connection, key: str) -> ProcessDefinition | None:
    """The newest version of ``key`` (the first statement of a start: it goes out with the
    transaction's BEGIN, one round trip)."""
    (rows,) = dialect.run_many(conn, [(_LATEST, {"key": key})])
    return record_of(ProcessDefinition, rows[0]) if rows else None


def by_version(conn: Connection, key: str, version: int) -> ProcessDefinition | None:
    pd = t.process_definition
    row = conn.execute(select(*_RECORD).where(pd.c.key == key, pd.c.version == version)).first()
    return definition_from_row(row) if row else None


def by_version_tag(conn: Connection, key: str, tag: str) -> list[ProcessDefinition]:
    """The versions of ``key`` with version tag ``tag``, latest first (at most two: one is
    the answer, two make the tag ambiguous)."""
    pd = t.process_definition
    rows = conn.execute(
        select(*_RECORD)
        .where(pd.c.key == key, pd.c.version_tag == tag)
        .order_by(pd.c.version.desc())
        .limit(2)
    ).all()
    return [definition_from_row(row) for row in rows]


def in_deployment(
    conn: Connection, key: str, deployment_id: str | None
) -> ProcessDefinition | None:
    """The version of ``key`` deployed with ``deployment_id``: the one it created, or, when
    it carried the file unchanged (a redeploy that changed nothing keeps the earlier
    version), the latest version up to that deployment from a file of the same name. None
    when the deployment holds no such process (never another deployment's latest)."""
    pd = t.process_definition
    if deployment_id is None:  # a definition stored without a deployment: nothing to bind
        return latest(conn, key)
    row = conn.execute(
        select(*_RECORD).where(pd.c.key == key, pd.c.deployment_id == deployment_id).limit(1)
    ).first()
    if row:
        return definition_from_row(row)
    # Carried unchanged: the version made from a file with the same name and content as
    # one of this deployment's.
    mine = t.deployment_resource.alias("mine")
    made = t.deployment_resource.alias("made")
    same_file = (
        select(mine.c.id)
        .where(
            mine.c.deployment_id == deployment_id,
            mine.c.name == made.c.name,
            mine.c.checksum == made.c.checksum,
        )
        .exists()
    )
    row = conn.execute(
        select(*_RECORD)
        .join(made, (made.c.deployment_id == pd.c.deployment_id) & (made.c.name == pd.c.resource))
        .where(pd.c.key == key, same_file)
        .order_by(pd.c.version.desc())
        .limit(1)
    ).first()
    return definition_from_row(row) if row else None


def by_id(conn: Connection, definition_id: str) -> ProcessDefinition | None:
    row = conn.execute(select(*_RECORD).where(t.process_definition.c.id == definition_id)).first()
    return definition_from_row(row) if row else None


def model_json(conn: Connection, definition_id: str) -> dict[str, Any] | None:
    value = conn.execute(
        select(t.process_definition.c.model).where(t.process_definition.c.id == definition_id)
    ).scalar_one_or_none()
    return dict(value) if value is not None else None


def source(conn: Connection, definition_id: str) -> str | None:
    return conn.execute(
        select(t.process_definition.c.source).where(t.process_definition.c.id == definition_id)
    ).scalar_one_or_none()


def next_version(conn: Connection, key: str) -> int:
    current = conn.execute(
        select(func.max(t.process_definition.c.version)).where(t.process_definition.c.key == key)
    ).scalar_one_or_none()
    return int(current or 0) + 1


def insert_definition(conn: Connection, **values: Any) -> None:
    conn.execute(insert(t.process_definition).values(**values))


def list_all(conn: Connection, key: str | None = None) -> list[ProcessDefinition]:
    q = select(t.process_definition).order_by(
        t.process_definition.c.key, t.process_definition.c.version
    )
    if key is not None:
        q = q.where(t.process_definition.c.key == key)
    return [definition_from_row(r) for r in conn.execute(q)]


def set_suspended(conn: Connection, key: str, suspended: bool) -> int:
    """Suspend or activate every version of ``key``; returns how many rows matched."""
    result = conn.execute(
        update(t.process_definition)
        .where(t.process_definition.c.key == key)
        .values(suspended=suspended)
    )
    return int(result.rowcount or 0)
