"""The typer application shared by every command module, and the error policy.

Bad input prints one line to stderr and exits with code 2; never a traceback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import typer
from rich.console import Console

from bpm.errors import BpmError

if TYPE_CHECKING:
    from bpm.engine import Engine

app = typer.Typer(
    name="bpm",
    help="A durable BPMN engine for Celery shops. Every command reads BPM_DATABASE_URL "
    "unless --db is given.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
db_app = typer.Typer(help="Database schema commands.", no_args_is_help=True)
app.add_typer(db_app, name="db")

console = Console()
err_console = Console(stderr=True)

DEFAULT_EMBEDDED_URL = "sqlite:///bpm.db"

F = TypeVar("F", bound=Callable[..., Any])


def database_url(db: str | None, *, embedded_default: bool = False) -> str:
    """``--db``, else ``BPM_DATABASE_URL``, else (embedded commands only) ``./bpm.db``."""
    url = db or os.environ.get("BPM_DATABASE_URL")
    if url:
        return url
    if embedded_default:
        return DEFAULT_EMBEDDED_URL
    fail("no database given: pass --db URL or set BPM_DATABASE_URL")
    raise AssertionError("unreachable")


def open_engine(
    db: str | None, *, embedded_default: bool = False, schema_required: bool = True
) -> Engine:
    """The engine of ``--db`` / ``BPM_DATABASE_URL``, with its schema checked.

    SQLite (the embedded mode) gets its schema created or upgraded on the spot; a
    PostgreSQL database without the current schema stops the command with one line
    saying to run ``bpm db upgrade`` (or, with ``schema_required=False``, says that line
    as a warning: a server starts and reports itself not ready until then).
    """
    from bpm.engine import Engine
    from bpm.store import migrate
    from bpm.store.db import is_sqlite

    engine = Engine(database_url(db, embedded_default=embedded_default))
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


def fail(message: str, code: int = 2) -> None:
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
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


def parse_vars(items: list[str] | None) -> dict[str, Any]:
    """``--var k=v``: v is read as JSON when it parses (120, true, "x", [1]), else a string."""
    import json

    out: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item:
            fail(f"--var {item!r} is not NAME=VALUE")
        name, raw = item.split("=", 1)
        if not name:
            fail(f"--var {item!r} has an empty name")
        try:
            out[name] = json.loads(raw)
        except ValueError:
            out[name] = raw
    return out


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
            fail(f"cannot import handler module '{name}': {exc}")


def main() -> None:
    from bpm import structured_logs

    try:
        structured_logs.configure_from_env()  # BPM_LOG_FORMAT=json: JSON lines on stderr
    except BpmError as exc:
        from rich.markup import escape

        err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
        raise SystemExit(2) from None
    app()
