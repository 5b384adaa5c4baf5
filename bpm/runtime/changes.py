"""The bookkeeping a transaction keeps per kind of record (:class:`Changes`) and the
reader of records it needs on first use (:class:`Loader`): shared by
:mod:`bpm.runtime.work` and :mod:`bpm.runtime.work_scopes`, below both."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from bpm.runtime.records import (
    Compensable,
    ExternalTask,
    Incident,
    Scope,
    Subscription,
    Timer,
    UserTask,
)

__all__ = ["Changes", "Item", "Loader"]

Item = TypeVar("Item", ExternalTask, Timer, UserTask, Incident, Scope, Subscription, Compensable)


class Loader(Protocol):
    """Reads, under the instance lock, the records a transaction needs on first use."""

    def scope(self, scope_id: str) -> Scope | None: ...

    def items(self, kind: type[Item], instance_id: str, *, token_id: str) -> list[Item]:
        """Every record of ``kind`` of the instance that belongs to ``token_id``."""
        ...

    def item(self, kind: type[Item], item_id: str) -> Item | None: ...

    def compensables(self, instance_id: str) -> list[Compensable]:
        """Every compensable record of the instance that is not compensated yet."""
        ...

    def last_compensable_seq(self, instance_id: str) -> int:
        """The highest ``seq`` of the instance's compensable records (0: none)."""
        ...


@dataclass
class Changes:
    """Records of one kind: those this transaction loaded or created, and which changed."""

    records: dict[str, Any] = field(default_factory=dict)
    new: list[str] = field(default_factory=list)
    dirty: set[str] = field(default_factory=set)

    def put(self, record_id: str, record: Any) -> None:
        self.records[record_id] = record
        if record_id not in self.new:
            self.dirty.add(record_id)

    def written(self) -> tuple[list[Any], list[Any]]:
        """(records to insert, records to update)."""
        return [self.records[i] for i in self.new], [self.records[i] for i in self.dirty]
