"""``purge_history`` (the retention beat task) and the beat schedule."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from bpm import Engine, InstanceState, NotFound
from bpm.store import tables as t
from tests.e2e.processes import order_model


class ListDispatcher:
    def __init__(self) -> None:
        self.ready: list[str] = []

    def dispatch(self, token_ids: Sequence[str]) -> None:
        self.ready.extend(token_ids)


@pytest.fixture
def local_engine(pg_database_url: str) -> Engine:
    import tests.e2e.handlers  # noqa: F401  (registers the order handlers)

    eng = Engine(pg_database_url, dispatcher=ListDispatcher())
    eng.deploy(order_model())
    return eng


def run_all(engine: Engine) -> None:
    disp = engine.dispatcher
    assert isinstance(disp, ListDispatcher)
    while disp.ready:
        engine.run_token(disp.ready.pop(0))


def rows_of(engine: Engine, instance_id: str) -> dict[str, int]:
    """How many rows of each table belong to the instance."""
    counts = {}
    with engine.db.connect() as conn:
        for table in (t.history, t.token, t.scope):
            q = select(func.count()).select_from(table).where(table.c.instance_id == instance_id)
            counts[table.name] = conn.execute(q).scalar_one()
        pi = t.process_instance
        q = select(func.count()).select_from(pi).where(pi.c.id == instance_id)
        counts[pi.name] = conn.execute(q).scalar_one()
    return counts


def test_purge_deletes_only_instances_that_ended_before_the_cutoff(local_engine: Engine) -> None:
    ended = [local_engine.start("order", {"amount": 120}) for _ in range(3)]
    run_all(local_engine)
    live = local_engine.start("order", {"amount": 120})  # never run: stays active
    done = [local_engine.get_instance(i.id) for i in ended]
    assert all(i.state is InstanceState.COMPLETED and i.ended_at for i in done), [
        (i.state, i.ended_at, local_engine.history(i.id)[-3:]) for i in done
    ]
    last_end = max(i.ended_at for i in done if i.ended_at)
    assert all(n > 0 for n in rows_of(local_engine, done[0].id).values())

    keep = timedelta(days=30)
    assert local_engine.purge_history(keep, now=last_end + timedelta(days=29)) == 0
    assert local_engine.purge_history(keep, now=last_end + timedelta(days=31)) == 3
    for inst in done:
        assert set(rows_of(local_engine, inst.id).values()) == {0}
        with pytest.raises(NotFound):
            local_engine.history(inst.id)
    # The live instance, however old, is untouched.
    assert local_engine.purge_history(keep, now=last_end + timedelta(days=3650)) == 0
    assert local_engine.get_instance(live.id).state is InstanceState.ACTIVE
    assert local_engine.history(live.id)
    with pytest.raises(ValueError):
        local_engine.purge_history(timedelta(0))


def test_two_purges_at_once_delete_each_instance_once(local_engine: Engine) -> None:
    for _ in range(40):
        local_engine.start("order", {"amount": 50})  # ends at once (default flow)
    run_all(local_engine)
    later = local_engine.core.now() + timedelta(days=400)
    counts: list[int] = []
    barrier = threading.Barrier(2)

    def purge() -> None:
        barrier.wait(timeout=10)
        counts.append(local_engine.purge_history(timedelta(days=30), now=later))

    threads = [threading.Thread(target=purge) for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=30)
    assert sum(counts) == 40 and len(counts) == 2
    assert local_engine.instances() == []


def test_beat_reads_the_upkeep_intervals_and_the_retention(monkeypatch: pytest.MonkeyPatch) -> None:
    from bpm.contrib.celery.beat_tasks import retention
    from bpm.contrib.celery.maintenance import intervals
    from bpm.contrib.celery.schedule import beat_schedule

    found = intervals({"BPM_BEAT_REDISPATCH_SECONDS": "2", "BPM_BEAT_PURGE_SECONDS": "0"})
    assert found == {
        "reclaim": timedelta(seconds=5),
        "redispatch": timedelta(seconds=2),
        "purge": None,  # 0 disables
        "retention": timedelta(days=30),
        "batches": timedelta(seconds=5),
    }
    # The upkeep runs on beat's threads, not as tasks on the workers' queue.
    assert set(beat_schedule({})) == set()
    monkeypatch.setenv("BPM_HISTORY_RETENTION_DAYS", "0")
    assert retention() is None
    monkeypatch.setenv("BPM_HISTORY_RETENTION_DAYS", "7")
    assert retention() == timedelta(days=7)
