"""Ids that start with a given prefix, for the CLI's git-like short ids (``bpm show 9739b634``)."""

from __future__ import annotations

from sqlalchemy import Connection, Table, select

from bpm.store import tables as t

# The kinds of record a command takes an id of, and the table holding them.
TABLES: dict[str, Table] = {
    "instance": t.process_instance,
    "task": t.user_task,
    "incident": t.incident,
}


def _escaped(prefix: str) -> str:
    """``prefix`` for LIKE with ``\\`` as the escape: ``%`` and ``_`` match themselves."""
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def ids_with_prefix(conn: Connection, kind: str, prefix: str, limit: int) -> list[str]:
    """Up to ``limit`` ids of ``kind`` (``instance``, ``task``, ``incident``) starting with
    ``prefix``, in id order."""
    table = TABLES[kind]
    q = (
        select(table.c.id)
        .where(table.c.id.like(_escaped(prefix) + "%", escape="\\"))
        .order_by(table.c.id)
        .limit(limit)
    )
    return [str(row[0]) for row in conn.execute(q)]
