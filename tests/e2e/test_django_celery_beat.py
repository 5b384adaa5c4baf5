"""The engine in an app whose beat is django-celery-beat's ``DatabaseScheduler``: beat
starts with the engine's timer waiter and upkeep threads in it, a timer fires and a step
whose publish was lost is sent again, the scheduler copies the engine's optional timer
sweeps into its table (once each) and sends them, and an entry the shop added to the
table (the admin's way) runs too."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from bpm import Engine, InstanceState
from bpm.builder import Process
from tests.e2e.procs import ROOT, start_beat, start_worker, stop_all
from tests.support import eventually

pytestmark = [
    pytest.mark.slow,
    # not imported here: the suite's Django tests configure Django in this process
    pytest.mark.skipif(
        importlib.util.find_spec("django_celery_beat") is None,
        reason="django-celery-beat is not installed (it is in the dev extras)",
    ),
]
APP = "tests.e2e.djbeat_app"


def test_the_engine_runs_under_django_celery_beats_database_scheduler(
    worker_env: dict[str, str],
    queue: str,
    tmp_path: Path,
    celery_engine: Engine,
    silent_engine: Engine,
    pg_database_url: str,
) -> None:
    env = {
        **worker_env,
        "BPM_HANDLERS": "tests.e2e.handlers",
        "DJANGO_SETTINGS_MODULE": "tests.e2e.djbeat_settings",
        "BPM_BEAT_TIMER_SWEEP_SECONDS": "1",
        "BPM_BEAT_REDISPATCH_SECONDS": "1",
        "BPM_REDISPATCH_AFTER_SECONDS": "1",
    }
    migrated = subprocess.run(
        [sys.executable, "-m", "django", "migrate", "django_celery_beat", "--noinput"],
        cwd=ROOT,
        env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert migrated.returncode == 0, migrated.stderr
    db = sa.create_engine(pg_database_url)
    # the shop's own entry, made in the database (the admin's way): the scheduler runs it
    with db.begin() as conn:
        every = conn.execute(
            sa.text(
                "INSERT INTO django_celery_beat_intervalschedule (every, period) "
                "VALUES (1, 'seconds') RETURNING id"
            )
        ).scalar_one()
        conn.execute(
            sa.text(
                "INSERT INTO django_celery_beat_periodictask (name, task, interval_id, args, "
                "kwargs, queue, enabled, total_run_count, one_off, headers, description, "
                "date_changed, priority, expire_seconds) VALUES ('shop-sweep', "
                "'bpm.redispatch_stale_ready', :every, '[]', '{}', :queue, true, 0, false, "
                "'{}', '', now(), NULL, NULL)"
            ),
            {"every": every, "queue": queue},
        )
    worker = start_worker(env, queue, tmp_path, app=APP)
    beat = start_beat(env, tmp_path, app=APP)
    try:
        assert "DatabaseScheduler" in beat.log()
        # a timer fired in this beat (its waiter, or the sweep), the next step by the worker
        celery_engine.deploy(
            Process("djbeat-timer")
            .start("s")
            .timer("wait", duration=timedelta(seconds=1))
            .service_task("after", handler="validate")
            .end("e")
            .sequence("s", "wait", "after", "e")
        )
        timed = celery_engine.start("djbeat-timer")
        # a step whose publish is lost (an engine that publishes nothing): beat's upkeep
        # sends it again
        silent_engine.deploy(
            Process("djbeat-lost")
            .start("s")
            .service_task("step", handler="validate")
            .end("e")
            .sequence("s", "step", "e")
        )
        lost = silent_engine.start("djbeat-lost")
        for inst in (timed, lost):
            eventually(
                lambda inst=inst: (
                    celery_engine.get_instance(inst.id).state is InstanceState.COMPLETED
                ),
                timeout=60,
                what=f"{inst.definition_key} to complete under the DatabaseScheduler",
            )

        # The scheduler copied the engine's timer sweeps into its table (once each), beside
        # the shop's entry, and sends them all to the worker.
        with db.connect() as conn:
            rows = conn.execute(
                sa.text("SELECT name, task FROM django_celery_beat_periodictask ORDER BY name")
            ).all()
        assert [tuple(r) for r in rows if r[1].startswith("bpm.")] == [
            ("bpm.fire_due_timers", "bpm.fire_due_timers"),
            ("bpm.fire_timer_starts", "bpm.fire_timer_starts"),
            ("shop-sweep", "bpm.redispatch_stale_ready"),
        ]
        for task in ("bpm.fire_due_timers", "bpm.fire_timer_starts", "bpm.redispatch_stale_ready"):
            worker.wait_for_log(rf"Task {task}\[[0-9a-f-]+\] succeeded", timeout=30)
    finally:
        stop_all([beat, worker])
        db.dispose()
