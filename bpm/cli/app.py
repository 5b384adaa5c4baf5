"""The typer application shared by every command module, and the error policy.

Bad input prints one line to stderr and exits with code 2; never a traceback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Column, Table
from typer.core import TyperGroup

from bpm.errors import BpmError

if TYPE_CHECKING:
    from bpm.engine import Engine


class _Group(TyperGroup):
    """bpm's command group: a module of an extra that is not installed (uvicorn for
    ``bpm api``, celery for a broker...) ends the command with one line naming the extra."""

    def invoke(self, ctx: Any) -> Any:  # click.Context (typer vendors click since 0.20)
        try:
            return super().invoke(ctx)
        except ImportError as exc:
            from bpm.extras import missing_extra

            command = " ".join(filter(None, [ctx.command_path, ctx.invoked_subcommand]))
            error = missing_extra(exc, f"`{command}`")
            if error is None:
                raise
            fail(str(error))


app = typer.Typer(
    cls=_Group,
    name="bpm",
    help="A durable BPMN engine for Celery shops. Every command uses the database of --db, "
    "else $BPM_DATABASE_URL, else SQLite ./bpm.db.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
db_app = typer.Typer(help="Database schema commands.", no_args_is_help=True)
app.add_typer(db_app, name="db")

console = Console()
err_console = Console(stderr=True)

DEFAULT_URL = "sqlite:///bpm.db"
DEFAULT_FILE = "bpm.db"

DbOpt = Annotated[
    str | None,
    typer.Option(
        "--db", help="Database URL (default: $BPM_DATABASE_URL, else sqlite:///bpm.db here)."
    ),
]

F = TypeVar("F", bound=Callable[..., Any])
R = TypeVar("R")

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def database_url(db: str | None, *, create: bool = False) -> str:
    """``--db``, else ``BPM_DATABASE_URL``, else SQLite ``./bpm.db``: one default for every
    command. Only commands that make things (``create``: deploy, run, dev, api, db upgrade)
    create ``./bpm.db``; the others say where they looked when it does not exist."""
    url = db or os.environ.get("BPM_DATABASE_URL")
    if url:
        return url
    if not create and not os.path.exists(DEFAULT_FILE):
        fail(
            f"no database: ./{DEFAULT_FILE} (the default) does not exist in {os.getcwd()}; "
            "pass --db URL, set BPM_DATABASE_URL, or run this where `bpm deploy` / `bpm run` "
            "made it"
        )
    return DEFAULT_URL


def open_engine(db: str | None, *, create: bool = False, schema_required: bool = True) -> Engine:
    """The engine of ``--db`` / ``BPM_DATABASE_URL`` / ``./bpm.db``, with its schema checked.

    SQLite (the embedded mode) gets its schema created or upgraded on the spot; a
    PostgreSQL database without the current schema stops the command with one line
    saying to run ``bpm db upgrade`` (or, with ``schema_required=False``, says that line
    as a warning: a server starts and reports itself not ready until then).
    """
    from bpm.engine import Engine
    from bpm.store import migrate
    from bpm.store.db import is_sqlite

    engine = Engine(database_url(db, create=create))
    current, head = migrate.current_revision(engine.db), migrate.head_revision()
    if current == head:
        return engine
    if is_sqlite(engine.db):
        engine.upgrade()
        return engine
    where = engine.db.url.render_as_string(hide_password=True)
    if current is None:
        message = f"{where} has no bpm schema yet: run `bpm db upgrade` (same --db) first"
    else:
        message = (
            f"{where} has bpm schema revision {current}, this bpm needs {head}: "
            "run `bpm db upgrade` (same --db)"
        )
    if schema_required:
        fail(message)
    err_console.print(f"warning: {message}; /health/ready answers 503 until then")
    return engine


def resolve_id(engine: Engine, kind: str, given: str) -> str:
    """The full id of the ``kind`` (``instance``, ``task``, ``incident``) that ``given``
    is, or the only one it starts (as git takes a short commit id). No match, or an
    ambiguous prefix, stops the command with one line listing the candidates."""
    given = given.strip()
    lists = {"instance": "bpm instances", "task": "bpm tasks", "incident": "bpm incidents"}
    if not given:
        fail(f"give the id of an {kind}, or its first characters (see `{lists[kind]}`)")
    found = engine.ids_with_prefix(kind, given, limit=6)
    if given in found or len(found) == 1:
        return given if given in found else found[0]
    if not found:
        fail(
            f"{kind} '{given}' does not exist: no {kind} id is or starts with it "
            f"(see `{lists[kind]}`)"
        )
    shown = ", ".join(found[:5]) + (", ..." if len(found) > 5 else "")
    fail(
        f"'{given}' is ambiguous: {'more than 5' if len(found) > 5 else len(found)} {kind} "
        f"ids start with it ({shown}); give more characters"
    )
    raise AssertionError("unreachable")


def print_json(data: Any) -> None:
    """``--json``: the data as indented JSON on stdout (datetimes as ISO 8601 text)."""
    import json

    typer.echo(json.dumps(data, indent=2, default=_json_default))


def _json_default(value: Any) -> Any:
    from datetime import datetime
    from enum import Enum

    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    return str(value)


def fail(message: str, code: int = 2) -> None:
    from rich.markup import escape

    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn the engine's own errors (and bad files) into one-line messages, exit code 2."""
    try:
        yield
    except BpmError as exc:
        fail(str(exc))
    except (OSError, ValueError) as exc:
        fail(f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # a database that is down, a URL that does not resolve
        from sqlalchemy.exc import SQLAlchemyError

        if isinstance(exc, SQLAlchemyError):
            first = str(exc).splitlines()[0]
            fail(f"database error: {first}")
        raise


def parse_vars(items: list[str] | None, *, what: str = "--var") -> dict[str, Any]:
    """``NAME=VALUE``: VALUE is read as JSON when it parses (120, true, "x", [1]), else it is
    text. ``NAME:TYPE=VALUE``: typed as the REST API types ``{"value": VALUE, "type":
    TYPE}`` (``n:Integer=3``, ``when:Date=2026-12-01T10:00:00``, ``id:String=007``,
    ``big:Long=5``, ``doc:Json={"a":1}``); TYPE is any case of the API's type names."""
    import json

    from bpm.runtime.typed_values import TYPE_NAMES, from_typed

    types = {t.lower(): t for t in TYPE_NAMES}
    out: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item:
            fail(f"{what} {item!r} is not NAME=VALUE (or NAME:TYPE=VALUE)")
        name, raw = item.split("=", 1)
        type_name = None
        if ":" in name:
            name, given = name.rsplit(":", 1)
            type_name = types.get(given.strip().lower())
            if type_name is None:
                fail(f"{what} {item!r}: unknown type '{given}'; use one of {', '.join(TYPE_NAMES)}")
        if not name:
            fail(f"{what} {item!r} has an empty name")
        if type_name is not None:
            try:
                out[name] = from_typed(name, {"value": raw, "type": type_name})
            except BpmError as exc:
                fail(f"{what} {item!r}: {exc}")
            continue
        try:
            out[name] = json.loads(raw)
        except ValueError:
            out[name] = raw
    return out


def import_failed(exc: ImportError, what: str) -> str:
    """The line for a module ``what`` that could not be imported: the extra to install
    when a module of one is missing, else the import error."""
    from bpm.extras import missing_extra

    error = missing_extra(exc, what)
    return str(error) if error is not None else f"cannot import {what}: {exc}"


def import_handlers(modules: str | None) -> None:
    """Import comma-separated handler modules so their ``@service_task`` run."""
    import importlib

    # Like `celery -A`, resolve handler modules from the current directory first.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    for name in filter(None, (m.strip() for m in (modules or "").split(","))):
        try:
            importlib.import_module(name)
        except ImportError as exc:
            fail(import_failed(exc, f"handler module '{name}'"))


def main() -> None:
    from bpm import structured_logs

    try:
        structured_logs.configure_from_env()  # BPM_LOG_FORMAT=json: JSON lines on stderr
    except BpmError as exc:
        from rich.markup import escape

        err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
        raise SystemExit(2) from None
    app()


def id_column(header: str, rows: Sequence[Any], attr: str = "id") -> Column:
    """A table column of ids that is never cut short: as wide as its longest id (the other
    columns wrap instead)."""
    longest = max((len(str(getattr(r, attr) or "")) for r in rows), default=len(header))
    return Column(header, no_wrap=True, min_width=max(longest, len(header)))


def print_rows(
    rows: Sequence[R],
    *,
    as_json: bool,
    json_of: Callable[[R], dict[str, Any]],
    columns: Sequence[str | Column],
    cells: Callable[[R], Sequence[str]],
    empty: str | None = None,
) -> None:
    """A list command's output: with ``--json`` each row's ``json_of`` as one JSON list
    (``[]`` when there is none); else a table of each row's ``cells`` under ``columns``, or
    the line ``empty`` when there are no rows and it is given."""
    if as_json:
        print_json([json_of(row) for row in rows])
        return
    if not rows and empty is not None:
        console.print(empty)
        return
    table = Table(*columns, header_style="bold")
    for row in rows:
        table.add_row(*cells(row))
    print_table(table)


def print_table(table: Table) -> None:
    """Print ``table`` at the console's width, or wider when its id columns need it: a
    narrow terminal then wraps the lines, and an id is never cut to ``9739b634-7…``."""
    for column in table.columns:
        if not column.no_wrap:
            column.overflow = "fold"  # a narrow column breaks its words, never cuts them
    needed = 1 + sum(3 + (c.min_width or 0 if c.no_wrap else 6) for c in table.columns)
    width = console.width
    if needed <= width:
        console.print(table)
        return
    console.width = needed
    try:
        console.print(table)
    finally:
        console.width = width
