"""Writing the operation log (Camunda's user operation log) from engine operations.

Every operator action (modification, batch, variable change, suspend and activate,
retry, terminate, unlock) writes its entries here, in its own transaction, with its
author: the API key or user over REST, the CLI's user, or the Python caller's ``by``
(``python`` when none is given). An action applied by a batch names the batch
(``batch_id``): the chunk runner sets :data:`CURRENT_BATCH` while it applies the items.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime

from sqlalchemy import Connection

from bpm.runtime.records import Instance
from bpm.runtime.work import new_id
from bpm.store import operation_log as store

#: The author of an action whose caller gave none.
DEFAULT_AUTHOR = "python"
#: The batch whose items are being applied in this context (None: no batch).
CURRENT_BATCH: ContextVar[str | None] = ContextVar("bpm_current_batch", default=None)

Change = tuple[str | None, str | None, str | None]
"""(property, old value, new value) of one entry."""


@contextmanager
def in_batch(batch_id: str) -> Iterator[None]:
    """Entries written inside the block name ``batch_id``."""
    token = CURRENT_BATCH.set(batch_id)
    try:
        yield
    finally:
        CURRENT_BATCH.reset(token)


def write(
    conn: Connection,
    at: datetime,
    operation_type: str,
    entity_type: str,
    *,
    by: str | None,
    instance: Instance | None = None,
    annotation: str | None = None,
    changes: Sequence[Change] = ((None, None, None),),
    category: str = "Operator",
    batch_id: str | None = None,
) -> str:
    """Write one operation (one entry per change, sharing an ``operation_id``); returns
    the operation id."""
    operation_id = new_id()
    batch = batch_id if batch_id is not None else CURRENT_BATCH.get()
    store.append(
        conn,
        [
            store.OperationLogEntry(
                id=new_id(),
                operation_id=operation_id,
                operation_type=operation_type,
                entity_type=entity_type,
                category=category,
                at=at,
                user_id=by or DEFAULT_AUTHOR,
                instance_id=instance.id if instance is not None else None,
                definition_id=instance.definition_id if instance is not None else None,
                definition_key=instance.definition_key if instance is not None else None,
                property=prop,
                org_value=old,
                new_value=new,
                annotation=annotation,
                batch_id=batch,
            )
            for prop, old, new in changes
        ],
    )
    return operation_id
