"""The registry of batch job types: what one item of a batch of each type does.

A batch (:mod:`bpm.engine.batches`) is one operator action on many items; its type says
what is done to each item. A type is registered once, at import of the module that
defines it::

    from bpm.engine.batch_types import BatchItem, BatchType, register

    def migrate_one(item: BatchItem) -> None:
        plan = item.params["plan"]            # the JSON the batch was created with
        item.engine.migrate(item.item, plan, by=item.created_by, now=item.now)

    register(BatchType("instance-migration", migrate_one, operation_type="Migrate"))

and a batch of it is created with ``engine.batches.create("instance-migration", ids,
{"plan": ...})``. ``run`` is called once per item, inside the chunk's transaction, in a
savepoint of its own: ``item.engine`` is an :class:`~bpm.engine.Engine` whose every
operation joins that transaction (one transaction per chunk, so a chunk is applied
exactly once, whatever happens to the worker or its message). Raise a
:class:`~bpm.errors.BpmError` (or any exception but a database error) to fail the item:
its savepoint is rolled back, the reason is kept (``engine.batches.failures(id)``) and
the other items of the chunk go on. A database error fails the chunk: it is offered
again.

``check`` (optional) validates and normalises the params when the batch is created,
before anything is written: raise :class:`~bpm.errors.InvalidOperation` to refuse the
batch (REST: 400, nothing created).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bpm.errors import InvalidOperation


@dataclass(frozen=True)
class BatchItem:
    """One item of a batch being applied (what :attr:`BatchType.run` gets)."""

    engine: Any
    """A :class:`bpm.engine.Engine` whose operations join the chunk's transaction (each
    item in a savepoint). Typed ``Any``: ``bpm.engine`` imports this module."""
    item: str
    """The item: an instance id, an external task id, an incident id (as the type says)."""
    params: Mapping[str, Any]
    """The JSON the batch was created with (after :attr:`BatchType.check`)."""
    batch_id: str
    created_by: str | None
    """Who created the batch: the author to write in the trail and the operation log."""
    annotation: str | None
    now: datetime
    """The chunk's clock: pass it on as ``now=``."""


@dataclass(frozen=True)
class BatchType:
    """A kind of batch job (Camunda's batch ``type``)."""

    name: str
    """Camunda's batch type (``instance-migration``, ``instance-modification``...)."""
    run: Callable[[BatchItem], None]
    """Apply one item (see the module docstring)."""
    operation_type: str
    """The operation log's ``operationType`` of the batch's creation (Camunda's name)."""
    entity_type: str = "ProcessInstance"
    """What the items are, in the operation log's ``entityType``."""
    check: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None
    """Validate and normalise the params at creation (raise InvalidOperation to refuse)."""


_TYPES: dict[str, BatchType] = {}


def register(kind: BatchType) -> BatchType:
    """Add a batch type (a second registration of a name replaces the first: a module
    reloaded in a test registers again)."""
    if not kind.name or len(kind.name) > 64:
        raise ValueError("a batch type needs a name of 1 to 64 characters")
    _TYPES[kind.name] = kind
    return kind


def get(name: str) -> BatchType:
    """The type called ``name``; :class:`InvalidOperation` naming the known ones."""
    found = _TYPES.get(name)
    if found is None:
        known = ", ".join(sorted(_TYPES)) or "none"
        raise InvalidOperation(f"unknown batch type '{name}'; known types: {known}")
    return found


def names() -> list[str]:
    """Every registered type's name, sorted."""
    return sorted(_TYPES)
