"""The unit of work: every engine operation that changes instances goes through it.

    with unit_of_work(core, now) as unit:
        work = unit.work(instance_id)        # lock the instance row, load its live tokens
        ...                                  # change it: InstanceWork / Walker, pure
    # flushed and committed here; then the Ready inline steps are published

It owns the order of things: the instance locks first (several instances: in id order, in
one statement), then the reads, the runtime's decisions in memory, one write per table, the
commit, and only after the commit the publishing of Ready steps. An exception anywhere
before the commit rolls everything back and publishes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime

from sqlalchemy import Connection

from bpm.engine.core import EngineCore
from bpm.errors import NotFound
from bpm.events import ended_by
from bpm.model.process import ProcessModel
from bpm.runtime.behaviours import BEHAVIOURS
from bpm.runtime.records import Instance
from bpm.runtime.walker import Walker
from bpm.runtime.work import InstanceWork, Item
from bpm.store import work as work_store


class Unit:
    """One transaction on one or more instances (see the module docstring)."""

    def __init__(self, core: EngineCore, conn: Connection, now: datetime) -> None:
        self.core = core
        self.conn = conn
        self.now = now
        self.works: dict[str, InstanceWork] = {}
        self.dispatch_after: list[str] = []
        self._locked = False

    def lock(
        self, instance_ids: Sequence[str], *, skip_locked: bool = False
    ) -> dict[str, InstanceWork]:
        """Lock and load the instances, all in one go (a second call would break the lock
        order). Missing instances (and with ``skip_locked`` busy ones) are missing from the
        result."""
        if self._locked:
            raise RuntimeError("a unit of work locks its instances once, all together")
        self._locked = True
        self.works.update(
            work_store.load(
                self.conn,
                instance_ids,
                self.now,
                max_variable_bytes=self.core.config.max_variable_bytes,
                skip_locked=skip_locked,
            )
        )
        return {i: self.works[i] for i in instance_ids if i in self.works}

    def drop(self, instance_id: str) -> None:
        """Forget the in-memory changes of one instance (nothing of it is written)."""
        self.works.pop(instance_id, None)

    def work_of(self, kind: type[Item], item_id: str) -> InstanceWork | None:
        """Lock and load the instance that a work item (an external or user task, an
        incident) belongs to, found through the item in the same statement; None when the
        item does not exist."""
        if self._locked:
            raise RuntimeError("a unit of work locks its instances once, all together")
        self._locked = True
        found = work_store.load(
            self.conn,
            (),
            self.now,
            max_variable_bytes=self.core.config.max_variable_bytes,
            owner_of=(kind, item_id),
        )
        self.works.update(found)
        return next(iter(found.values()), None)

    def work(self, instance_id: str) -> InstanceWork:
        """Lock and load one instance; :class:`NotFound` when it does not exist."""
        found = self.lock([instance_id]).get(instance_id)
        if found is None:
            raise NotFound(f"process instance {instance_id} does not exist")
        return found

    def new(self, instance: Instance) -> InstanceWork:
        """The change set of an instance this transaction creates."""
        work = InstanceWork(
            instance=instance,
            tokens={},
            now=self.now,
            instance_new=True,
            max_variable_bytes=self.core.config.max_variable_bytes,
        )
        self.works[instance.id] = work
        return work

    def model(self, definition_id: str) -> ProcessModel:
        return self.core.model(self.conn, definition_id)

    def walker(self, work: InstanceWork) -> Walker:
        return Walker(work, self.model(work.instance.definition_id), BEHAVIOURS)

    def flush(self) -> None:
        work_store.flush(self.conn, [w for w in self.works.values() if w.changed])

    @property
    def ready(self) -> list[str]:
        """Ready inline steps to publish after the commit."""
        out = list(self.dispatch_after)
        for work in self.works.values():
            out.extend(work.to_dispatch)
        return out


@contextmanager
def unit_of_work(core: EngineCore, now: datetime | None = None) -> Iterator[Unit]:
    """One engine operation: lock, load, change, flush, commit, then publish."""
    at = core.now(now)
    with core.tx() as conn:
        unit = Unit(core, conn, at)
        yield unit
        unit.flush()
    if core.listeners:
        core.announce_ended([e for w in unit.works.values() if (e := ended_by(w)) is not None])
    core.dispatch(unit.ready)
