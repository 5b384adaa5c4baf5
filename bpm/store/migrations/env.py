"""Alembic environment: runs on the connection the engine hands over (``bpm db upgrade``)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from bpm.store.partitions import include_name
from bpm.store.tables import metadata

config = context.config
connection = config.attributes.get("connection")

if connection is None:
    url = config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("set sqlalchemy.url or pass a connection in config.attributes")
    with create_engine(url).begin() as conn:
        context.configure(
            connection=conn,
            target_metadata=metadata,
            render_as_batch=True,
            include_name=include_name,
        )
        with context.begin_transaction():
            context.run_migrations()
else:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=True,
        include_name=include_name,
    )
    with context.begin_transaction():
        context.run_migrations()
