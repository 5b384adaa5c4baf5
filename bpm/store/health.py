"""The one statement a health check sends: is the database answering?"""

from __future__ import annotations

from sqlalchemy import Connection, text


def ping(conn: Connection) -> None:
    conn.execute(text("SELECT 1")).scalar_one()
