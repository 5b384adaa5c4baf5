"""Batches (issue 22, item 5): one operator action on many items, run in chunks.

Creating a batch writes it, its items cut into chunks (``chunk_size`` each, Camunda's
``invocationsPerBatchJob``) and one operation-log entry, in one transaction; the chunks
are then published to the workers (``bpm.run_batch_chunk`` on Celery; the embedded loop
runs them itself). A chunk is:

1. **claimed**: one conditional UPDATE makes the worker its lease owner for one attempt
   (only a ready chunk, or one whose lease expired, of an active batch);
2. **applied in one transaction**: every item in a savepoint of its own, in item order,
   through the batch type's ``run`` (:mod:`bpm.engine.batch_types`); an item that fails
   is rolled back alone and its reason kept;
3. **finished** in that same transaction by an UPDATE that matches only while the attempt
   still holds the chunk; if it was taken over (the lease expired and another worker
   claimed it) nothing of this attempt commits.

So a message delivered twice finds the chunk held or done and does nothing; a worker
killed mid-chunk commits nothing, and once its lease expires beat's sweeper publishes the
chunk again (:meth:`Batches.redispatch_stalled`); a lost message is published again the
same way. The lease is the only judge.

A batch's row stays when it ended (completed with its last chunk, or deleted): the
running ones are ``/batch``, all of them ``/history/batch``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError

from bpm.dispatch import chunk_dispatcher
from bpm.engine import batch_types, oplog
from bpm.engine.batch_types import BatchItem
from bpm.engine.core import EngineCore, default_worker_id
from bpm.errors import BpmError, InvalidOperation, NotFound
from bpm.runtime.work import new_id
from bpm.store import batches as store
from bpm.store.batches import BatchQuery, BatchRecord, ChunkRecord

log = logging.getLogger("bpm.batches")

#: Items one batch may hold, and the bounds of a chunk.
MAX_ITEMS = 100_000
MAX_CHUNK_SIZE = 1_000
#: Camunda's ``batchJobsPerSeed``: we create every chunk at once, this is reported only.
JOBS_PER_SEED = 100

Batch = BatchRecord
"""A batch: ``total_jobs`` chunks of ``chunk_size`` items; ``completed_jobs`` of them done,
``failed_jobs`` of those with at least one failed item; ``state`` ``active``,
``suspended``, ``completed`` or ``deleted``; ``ended_at`` once it ended."""


@dataclass(frozen=True)
class Failure:
    """An item of a batch that failed, and why."""

    item: str
    reason: str
    chunk: int


@dataclass(frozen=True)
class Statistics:
    """A running batch with Camunda's ``remainingJobs``, ``completedJobs``, ``failedJobs``."""

    batch: Batch
    remaining_jobs: int
    completed_jobs: int
    failed_jobs: int


