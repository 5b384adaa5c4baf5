"""``bpm schedules`` (timer start events) and suspending or activating a definition."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from bpm.cli.app import app, console, database_url, user_errors
from bpm.engine import Engine

DbOpt = Annotated[
    str | None, typer.Option("--db", help="Database URL (default: $BPM_DATABASE_URL).")
]


@app.command("schedules")
def list_schedules(
    key: Annotated[str | None, typer.Option("--key", help="Only this process key.")] = None,
    include_all: Annotated[
        bool, typer.Option("--all", help="Also ended and replaced schedules.")
    ] = False,
    db: DbOpt = None,
) -> None:
    """List the schedules of timer start events: when each next starts an instance."""
    with user_errors():
        engine = Engine(database_url(db))
        table = Table(
            "process", "definition", "start event", "timer", "state", "next due", "started",
            header_style="bold",
        )  # fmt: skip
        for s in engine.schedules(key, include_inactive=include_all):
            table.add_row(
                s.definition_key,
                s.definition_id,
                s.node_id,
                f"{s.kind} {s.expression}",
                s.state,
                s.next_due.isoformat(timespec="seconds") if s.next_due else "-",
                str(s.fired_count),
            )
        console.print(table)


def _set(key: str, db: str | None, suspend: bool) -> None:
    with user_errors():
        engine = Engine(database_url(db))
        found = engine.suspend_definition(key) if suspend else engine.activate_definition(key)
        state = "suspended" if suspend else "active"
        console.print(f"{key}: {len(found)} version(s) {state}")


@app.command("suspend-definition")
def suspend_definition(
    key: Annotated[str, typer.Argument(help="The process key.")], db: DbOpt = None
) -> None:
    """Suspend every version of KEY: no new instances; its timer start events pause."""
    _set(key, db, True)


@app.command("activate-definition")
def activate_definition(
    key: Annotated[str, typer.Argument(help="The process key.")], db: DbOpt = None
) -> None:
    """Activate a suspended process KEY again; its timer start events resume."""
    _set(key, db, False)
