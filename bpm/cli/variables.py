"""``bpm vars list ID`` and ``bpm vars set ID NAME[:TYPE]=VALUE...``: an instance's
variables, e.g. to fix one before ``bpm retry``."""

from __future__ import annotations

import getpass
import json
from typing import Annotated

import typer

from bpm.cli.app import (
    DbOpt,
    JsonOpt,
    app,
    console,
    open_engine,
    parse_vars,
    print_rows,
    resolve_id,
    user_errors,
)

vars_app = typer.Typer(
    help="An instance's variables: list them, or set some (e.g. before `bpm retry`).",
    no_args_is_help=True,
)
app.add_typer(vars_app, name="vars")

IdArg = Annotated[str, typer.Argument(help="The instance id, or a unique prefix of it.")]


def _type_of(value: object, written: str | None) -> str:
    """The type the REST API shows: the one it was written with, else JSON's."""
    from bpm.runtime.typed_values import INT32

    if written:
        return written
    if value is None:
        return "Null"
    if isinstance(value, bool):
        return "Boolean"
    if isinstance(value, int):
        return "Integer" if INT32[0] <= value <= INT32[1] else "Long"
    if isinstance(value, float):
        return "Double"
    if isinstance(value, str):
        return "String"
    return "Object"


@vars_app.command("list")
def list_vars(
    instance_id: IdArg,
    as_json: JsonOpt = False,
    db: DbOpt = None,
) -> None:
    """List an instance's variables with their types."""
    with user_errors():
        engine = open_engine(db)
        inst = engine.get_instance(resolve_id(engine, "instance", instance_id))
        rows = [
            {"name": k, "type": _type_of(v, inst.variable_types.get(k)), "value": v}
            for k, v in sorted(inst.variables.items())
        ]
        print_rows(
            rows,
            as_json=as_json,
            json_of=lambda row: row,
            columns=("name", "type", "value"),
            cells=lambda row: (str(row["name"]), str(row["type"]), json.dumps(row["value"])),
        )


@vars_app.command("set")
def set_vars(
    instance_id: IdArg,
    assignments: Annotated[
        list[str],
        typer.Argument(
            help="NAME=VALUE (VALUE is JSON when it parses, else text) or NAME:TYPE=VALUE "
            "with a REST API type: String, Integer, Short, Long, Double, Boolean, Date, Json, "
            "Object, Bytes, Xml, Null (e.g. n:Integer=3, id:String=007).",
            show_default=False,
        ),
    ],
    db: DbOpt = None,
) -> None:
    """Set variables of a running instance in one change (recorded in its trail as set
    by the CLI). Every value is checked first: a bad one changes nothing."""
    with user_errors():
        variables = parse_vars(assignments, what="assignment")
        engine = open_engine(db)
        inst = engine.set_variables(
            resolve_id(engine, "instance", instance_id), variables, by=f"cli:{getpass.getuser()}"
        )
        for name in variables:
            shown = json.dumps(inst.variables.get(name))
            kind = _type_of(inst.variables.get(name), inst.variable_types.get(name))
            line = f"{inst.id}: {name} = {shown} ({kind})"
            console.print(line, highlight=False, markup=False, soft_wrap=True)