class ChunkTransactions:
    """Every engine operation of a chunk in a savepoint of the chunk's transaction; what
    they would do after commit waits for the chunk's commit (and is dropped with it)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.later: list[Callable[[], None]] = []

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        with self.conn.begin_nested():
            yield self.conn

    def after_commit(self, fn: Callable[[], None]) -> None:
        self.later.append(fn)


class Batches:
    """``engine.batches``: create, read, suspend, resume, delete and run batches."""

    def __init__(self, core: EngineCore, bind: Callable[[EngineCore], Any]) -> None:
        """``bind``: makes the :class:`~bpm.engine.Engine` a chunk's items run on."""
        self.core = core
        self._bind = bind

    # -- creating ------------------------------------------------------------------------
    def create(
        self,
        type: str,
        items: Sequence[str],
        params: Mapping[str, Any] | None = None,
        *,
        chunk_size: int | None = None,
        by: str | None = None,
        annotation: str | None = None,
        tenant_id: str | None = None,
        now: datetime | None = None,
    ) -> Batch:
        """A batch of ``type`` (:mod:`bpm.engine.batch_types`) over ``items`` (ids, each
        applied once, duplicates dropped), with ``params`` (JSON) for every item.
        Refused (:class:`InvalidOperation`, nothing written) for an unknown type, no
        items, too many, or params the type's ``check`` refuses."""
        kind = batch_types.get(type)
        ids = list(dict.fromkeys(items))
        if not ids:
            raise InvalidOperation("a batch needs at least one item")
        if not all(isinstance(i, str) and i and len(i) <= 300 for i in ids):
            raise InvalidOperation("the items of a batch are ids: non-empty strings")
        if len(ids) > MAX_ITEMS:
            raise InvalidOperation(f"{len(ids)} items in one batch; give at most {MAX_ITEMS}")
        size = self.core.config.batch_chunk_size if chunk_size is None else chunk_size
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_CHUNK_SIZE:
            raise InvalidOperation(f"the chunk size must be an integer from 1 to {MAX_CHUNK_SIZE}")
        if annotation is not None and len(annotation) > 4000:
            raise InvalidOperation("the annotation is over 4000 characters")
        given = dict(params or {})
        checked = dict(kind.check(given)) if kind.check is not None else given
        at = self.core.now(now)
        batch_id = new_id()
        cuts = [ids[i : i + size] for i in range(0, len(ids), size)]
        publisher = chunk_dispatcher(self.core.dispatcher)
        sent = at if publisher is not None else None
        chunks: list[dict[str, Any]] = [
            {
                "id": new_id(),
                "batch_id": batch_id,
                "seq": seq,
                "items": cut,
                "state": store.READY,
                "attempts": 0,
                "published_at": sent,
            }
            for seq, cut in enumerate(cuts)
        ]
        row = {
            "id": batch_id,
            "type": kind.name,
            "state": store.ACTIVE,
            "params": checked,
            "total_items": len(ids),
            "total_jobs": len(chunks),
            "chunk_size": size,
            "jobs_per_seed": JOBS_PER_SEED,
            "completed_jobs": 0,
            "failed_jobs": 0,
            "completed_items": 0,
            "failed_items": 0,
            "created_by": by or oplog.DEFAULT_AUTHOR,
            "annotation": annotation,
            "tenant_id": tenant_id,
            "created_at": at,
        }
        with self.core.db.begin() as conn:
            store.insert_batch(conn, row, chunks)
            oplog.write(
                conn,
                at,
                kind.operation_type,
                kind.entity_type,
                by=by,
                annotation=annotation,
                changes=(("nrOfInstances", None, str(len(ids))), ("async", None, "true")),
                batch_id=batch_id,
            )
        if publisher is not None:
            self._publish(publisher, [str(c["id"]) for c in chunks])
        return self.get(batch_id)

    def _publish(self, publisher: Any, chunk_ids: list[str]) -> None:
        try:
            publisher.dispatch_chunks(chunk_ids)
        except Exception:  # the broker is outside our transaction: the sweeper publishes
            log.warning("publishing %d batch chunks failed; the sweeper will", len(chunk_ids))

    # -- reading -------------------------------------------------------------------------
    def get(self, batch_id: str) -> Batch:
        """A batch, running or ended; :class:`NotFound` when there is none."""
        with self.core.db.connect() as conn:
            found = store.get(conn, batch_id)
        if found is None:
            raise NotFound(f"batch {batch_id} does not exist")
        return found

    def query(
        self, query: BatchQuery | None = None, *, offset: int = 0, limit: int | None = None
    ) -> list[Batch]:
        """Batches matching ``query`` (by default the running ones), oldest first."""
        with self.core.db.connect() as conn:
            return store.batches(conn, query or BatchQuery(), offset=offset, limit=limit)

    def count(self, query: BatchQuery | None = None) -> int:
        with self.core.db.connect() as conn:
            return store.count(conn, query or BatchQuery())

    def statistics(
        self, query: BatchQuery | None = None, *, offset: int = 0, limit: int | None = None
    ) -> list[Statistics]:
        """Running batches with their progress in chunks."""
        return [
            Statistics(
                b, b.total_jobs - b.completed_jobs, b.completed_jobs - b.failed_jobs, b.failed_jobs
            )
            for b in self.query(query, offset=offset, limit=limit)
        ]

    def chunks(self, batch_id: str) -> list[ChunkRecord]:
        """A batch's chunks in order (state, attempts, lease, failures of each)."""
        self.get(batch_id)
        with self.core.db.connect() as conn:
            return store.chunks(conn, batch_id)

    def failures(self, batch_id: str) -> list[Failure]:
        """Every item of the batch that failed, with its reason, in chunk order."""
        self.get(batch_id)
        with self.core.db.connect() as conn:
            return [
                Failure(item, reason, seq) for seq, item, reason in store.failures(conn, batch_id)
            ]

    # -- operating -----------------------------------------------------------------------
    def _running(self, conn: Connection, batch_id: str) -> Batch:
        found = store.get(conn, batch_id, for_update=True)
        if found is None:
            raise NotFound(f"batch {batch_id} does not exist")
        if found.state not in store.RUNNING_STATES:
            raise NotFound(f"batch {batch_id} is not running: it is {found.state}")
        return found

    def suspend(
        self, batch_id: str, *, by: str | None = None, now: datetime | None = None
    ) -> Batch:
        """No chunk of the batch is claimed until :meth:`resume` (one running now still
        finishes). Suspending a suspended batch changes nothing."""
        return self._set_suspended(batch_id, True, by, now)

    def resume(self, batch_id: str, *, by: str | None = None, now: datetime | None = None) -> Batch:
        """Let the batch's chunks be claimed again (published at once)."""
        return self._set_suspended(batch_id, False, by, now)

    def _set_suspended(
        self, batch_id: str, suspended: bool, by: str | None, now: datetime | None
    ) -> Batch:
        at = self.core.now(now)
        want = store.SUSPENDED if suspended else store.ACTIVE
        with self.core.db.begin() as conn:
            found = self._running(conn, batch_id)
            if found.state == want:
                return found
            store.set_state(conn, batch_id, want)
            oplog.write(
                conn,
                at,
                "SuspendBatch" if suspended else "ActivateBatch",
                "Batch",
                by=by,
                changes=(("suspensionState", None, "suspended" if suspended else "active"),),
                batch_id=batch_id,
            )
            stalled = [] if suspended else [c.id for c in store.chunks(conn, batch_id)
                                            if c.state == store.READY]  # fmt: skip
        publisher = chunk_dispatcher(self.core.dispatcher)
        if stalled and publisher is not None:
            self._publish(publisher, stalled)
        return self.get(batch_id)

    def delete(
        self,
        batch_id: str,
        *,
        cascade: bool = False,
        by: str | None = None,
        now: datetime | None = None,
    ) -> None:
        """Stop a running batch: its chunks not done are cancelled (one running now can no
        longer commit). Its history stays (``deleted``) unless ``cascade``. What its done
        chunks applied stays applied."""
        at = self.core.now(now)
        with self.core.db.begin() as conn:
            self._running(conn, batch_id)
            oplog.write(conn, at, "Delete", "Batch", by=by, batch_id=batch_id,
                        changes=(("cascadeToHistory", None, str(cascade).lower()),))  # fmt: skip
            if cascade:
                store.remove(conn, batch_id)
            else:
                store.end(conn, batch_id, store.DELETED, at)

    def delete_history(
        self, batch_id: str, *, by: str | None = None, now: datetime | None = None
    ) -> None:
        """Delete an ended batch's history (a running one: :class:`InvalidOperation`)."""
        at = self.core.now(now)
        with self.core.db.begin() as conn:
            found = store.get(conn, batch_id, for_update=True)
            if found is None:
                raise NotFound(f"historic batch {batch_id} does not exist")
            if found.ended_at is None:
                raise InvalidOperation(
                    f"batch {batch_id} is still running; delete it first (DELETE /batch/{{id}})"
                )
            store.remove(conn, batch_id)
            oplog.write(conn, at, "Delete", "Batch", by=by, batch_id=batch_id,
                        changes=(("history", None, "true"),))  # fmt: skip

    # -- running -------------------------------------------------------------------------
    def run_chunk(
        self, chunk_id: str, *, worker_id: str | None = None, now: datetime | None = None
    ) -> int:
        """Claim and apply one chunk (module docstring); returns how many items it applied
        (0: the chunk was not ours to run: done, held, cancelled or its batch suspended)."""
        owner = worker_id or default_worker_id()
        at = self.core.now(now)
        with self.core.db.begin() as conn:
            chunk = store.claim(conn, chunk_id, owner, at, self.core.config.batch_lease)
        if chunk is None:
            return 0
        try:
            return self._apply(chunk, owner, at)
        except _Lost:
            self.core.stats.finishes_dropped += 1
            log.warning("batch chunk %s: lease lost; this attempt applied nothing", chunk_id)
            return 0
        except Exception as exc:
            log.warning("batch chunk %s failed (%s); it is offered again", chunk_id, exc)
            with self.core.db.begin() as conn:
                store.give_up(conn, chunk_id, owner, chunk.attempts, f"{type(exc).__name__}: {exc}")
            raise

    def _apply(self, chunk: ChunkRecord, owner: str, at: datetime) -> int:
        txs: ChunkTransactions
        with self.core.db.begin() as conn:
            batch = store.get(conn, chunk.batch_id)
            if batch is None:
                raise _Lost()
            kind = batch_types.get(batch.type)
            txs = ChunkTransactions(conn)
            engine = self._bind(replace(self.core, transactions=txs))
            failures: dict[str, str] = {}
            # in id order: the instance locks the chunk holds till its commit are taken
            # in one order by every chunk, so two chunks never wait for each other
            with oplog.in_batch(batch.id):
                for item in sorted(chunk.items):
                    reason = _apply_one(conn, kind.run, BatchItem(
                        engine, item, batch.params, batch.id, batch.created_by,
                        batch.annotation, at,
                    ))  # fmt: skip
                    if reason is not None:
                        failures[item] = reason[:2000]
            if not store.finish(conn, chunk.id, owner, chunk.attempts, at, failures):
                raise _Lost()
            store.count_done(conn, batch.id, len(chunk.items) - len(failures), len(failures), at)
        for fn in txs.later:  # what the items' operations publish after their commit
            fn()
        return len(chunk.items) - len(failures)

    def apply_now(
        self,
        type: str,
        items: Sequence[str],
        params: Mapping[str, Any] | None = None,
        *,
        by: str | None = None,
        annotation: str | None = None,
        now: datetime | None = None,
    ) -> int:
        """Apply ``type`` to every item at once, in ONE transaction, without a batch: the
        first item that fails raises :class:`InvalidOperation` naming it, and nothing is
        written (Camunda's synchronous many-instance calls). Returns how many."""
        kind = batch_types.get(type)
        ids = list(dict.fromkeys(items))
        if not ids:
            raise InvalidOperation("give at least one item")
        if len(ids) > MAX_CHUNK_SIZE:
            raise InvalidOperation(
                f"{len(ids)} items at once; give at most {MAX_CHUNK_SIZE}, or use a batch"
            )
        given = dict(params or {})
        checked = dict(kind.check(given)) if kind.check is not None else given
        at = self.core.now(now)
        with self.core.db.begin() as conn:
            txs = ChunkTransactions(conn)
            engine = self._bind(replace(self.core, transactions=txs))
            for item in sorted(ids):
                reason = _apply_one(
                    conn, kind.run, BatchItem(engine, item, checked, "", by, annotation, at)
                )
                if reason is not None:
                    raise InvalidOperation(f"{item}: {reason}")
        for fn in txs.later:
            fn()
        return len(ids)

    def claimable(self, *, now: datetime | None = None, limit: int = 100) -> list[str]:
        """Chunks that could be claimed now (ready, or under an expired lease)."""
        with self.core.db.connect() as conn:
            return store.claimable(conn, self.core.now(now), limit)

    def run_ready(
        self, *, worker_id: str | None = None, now: datetime | None = None, limit: int = 10
    ) -> int:
        """Run up to ``limit`` claimable chunks in this thread (the embedded loop, tests);
        returns how many items were applied."""
        done = 0
        for chunk_id in self.claimable(now=now, limit=limit):
            try:
                done += self.run_chunk(chunk_id, worker_id=worker_id, now=now)
            except Exception:  # kept on the chunk; the next round offers it again
                continue
        return done

    def redispatch_stalled(self, *, now: datetime | None = None, limit: int = 500) -> int:
        """Publish again the chunks whose message was lost or whose worker died (lease
        expired), at most once per ``batch_redispatch_after``; two sweepers split them
        (SKIP LOCKED). Returns how many were published (0 without a broker)."""
        publisher = chunk_dispatcher(self.core.dispatcher)
        if publisher is None:
            return 0
        at = self.core.now(now)
        with self.core.db.begin() as conn:
            ids = store.stalled(conn, at, self.core.config.batch_redispatch_after, limit)
            store.mark_published(conn, ids, at)
        if ids:
            self._publish(publisher, ids)
        return len(ids)


class _Lost(Exception):
    """This attempt no longer holds its chunk: roll everything back."""


def _apply_one(conn: Connection, run: Callable[[BatchItem], None], item: BatchItem) -> str | None:
    """Apply one item in a savepoint; the reason it failed, or None."""
    savepoint = conn.begin_nested()
    try:
        run(item)
    except DBAPIError:
        savepoint.rollback()
        raise  # the database, not the item: the whole chunk is offered again
    except BpmError as exc:
        savepoint.rollback()
        return str(exc) or type(exc).__name__
    except Exception as exc:  # a bug in a type's run fails its item, not every chunk
        savepoint.rollback()
        return f"{type(exc).__name__}: {exc}"
    savepoint.commit()
    return None
