"""Commands on definitions and instances, and the embedded ``bpm run`` / ``bpm dev``."""

from __future__ import annotations

import json
import signal
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.padding import Padding
from rich.table import Table

from bpm.cli.app import (
    app,
    console,
    database_url,
    db_app,
    fail,
    import_handlers,
    open_engine,
    parse_vars,
    user_errors,
)
from bpm.engine import Engine
from bpm.runtime.records import Instance
from bpm.runtime.states import LIVE_TOKEN_STATES
from bpm.trail import instance_json, trail_table

DbOpt = Annotated[
    str | None, typer.Option("--db", help="Database URL (default: $BPM_DATABASE_URL).")
]
VarOpt = Annotated[
    list[str] | None,
    typer.Option("--var", help="A variable NAME=VALUE; VALUE is JSON when it parses."),
]


def _engine(db: str | None, *, embedded: bool = False) -> Engine:
    return open_engine(db, embedded_default=embedded)


@db_app.command("upgrade")
def db_upgrade(db: DbOpt = None) -> None:
    """Create the schema or bring it to the newest version (safe to run again)."""
    with user_errors():
        engine = Engine(database_url(db))
        engine.upgrade()
        from bpm.store.migrate import current_revision

        console.print(f"schema at revision {current_revision(engine.db)}")


@app.command()
def deploy(
    file: Annotated[Path, typer.Argument(help="A .bpmn or .dmn file.")], db: DbOpt = None
) -> None:
    """Deploy every executable process of a BPMN file, or every decision of a DMN file.
    Unchanged content keeps its version; changed content adds one. Settings the engine does
    not honour are printed as warnings."""
    with user_errors():
        if not file.is_file():
            fail(f"{file} is not a file")
        engine = _engine(db)
        deployment = engine.create_deployment(file)
        for d in deployment.definitions:
            console.print(f"deployed [bold]{d.key}[/] version {d.version} ({d.id})")
        for x in deployment.decisions:
            console.print(f"deployed decision [bold]{x.key}[/] version {x.version} ({x.id})")
        for warning in deployment.warnings:
            console.print(f"[yellow]warning:[/] {warning}", highlight=False, soft_wrap=True)


@app.command()
def start(
    key: Annotated[str, typer.Argument(help="The process key (the BPMN process id).")],
    var: VarOpt = None,
    business_key: Annotated[str | None, typer.Option("--business-key")] = None,
    idempotency_key: Annotated[
        str | None, typer.Option("--idempotency-key", help="A repeated key returns the first.")
    ] = None,
    start_event: Annotated[
        str | None,
        typer.Option("--start-event", help="The start event to start at (default: the none one)."),
    ] = None,
    db: DbOpt = None,
) -> None:
    """Start an instance of the latest version of KEY; workers drive it from there."""
    with user_errors():
        variables = parse_vars(var)
        inst = _engine(db).start(
            key,
            variables,
            business_key=business_key,
            idempotency_key=idempotency_key,
            start_event=start_event,
        )
        console.print(f"started {inst.id} ({inst.state.value})")
        _cockpit_link(inst.id)


