"""``bpm doctor``: the health checks of ``/health/ready`` for worker and beat hosts, plus
"does every deployed inline task have a handler here"."""

from __future__ import annotations

import os
import re
from typing import Annotated

import typer
from rich.table import Table

from bpm.cli.app import DbOpt, app, console, database_url, import_handlers, user_errors
from bpm.health import Check


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
    problems = _problems(checks)
    table = Table("check", "result", "ms", "detail", header_style="bold")
    for c in checks:
        result = "skipped" if c.skipped else ("ok" if c.ok else "FAILED")
        style = "yellow" if c.skipped else ("green" if c.ok else "bold red")
        detail = problems.get(c.name, c.detail)
        table.add_row(c.name, f"[{style}]{result}[/]", f"{c.seconds * 1000:.0f}", detail)
    console.print(table)
    if healthy(checks):
        done = ", ".join(c.name for c in checks if c.ok and not c.skipped)
        console.print(f"verdict: this host is ready ({done} ok).", highlight=False)
        return
    console.print(
        "verdict: this host is not ready: " + "; ".join(problems.values()) + ".",
        highlight=False,
        soft_wrap=True,
    )
    raise typer.Exit(1)


# The exception class a failed check names first ("OperationalError: ..."), and the one
# SQLAlchemy repeats in parentheses ("(psycopg.OperationalError) ...").
_CLASS = re.compile(r"^\w+(Error|Exception|Refused|Timeout)\w*: |\([\w.]+(Error|Exception)\) ")


def _problems(checks: list[Check]) -> dict[str, str]:
    """A sentence for each failed check, naming what is wrong and not an exception class."""
    out: dict[str, str] = {}
    database_down = any(c.name == "database" and not c.ok for c in checks)
    for c in checks:
        if c.ok or c.skipped:
            continue
        reason = _CLASS.sub("", _CLASS.sub("", c.detail.strip())).rstrip(".")
        if c.name == "database":
            out[c.name] = f"the database does not answer ({reason})"
        elif c.name == "migrations" and database_down:
            out[c.name] = "the schema could not be checked (no database)"
        elif c.name == "broker":
            out[c.name] = f"the broker does not accept connections ({reason})"
        else:
            out[c.name] = reason
    return out
