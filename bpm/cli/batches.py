"""``bpm batches``: list batches, show one's progress and failures, suspend, resume and
delete it, or apply its chunks in this process (issue 22, item 8)."""

from __future__ import annotations

import getpass
from typing import Annotated, Any

import typer

from bpm.cli.app import (
    DbOpt,
    JsonOpt,
    app,
    console,
    id_column,
    open_engine,
    print_json,
    print_rows,
    user_errors,
)

batches_app = typer.Typer(
    help="Batches: one operator action on many instances, applied in chunks by the workers.",
    invoke_without_command=True,
)
app.add_typer(batches_app, name="batches")

IdArg = Annotated[str, typer.Argument(help="The batch id.")]


def _author() -> str:
    return f"cli:{getpass.getuser()}"


def _row(b: Any) -> dict[str, Any]:
    return {
        "id": b.id,
        "type": b.type,
        "state": b.state,
        "total_items": b.total_items,
        "completed_items": b.completed_items,
        "failed_items": b.failed_items,
        "total_jobs": b.total_jobs,
        "completed_jobs": b.completed_jobs,
        "failed_jobs": b.failed_jobs,
        "chunk_size": b.chunk_size,
        "running_jobs": b.running_jobs,
        "created_by": b.created_by,
        "annotation": b.annotation,
        "created_at": b.created_at,
        "ended_at": b.ended_at,
    }


def progress(b: Any) -> str:
    """``applied/total items (failed), done/total chunks``: what a batch has done."""
    failed = f", {b.failed_items} failed" if b.failed_items else ""
    return (
        f"{b.completed_items}/{b.total_items} items{failed}; "
        f"{b.completed_jobs}/{b.total_jobs} chunks"
    )


@batches_app.callback()
def list_batches(
    ctx: typer.Context,
    every: Annotated[
        bool, typer.Option("--all", help="Ended batches too (their history).")
    ] = False,
    limit: Annotated[int, typer.Option("--limit", min=1)] = 50,
    as_json: JsonOpt = False,
    db: DbOpt = None,
) -> None:
    """List running batches (``--all``: ended ones too), oldest first."""
    if ctx.invoked_subcommand is not None:
        return
    from bpm.store.batches import BatchQuery

    with user_errors():
        rows = open_engine(db).batches.query(
            BatchQuery(ended=None if every else False), limit=limit
        )
        print_rows(
            rows,
            as_json=as_json,
            json_of=_row,
            columns=(id_column("id", rows), "type", "state", "items", "failed", "chunks", "by"),
            cells=lambda b: (
                b.id, b.type, b.state, f"{b.completed_items}/{b.total_items}",
                str(b.failed_items), f"{b.completed_jobs}/{b.total_jobs}", b.created_by or "",
            ),
            empty="no batches" + ("" if every else " running (--all: ended ones too)"),
        )  # fmt: skip


@batches_app.command("show")
def show(batch_id: IdArg, as_json: JsonOpt = False, db: DbOpt = None) -> None:
    """A batch's progress, its chunks, and every failed item with its reason."""
    with user_errors():
        engine = open_engine(db)
        b = engine.batches.get(batch_id)
        chunks = engine.batches.chunks(batch_id)
        failures = engine.batches.failures(batch_id)
        if as_json:
            print_json({
                **_row(b),
                "chunks": [
                    {"seq": c.seq, "state": c.state, "attempts": c.attempts, "items": len(c.items),
                     "lease_owner": c.lease_owner, "error": c.error}
                    for c in chunks
                ],
                "failures": [{"item": f.item, "reason": f.reason, "chunk": f.chunk}
                             for f in failures],
            })  # fmt: skip
            return
        console.print(f"[bold]{b.id}[/] {b.type}: {b.state}", highlight=False)
        console.print(f"  {progress(b)} (chunks of {b.chunk_size})", highlight=False)
        console.print(f"  created {b.created_at.isoformat(timespec='seconds')} by "
                      f"{b.created_by or '?'}", highlight=False)  # fmt: skip
        if b.annotation:
            console.print(f"  annotation: {b.annotation}", highlight=False, markup=False)
        if b.ended_at is not None:
            console.print(f"  ended {b.ended_at.isoformat(timespec='seconds')}", highlight=False)
        states: dict[str, int] = {}
        for c in chunks:
            states[c.state] = states.get(c.state, 0) + 1
        if states:
            console.print("  chunks: " + ", ".join(f"{n} {s}" for s, n in sorted(states.items())),
                          highlight=False)  # fmt: skip
        for c in chunks:
            if c.error:
                console.print(f"  chunk {c.seq} failed {c.attempts}x: {c.error}",
                              highlight=False, markup=False)  # fmt: skip
        for f in failures:
            console.print(f"  failed {f.item} (chunk {f.chunk}): {f.reason}",
                          highlight=False, markup=False, soft_wrap=True)  # fmt: skip


@batches_app.command("suspend")
def suspend(batch_id: IdArg, db: DbOpt = None) -> None:
    """Suspend a running batch: no chunk of it is claimed until it is resumed."""
    with user_errors():
        b = open_engine(db).batches.suspend(batch_id, by=_author())
        console.print(f"{b.id}: {b.state}", highlight=False)


@batches_app.command("resume")
def resume(batch_id: IdArg, db: DbOpt = None) -> None:
    """Resume a suspended batch (its chunks are published again)."""
    with user_errors():
        b = open_engine(db).batches.resume(batch_id, by=_author())
        console.print(f"{b.id}: {b.state}", highlight=False)


@batches_app.command("delete")
def delete(
    batch_id: IdArg,
    cascade: Annotated[bool, typer.Option("--cascade", help="Its history too.")] = False,
    db: DbOpt = None,
) -> None:
    """Stop a running batch: the chunks not done are cancelled (what ran stays applied)."""
    with user_errors():
        engine = open_engine(db)
        engine.batches.delete(batch_id, cascade=cascade, by=_author())
        console.print(f"{batch_id}: deleted" + (" with its history" if cascade else ""),
                      highlight=False)  # fmt: skip


@batches_app.command("run")
def run(
    limit: Annotated[int, typer.Option("--limit", min=1, help="Chunks at most.")] = 1000,
    db: DbOpt = None,
) -> None:
    """Apply the chunks that are waiting, in this process (without workers: the embedded
    mode, or to help them); each chunk is claimed with a lease as a worker would."""
    with user_errors():
        engine = open_engine(db)
        done = engine.batches.run_ready(limit=limit)
        console.print(f"applied {done} items", highlight=False)
