"""``bpm trail export ID``: an instance's inputs as a case file for
:func:`bpm.testing.replay` (see docs/testing.md)."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from bpm.cli.app import DbOpt, app, open_engine, resolve_id, user_errors

trail_app = typer.Typer(help="An instance's trail as a test case.", no_args_is_help=True)
app.add_typer(trail_app, name="trail")


@trail_app.command("export")
def export(
    instance_id: Annotated[str, typer.Argument(help="The instance id, or a unique prefix of it.")],
    db: DbOpt = None,
) -> None:
    """Print the instance's inputs (start variables, handler results, task completions,
    messages, timer firings) as JSON: `bpm trail export ID > case.json`, then
    `bpm.testing.replay("case.json")` in a test. Needs BPM_HISTORY_VALUES=1 when it ran."""
    from bpm.testing.case import export_case

    with user_errors():
        engine = open_engine(db)
        try:
            case = export_case(engine, resolve_id(engine, "instance", instance_id))
            typer.echo(json.dumps(case, indent=2, default=str))
        finally:
            engine.close()
