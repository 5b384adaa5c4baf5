"""``bpm doctor``: the health checks of ``/health/ready`` for worker and beat hosts, plus
"does every deployed inline task have a handler here"."""

from __future__ import annotations

import os
from typing import Annotated

import typer
from rich.table import Table

from bpm.cli.app import app, console, database_url, import_handlers, user_errors

DbOpt = Annotated[
    str | None, typer.Option("--db", help="Database URL (default: $BPM_DATABASE_URL).")
]


@app.command()
def doctor(
    db: DbOpt = None,
    broker: Annotated[
        str | None, typer.Option("--broker", help="Broker URL (default: $BPM_BROKER_URL).")
    ] = None,
    handlers: Annotated[
        str | None,
        typer.Option("--handlers", help="Handler modules to check (default: $BPM_HANDLERS)."),
    ] = None,
) -> None:
    """Check this host: database reachable, schema current, broker reachable, handlers
    registered for every inline task of the newest process versions. Exits 1 on a failure."""
    from bpm.engine import Engine
    from bpm.handlers import registry
    from bpm.health import (
        check_broker,
        check_database,
        check_handlers,
        check_migrations,
        healthy,
    )

    with user_errors():
        engine = Engine(database_url(db))
        modules = handlers if handlers is not None else os.environ.get("BPM_HANDLERS")
        import_handlers(modules)
        checks = [
            check_database(engine),
            check_migrations(engine),
            check_broker(broker or os.environ.get("BPM_BROKER_URL") or None),
        ]
        if checks[0].ok and checks[1].ok:
            checks.append(check_handlers(engine, registry))
        engine.close()
    table = Table("check", "result", "ms", "detail", header_style="bold")
    for c in checks:
        result = "skipped" if c.skipped else ("ok" if c.ok else "FAILED")
        style = "yellow" if c.skipped else ("green" if c.ok else "bold red")
        table.add_row(c.name, f"[{style}]{result}[/]", f"{c.seconds * 1000:.0f}", c.detail)
    console.print(table)
    if not healthy(checks):
        raise typer.Exit(1)