@app.command()
def show(
    instance_id: Annotated[str, typer.Argument(help="The instance id.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
    db: DbOpt = None,
) -> None:
    """Print an instance, its variables and its token trail."""
    with user_errors():
        engine = _engine(db)
        inst = engine.get_instance(instance_id)
        if as_json:
            typer.echo(json.dumps(_with_children(engine, inst.id), indent=2, default=str))
            return
        _print_instance(engine, inst.id)
        _cockpit_link(inst.id)


def _cockpit_link(instance_id: str) -> None:
    """The instance's cockpit page, when ``BPM_COCKPIT_URL`` says where the cockpit is."""
    from bpm.cockpit.links import cockpit_url, instance_link

    base = cockpit_url()
    if base is not None:
        console.print(
            f"cockpit: {instance_link(base, instance_id)}", highlight=False, soft_wrap=True
        )


def _with_children(engine: Engine, instance_id: str) -> dict[str, Any]:
    """An instance's JSON, with the JSON of every instance it called nested in it."""
    inst = engine.get_instance(instance_id)
    out = instance_json(inst, engine.history(instance_id))
    out["children"] = [_with_children(engine, child) for child in inst.children]
    return out


def _print_instance(engine: Engine, instance_id: str, level: int = 0) -> None:
    """The trail, variables and state; then, indented, each instance it called."""
    inst = engine.get_instance(instance_id)
    events = engine.history(instance_id)
    pad = 4 * level
    title = f"token trail of {inst.id}"
    if inst.parent_id is not None:
        title = f"token trail of {inst.definition_key} {inst.id[:8]}"
        header = f"called by {inst.parent_id}: {inst.definition_key} {inst.id}"
        console.print(Padding(header, (1, 0, 0, pad)), highlight=False)
    console.print(Padding(trail_table(events, title=title), (0, 0, 0, pad)))
    console.print(
        Padding(f"variables: {json.dumps(inst.variables, default=str)}", (0, 0, 0, pad)),
        Padding(f"state: [bold]{inst.state.value}[/]", (0, 0, 0, pad)),
    )
    for child in inst.children:
        _print_instance(engine, child, level + 1)


@app.command("instances")
def list_instances(
    state: Annotated[str | None, typer.Option("--state", help="active, suspended, ...")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1)] = 50,
    db: DbOpt = None,
) -> None:
    """List instances, newest first."""
    with user_errors():
        rows = _engine(db).instances(state=state, limit=limit)
        table = Table("id", "process", "business key", "state", "started", header_style="bold")
        for inst in rows:
            table.add_row(
                inst.id,
                inst.definition_key,
                inst.business_key or "",
                inst.state.value,
                inst.created_at.isoformat(timespec="seconds"),
            )
        console.print(table)


def _operator(action: str) -> Any:
    def command(
        instance_id: Annotated[str, typer.Argument(help="The instance id.")], db: DbOpt = None
    ) -> None:
        with user_errors():
            inst = getattr(_engine(db), action)(instance_id)
            console.print(f"{inst.id}: {inst.state.value}")

    command.__doc__ = f"{action.capitalize()} an instance."
    return command


app.command("terminate")(_operator("terminate"))
app.command("suspend")(_operator("suspend"))
app.command("resume")(_operator("resume"))


@app.command("tasks")
def list_tasks(
    instance_id: Annotated[str | None, typer.Option("--instance")] = None, db: DbOpt = None
) -> None:
    """List open user tasks."""
    with user_errors():
        table = Table("task id", "instance", "node", "name", "assignee", header_style="bold")
        for t in _engine(db).user_tasks(instance_id):
            table.add_row(t.id, t.instance_id, t.node_id, t.name or "", t.assignee or "")
        console.print(table)


@app.command("complete-task")
def complete_task(
    task_id: Annotated[str, typer.Argument(help="The user task id.")],
    var: VarOpt = None,
    db: DbOpt = None,
) -> None:
    """Complete an open user task with variables."""
    with user_errors():
        _engine(db).complete_user_task(task_id, parse_vars(var))
        console.print(f"completed {task_id}")


@app.command()
def run(
    file: Annotated[Path, typer.Argument(help="A .bpmn file to deploy and run once.")],
    var: VarOpt = None,
    handlers: Annotated[
        str | None, typer.Option("--handlers", help="Comma-separated handler modules.")
    ] = None,
    business_key: Annotated[str | None, typer.Option("--business-key")] = None,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            help="Give up after SECONDS (waiting on timers, or steps that keep looping).",
        ),
    ] = 300.0,
    db: DbOpt = None,
) -> None:
    """Run one instance to its end in this process (SQLite ./bpm.db by default).

    Prints the token trail and the final state. Exits 0 when the instance completed, 1 when
    it ended otherwise or waits on something outside (a user or external task).
    """
    from bpm.local import LocalLoop

    with user_errors():
        if not file.is_file():
            fail(f"{file} is not a file")
        variables = parse_vars(var)
        import_handlers(handlers)
        engine = _engine(db, embedded=True)
        loop = LocalLoop(engine)
        d = engine.deploy(file)
        console.print(f"deployed [bold]{d.key}[/] version {d.version} on {engine.url}")
        inst = engine.start(d.key, variables, business_key=business_key)
        with console.status(f"running {inst.id}") as status:
            settled = loop.run_instance(
                inst.id,
                timeout=timedelta(seconds=timeout),
                on_progress=lambda i: status.update(f"running {i.id}: {_live(i)} live tokens"),
            )
        _print_instance(engine, inst.id)
        waiting = settled.waiting_on
        if waiting[:1] == ("timeout",):
            console.print(f"gave up after --timeout {timeout:g} s")
            waiting = waiting[1:]
        if waiting:
            console.print("waiting on: " + ", ".join(waiting))
        if settled.instance.state.value != "completed":
            raise typer.Exit(1)


def _live(inst: Instance) -> int:
    return sum(1 for t in inst.tokens if t.state in LIVE_TOKEN_STATES)


@app.command()
def dev(
    handlers: Annotated[
        str | None, typer.Option("--handlers", help="Comma-separated handler modules.")
    ] = None,
    api: Annotated[
        bool, typer.Option("--api/--no-api", help="Also serve the REST API on localhost.")
    ] = True,
    port: Annotated[int, typer.Option("--port", min=1, max=65535)] = 8080,
    db: DbOpt = None,
) -> None:
    """Serve the embedded loop until Ctrl-C: runs steps, fires timers, sweeps.

    With ``--api`` (the default) the REST API is served too, WITHOUT authentication, on
    127.0.0.1 only; it says so when it starts.
    """
    from bpm.local import LocalLoop

    with user_errors():
        import_handlers(handlers)
        engine = _engine(db, embedded=True)
        loop = LocalLoop(engine)
        signal.signal(signal.SIGTERM, lambda *_: loop.stop())
        if api:
            from bpm.cli.api import start_dev_api

            start_dev_api(engine, port=port)
        console.print(f"bpm dev: serving {engine.url} (Ctrl-C to stop)")
        try:
            loop.serve()
        except KeyboardInterrupt:
            loop.stop()
        console.print("stopped")
