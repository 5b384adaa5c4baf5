"""``bpm schedules`` (timer start events) and suspending or activating a definition."""

from __future__ import annotations

from typing import Annotated

import typer

from bpm.cli.app import (
    DbOpt,
    JsonOpt,
    app,
    console,
    database_url,
    id_column,
    print_rows,
    user_errors,
)
from bpm.engine import Engine


@app.command("schedules")
def list_schedules(
    key: Annotated[str | None, typer.Option("--key", help="Only this process key.")] = None,
    include_all: Annotated[
        bool, typer.Option("--all", help="Also ended and replaced schedules.")
    ] = False,
    as_json: JsonOpt = False,
    db: DbOpt = None,
) -> None:
    """List the schedules of timer start events: when each next starts an instance."""
    with user_errors():
        engine = Engine(database_url(db))
        found = engine.schedules(key, include_inactive=include_all)
        print_rows(
            found,
            as_json=as_json,
            json_of=lambda s: {
                "id": s.id,
                "process": s.definition_key,
                "definition_id": s.definition_id,
                "start_event": s.node_id,
                "kind": s.kind,
                "expression": s.expression,
                "state": s.state,
                "next_due": s.next_due,
                "started": s.fired_count,
            },
            columns=(
                "process",
                id_column("definition", found, "definition_id"),
                "start event",
                "timer",
                "state",
                "next due",
                "started",
            ),
            cells=lambda s: (
                s.definition_key,
                s.definition_id,
                s.node_id,
                f"{s.kind} {s.expression}",
                s.state,
                s.next_due.isoformat(timespec="seconds") if s.next_due else "-",
                str(s.fired_count),
            ),
        )


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
