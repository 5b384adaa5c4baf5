"""Bounded memory in the engine (issue 13 item 5), on PostgreSQL and SQLite: the variables
of one update and of one instance are bounded in total, and timer cycles that repeat faster
than the configured minimum do not deploy. Every refusal changes nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bpm import Engine, EngineConfig
from bpm.builder import Process
from bpm.errors import DeploymentError, VariableError
from bpm.runtime.external import FetchRequest, TopicRequest
from tests.engine_helpers import table_dump

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
KB = 1024


@pytest.fixture
def config() -> EngineConfig:
    return EngineConfig(
        max_variable_bytes=4 * KB, max_update_bytes=10 * KB, max_instance_variable_bytes=16 * KB
    )


def one_task() -> Any:
    return (
        Process("lim")
        .start("s")
        .service_task("t", topic="lim")
        .end("e")
        .sequence("s", "t")
        .sequence("t", "e")
        .build()
    )


def _values(count: int, size: int, prefix: str = "v") -> dict[str, str]:
    return {f"{prefix}{i}": "x" * size for i in range(count)}


def test_one_update_is_bounded_in_total_and_refusing_it_changes_nothing(engine: Engine) -> None:
    engine.deploy(one_task())
    before = table_dump(engine)
    with pytest.raises(VariableError, match="together"):
        engine.start("lim", _values(4, 3 * KB), now=T0)  # each fits, together 12 KB > 10 KB
    assert table_dump(engine) == before
    iid = engine.start("lim", _values(3, 3 * KB), now=T0).id
    [task] = engine.fetch_and_lock(FetchRequest("w", 1, (TopicRequest("lim", 60_000),)), now=T0)
    before = table_dump(engine)
    with pytest.raises(VariableError, match="together"):
        engine.complete_external_task(task.id, "w", _values(4, 3 * KB, "c"), now=T0)
    assert table_dump(engine) == before
    assert engine.get_instance(iid).state.value == "active"


def test_an_instance_is_bounded_in_total_and_refusing_a_write_changes_nothing(
    engine: Engine,
) -> None:
    engine.deploy(one_task())
    iid = engine.start("lim", _values(3, 3 * KB), now=T0).id  # 9 KB
    [task] = engine.fetch_and_lock(FetchRequest("w", 1, (TopicRequest("lim", 60_000),)), now=T0)
    before = table_dump(engine)
    with pytest.raises(VariableError, match=f"instance {iid} would hold"):
        engine.complete_external_task(task.id, "w", _values(3, 3 * KB, "c"), now=T0)  # 18 KB
    assert table_dump(engine) == before
    # replacing values keeps the size: allowed
    engine.complete_external_task(task.id, "w", _values(3, 3 * KB), now=T0)
    assert engine.get_instance(iid).state.value == "completed"


def test_limits_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BPM_MAX_UPDATE_BYTES", "2048")
    monkeypatch.setenv("BPM_MAX_INSTANCE_VARIABLE_BYTES", "4096")
    monkeypatch.setenv("BPM_MIN_TIMER_CYCLE_SECONDS", "0.5")
    cfg = EngineConfig.from_env()
    assert cfg.max_update_bytes == 2048 and cfg.max_instance_variable_bytes == 4096
    assert cfg.min_timer_cycle == timedelta(seconds=0.5)


def _cycling(key: str, cycle: str, *, start: bool) -> Any:
    p = Process(key)
    if start:
        return p.start("s", cycle=cycle).end("e").sequence("s", "e").build()
    return (
        p.start("s")
        .service_task("t", topic="x")
        .boundary_timer("tick", "t", cycle=cycle, interrupting=False)
        .end("e")
        .end("e2")
        .sequence("s", "t")
        .sequence("t", "e")
        .sequence("tick", "e2")
        .build()
    )


@pytest.mark.parametrize("start", [True, False], ids=["timer-start", "boundary"])
def test_a_timer_cycle_under_the_minimum_does_not_deploy(engine: Engine, start: bool) -> None:
    before = table_dump(engine)
    node = "s" if start else "tick"
    with pytest.raises(DeploymentError, match=f"R/PT0.001S.*minimum of 1 s.*'{node}'"):
        engine.deploy(_cycling("fast", "R/PT0.001S", start=start))
    assert table_dump(engine) == before
    assert engine.deploy(_cycling("ok", "R/PT1S", start=start)).key == "ok"


def test_the_minimum_cycle_is_configurable(database_url: str) -> None:
    eng = Engine(database_url, config=EngineConfig(min_timer_cycle=timedelta(milliseconds=1)))
    try:
        assert eng.deploy(_cycling("fast", "R3/PT0.001S", start=False)).key == "fast"
    finally:
        eng.close()
