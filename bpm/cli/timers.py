"""``bpm timers`` (the timer poller as a loop), ``bpm incidents`` and ``bpm retry``."""

from __future__ import annotations

import getpass
import signal
import threading
import time
from datetime import UTC, datetime
from types import FrameType
from typing import Annotated

import typer

from bpm.cli.app import (
    DbOpt,
    JsonOpt,
    app,
    console,
    err_console,
    id_column,
    open_engine,
    print_rows,
    resolve_id,
    user_errors,
)
from bpm.dispatch import NullDispatcher


def sleep_for(
    wakeup: datetime | None, now: datetime, *, longest: float, shortest: float = 0.05
) -> float:
    """Seconds the loop may sleep: until ``wakeup``, within ``[shortest, longest]``.

    ``longest`` bounds the sleep because another process may create a timer due sooner
    than the earliest one known now; ``shortest`` keeps a due timer whose instance is busy
    from turning the loop into a spin.
    """
    if wakeup is None:
        return longest
    return min(max((wakeup - now).total_seconds(), shortest), longest)


@app.command("timers")
def timers_loop(
    once: Annotated[bool, typer.Option("--once", help="Fire what is due now, then exit.")] = False,
    max_sleep: Annotated[
        float, typer.Option("--max-sleep", min=0.01, help="Longest sleep between polls (s).")
    ] = 1.0,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Timers per poll.")] = 500,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing.")] = False,
    db: DbOpt = None,
) -> None:
    """Fire due timers in a loop that sleeps until the next one is due.

    Safe to run next to Celery beat or another `bpm timers`: each timer fires once.
    Stops cleanly on Ctrl-C or SIGTERM (the current poll finishes first).
    """
    with user_errors():
        engine = open_engine(db)
        stop = threading.Event()

        def on_signal(signum: int, _frame: FrameType | None) -> None:
            stop.set()

        previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        total = 0
        try:
            if not quiet and not once:
                console.print(
                    f"firing timers (polling at most every {max_sleep:g}s); Ctrl-C to stop"
                )
            while not stop.is_set():
                started = time.monotonic()
                fired = engine.fire_due_timers(limit=limit)
                fired += engine.fire_due_schedules()  # timer start events
                total += fired
                if fired and not quiet:
                    console.print(
                        f"{datetime.now(UTC).isoformat(timespec='milliseconds')} "
                        f"fired {fired} (total {total}) in "
                        f"{(time.monotonic() - started) * 1000:.0f} ms"
                    )
                if once:
                    break
                if fired >= limit:
                    continue  # more may be due right now
                stop.wait(sleep_for(engine.next_wakeup(), engine.core.now(), longest=max_sleep))
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            engine.close()
        if not quiet:
            console.print(f"fired {total} timer(s)")


@app.command("incidents")
def list_incidents(
    instance_id: Annotated[
        str | None, typer.Option("--instance", help="One instance (its id or a unique prefix).")
    ] = None,
    as_json: JsonOpt = False,
    db: DbOpt = None,
) -> None:
    """List open incidents: steps that ran out of attempts. Retry one with `bpm retry ID`."""
    with user_errors():
        engine = open_engine(db)
        if instance_id is not None:
            instance_id = resolve_id(engine, "instance", instance_id)
        found = engine.incidents(instance_id)
        print_rows(
            found,
            as_json=as_json,
            json_of=lambda inc: {
                "id": inc.id,
                "instance_id": inc.instance_id,
                "node_id": inc.node_id,
                "type": inc.type,
                "state": inc.state,
                "created_at": inc.created_at,
                "message": inc.message,
            },
            columns=(
                id_column("incident", found),
                id_column("instance", found, "instance_id"),
                "node",
                "type",
                "since",
                "message",
            ),
            cells=lambda inc: (
                inc.id,
                inc.instance_id,
                inc.node_id,
                inc.type,
                inc.created_at.isoformat(timespec="seconds"),
                inc.message or "",
            ),
            empty="no open incidents",
        )


@app.command("retry")
def retry(
    incident_id: Annotated[
        str, typer.Argument(help="The incident id, or a unique prefix (see `bpm incidents`).")
    ],
    db: DbOpt = None,
) -> None:
    """Run an incident's failed step again, with a fresh set of attempts."""
    with user_errors():
        engine = open_engine(db)
        inc = engine.retry_incident(
            resolve_id(engine, "incident", incident_id), by=f"cli:{getpass.getuser()}"
        )
        console.print(
            f"retrying {inc.node_id} of instance {inc.instance_id} (incident {inc.id} {inc.state})",
            highlight=False,
            soft_wrap=True,
        )
        from bpm.store.db import is_sqlite

        if is_sqlite(engine.db):
            err_console.print(
                "the step is ready again: `bpm dev` (same --db) runs it in this machine's "
                "embedded loop",
                highlight=False,
                soft_wrap=True,
            )
        elif isinstance(engine.dispatcher, NullDispatcher):
            err_console.print(
                "the step is ready again: no broker is configured (BPM_BROKER_URL), so a "
                "Celery worker runs it once beat's sweeper publishes it (within seconds)",
                highlight=False,
            )
