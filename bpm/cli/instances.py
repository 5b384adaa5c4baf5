"""Commands on definitions and instances, and the embedded ``bpm run`` / ``bpm dev``."""

from __future__ import annotations

import getpass
import json
import signal
from datetime import timedelta
from typing import Annotated, Any

import typer
from rich.padding import Padding

from bpm.cli.app import (
    DbOpt,
    JsonOpt,
    app,
    console,
    database_url,
    db_app,
    fail,
    id_column,
    import_handlers,
    open_engine,
    parse_vars,
    print_rows,
    resolve_id,
    user_errors,
)
from bpm.engine import Engine
from bpm.runtime.records import Instance
from bpm.runtime.states import LIVE_TOKEN_STATES
from bpm.trail import instance_json, trail_table

VarOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--var",
        help="A variable NAME=VALUE (VALUE is JSON when it parses, else text) or "
        "NAME:TYPE=VALUE with a REST API type (Integer, Long, Double, Boolean, String, "
        "Date, Json, Null).",
    ),
]
ID_HELP = "The instance id, or a unique prefix of it."


def _engine(db: str | None, *, create: bool = False) -> Engine:
    return open_engine(db, create=create)


@db_app.command("upgrade")
def db_upgrade(db: DbOpt = None) -> None:
    """Create the schema or bring it to the newest version (safe to run again)."""
    with user_errors():
        engine = Engine(database_url(db, create=True))
        engine.upgrade()
        from bpm.store.migrate import current_revision

        console.print(f"schema at revision {current_revision(engine.db)}")


SourceArg = Annotated[
    str,
    typer.Argument(
        help="A .bpmn or .dmn file, or a Python builder process: loan.py, loan.py:process "
        "or module:attribute.",
        show_default=False,
    ),
]


@app.command()
def deploy(file: SourceArg, db: DbOpt = None) -> None:
    """Deploy every executable process of a BPMN file, every decision of a DMN file, or
    the builder processes of a Python file (loan.py: every Process it defines; loan.py:name
    or module:name: that one). Unchanged content keeps its version; changed content adds
    one. Settings the engine does not honour are printed as warnings."""
    from bpm.cli.sources import load_source

    with user_errors():
        source = load_source(file)
        engine = _engine(db, create=True)
        items: list[Any] = [source.path] if source.path else [p for _, p in source.processes]
        deployment = engine.create_deployment(*items)
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
        console.print(f"started {inst.id} ({inst.state.value})", highlight=False)
        _cockpit_link(inst.id)


@app.command()
def show(
    instance_id: Annotated[str, typer.Argument(help=ID_HELP)],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
    db: DbOpt = None,
) -> None:
    """Print an instance, its variables and its token trail."""
    with user_errors():
        engine = _engine(db)
        inst = engine.get_instance(resolve_id(engine, "instance", instance_id))
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
        title = f"token trail of {inst.definition_key} {inst.id}"
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
    as_json: JsonOpt = False,
    db: DbOpt = None,
) -> None:
    """List instances, newest first."""
    with user_errors():
        rows = _engine(db).instances(state=state, limit=limit)
        print_rows(
            rows,
            as_json=as_json,
            json_of=_instance_row,
            columns=(id_column("id", rows), "process", "business key", "state", "started"),
            cells=lambda inst: (
                inst.id,
                inst.definition_key,
                inst.business_key or "",
                inst.state.value,
                inst.created_at.isoformat(timespec="seconds"),
            ),
        )


def _instance_row(inst: Instance) -> dict[str, Any]:
    return {
        "id": inst.id,
        "definition_id": inst.definition_id,
        "process": inst.definition_key,
        "business_key": inst.business_key,
        "state": inst.state.value,
        "created_at": inst.created_at,
        "ended_at": inst.ended_at,
        "parent_id": inst.parent_id,
    }


def _operator(action: str) -> Any:
    def command(
        instance_id: Annotated[str, typer.Argument(help=ID_HELP)], db: DbOpt = None
    ) -> None:
        with user_errors():
            engine = _engine(db)
            inst = getattr(engine, action)(
                resolve_id(engine, "instance", instance_id), by=f"cli:{getpass.getuser()}"
            )
            console.print(f"{inst.id}: {inst.state.value}", highlight=False)

    command.__doc__ = f"{action.capitalize()} an instance."
    return command


app.command("terminate")(_operator("terminate"))
app.command("suspend")(_operator("suspend"))
app.command("resume")(_operator("resume"))


@app.command("tasks")
def list_tasks(
    instance_id: Annotated[
        str | None, typer.Option("--instance", help="One instance (its id or a unique prefix).")
    ] = None,
    as_json: JsonOpt = False,
    db: DbOpt = None,
) -> None:
    """List open user tasks."""
    with user_errors():
        engine = _engine(db)
        if instance_id is not None:
            instance_id = resolve_id(engine, "instance", instance_id)
        tasks = engine.user_tasks(instance_id)
        print_rows(
            tasks,
            as_json=as_json,
            json_of=lambda t: {
                "id": t.id,
                "instance_id": t.instance_id,
                "node_id": t.node_id,
                "name": t.name,
                "assignee": t.assignee,
                "created_at": t.created_at,
            },
            columns=(
                id_column("task id", tasks),
                id_column("instance", tasks, "instance_id"),
                "node",
                "name",
                "assignee",
            ),
            cells=lambda t: (t.id, t.instance_id, t.node_id, t.name or "", t.assignee or ""),
        )


@app.command("complete-task")
def complete_task(
    task_id: Annotated[str, typer.Argument(help="The user task id, or a unique prefix of it.")],
    var: VarOpt = None,
    db: DbOpt = None,
) -> None:
    """Complete an open user task with variables."""
    with user_errors():
        variables = parse_vars(var)
        engine = _engine(db)
        task_id = resolve_id(engine, "task", task_id)
        engine.complete_user_task(task_id, variables)
        console.print(f"completed {task_id}", highlight=False)


@app.command()
def run(
    file: Annotated[
        str,
        typer.Argument(
            help="A .bpmn file, or a Python builder process (loan.py, loan.py:process, "
            "module:attribute), to deploy and run once.",
            show_default=False,
        ),
    ],
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
    """Run one instance to its end in this process, with no broker (the embedded loop).

    Prints the token trail and the final state. Exits 0 when the instance completed, 1 when
    it ended otherwise or waits on something outside (a user or external task).
    """
    from bpm.cli.sources import load_source
    from bpm.local import LocalLoop

    with user_errors():
        variables = parse_vars(var)
        import_handlers(handlers)
        source = load_source(file)
        if len(source.processes) > 1:
            names = ", ".join(name for name, _ in source.processes)
            fail(f"{file} defines {len(source.processes)} processes ({names}): name one")
        engine = _engine(db, create=True)
        loop = LocalLoop(engine)
        d = engine.deploy(source.path or source.processes[0][1])
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
        engine = _engine(db, create=True)
        loop = LocalLoop(engine)
        signal.signal(signal.SIGTERM, lambda *_: loop.stop())
        if api:
            try:
                import uvicorn  # noqa: F401
            except ImportError as exc:
                from bpm.extras import missing_extra

                error = missing_extra(exc, "`bpm dev` serves the REST API and")
                if error is None:
                    raise
                fail(f"{error}; or pass --no-api")
            from bpm.cli.api import start_dev_api

            start_dev_api(engine, port=port)
        console.print(f"bpm dev: serving {engine.url} (Ctrl-C to stop)")
        try:
            loop.serve()
        except KeyboardInterrupt:
            loop.stop()
        console.print("stopped")
