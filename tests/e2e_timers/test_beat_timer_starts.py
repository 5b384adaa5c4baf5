"""Real Celery beat and worker processes start instances from a timer start event: two
beats at once, each due time starts exactly one instance."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bpm import Engine, InstanceState
from bpm.builder import Process
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from tests.e2e.conftest import StartWorkers
from tests.e2e.procs import CeleryProcess
from tests.support import eventually

pytestmark = pytest.mark.slow


def every_second(times: int) -> ProcessModel:
    model = Process("tick").start("manual").end("end").sequence("manual", "end").build()
    tick = n.StartEvent("tick", timer=n.TimerSpec(n.TimerKind.CYCLE, f"R{times}/PT1S"))
    return ProcessModel(
        key="tick",
        nodes={**model.nodes, "tick": tick},
        flows=(*model.flows, n.Flow("f_tick", "tick", "end")),
    )


def test_two_beats_start_each_due_time_once(
    celery_engine: Engine,
    start_workers: StartWorkers,
    start_beat_process: Callable[..., CeleryProcess],
) -> None:
    env = {"BPM_BEAT_TIMER_SECONDS": "0.1", "BPM_HANDLERS": "tests.e2e_timers.handlers"}
    start_workers(2, **env)
    beats = [start_beat_process(**env), start_beat_process(**env)]
    celery_engine.deploy(every_second(5))
    [schedule] = celery_engine.schedules("tick")

    def ended() -> bool:
        [found] = celery_engine.schedules("tick", include_inactive=True)
        return found.state == "ended"

    eventually(ended, timeout=60, what="the schedule to fire its five due times")
    dues = [due for due, _ in celery_engine.schedule_fires(schedule.id)]
    assert len(dues) == len(set(dues)) == 5
    instances = celery_engine.instances(definition_key="tick")
    assert len(instances) == 5
    assert all(i.state is InstanceState.COMPLETED for i in instances)
    for beat in beats:  # both beats' timer waiters were running
        beat.wait_for_log(r"timer waiter started")
    assert any("fired" in b.log() for b in beats)
