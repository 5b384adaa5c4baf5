"""``docs/celery.md``, "A Celery shop's path, step by step", run as a reader would: its
files written as they stand, its commands run as they stand (a real ``celery -A shop
worker`` and ``beat``, ``bpm db upgrade``, ``python -m shop.place_order``, ``bpm show``,
``python -m shop.sizes``), with the test's own database, broker and queue given through
the environment (``BPM_DATABASE_URL``, ``CELERY_BROKER_URL``, ``BPM_QUEUE``)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from bpm import Engine, InstanceState
from tests.e2e.conftest import BROKER_URL
from tests.e2e.procs import ROOT, CeleryProcess, stop_all
from tests.support import eventually

pytestmark = pytest.mark.slow
DOC = ROOT / "docs" / "celery.md"
SECTION = "## A Celery shop's path, step by step"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```$", re.S | re.M)
BIN = Path(sys.executable).parent


def section() -> str:
    text = DOC.read_text()
    start = text.index(SECTION)
    end = text.index("\n## ", start + len(SECTION))
    return text[start:end]


def blocks(kind: str) -> list[str]:
    return [body for lang, body in FENCE.findall(section()) if lang == kind]


def commands() -> list[str]:
    """The shell lines of the section, without comments and blank lines."""
    out = []
    for body in blocks("sh"):
        for line in body.splitlines():
            line = line.split("  #", 1)[0].strip()
            if line and not line.startswith("#"):
                out.append(line)
    return out


def write_files(root: Path) -> list[str]:
    """Every python block that starts with ``# shop/NAME.py``, written there."""
    written = []
    for body in blocks("python"):
        first = body.splitlines()[0]
        assert first.startswith("# shop/"), f"a python block that is not a file: {first}"
        path = root / first[2:].strip()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
        written.append(path.relative_to(root).as_posix())
    (root / "shop" / "__init__.py").write_text("")
    return written


def test_the_section_is_what_this_test_runs() -> None:
    assert commands() == [
        "pip install 'bpm-celery[celery]'",
        "export BPM_DATABASE_URL=postgresql+psycopg://user@db-host/bpm",
        "bpm db upgrade",
        "celery -A shop worker -l info",
        "celery -A shop beat -l info",
        "python -m shop.place_order",
        "bpm show INSTANCE_ID",
        "python -m shop.sizes",
    ]


def test_a_celery_shop_follows_the_steps(
    pg_database_url: str, queue: str, tmp_path: Path, celery_engine: Engine
) -> None:
    project = tmp_path / "project"
    assert write_files(project) == [
        "shop/celery.py",
        "shop/tasks.py",
        "shop/processes.py",
        "shop/place_order.py",
        "shop/sizes.py",
    ]
    env = {
        "BPM_DATABASE_URL": pg_database_url,  # what step 1 exports, this test's database
        "CELERY_BROKER_URL": BROKER_URL,  # Celery's own override of the app's broker
        "BPM_QUEUE": queue,
        "PYTHONPATH": str(project),
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    full = {**os.environ, **env}

    def run(line: str) -> str:
        argv = shlex.split(line)
        if argv[0] == "python":
            argv[0] = sys.executable
        done = subprocess.run(
            argv, cwd=project, env=full, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, f"{line}:\n{done.stdout}\n{done.stderr}"
        return done.stdout

    lines = commands()
    assert lines[0].startswith("pip install")  # installed already: this is the project
    run(lines[2])  # bpm db upgrade
    worker_args = shlex.split(lines[3])[3:]  # celery -A shop | worker -l info
    beat_args = shlex.split(lines[4])[3:]
    name = f"docs-{queue[-8:]}"
    worker = CeleryProcess(
        # the test's additions: its queue only (the app's default queue is shared by
        # other tests), a node name, no gossip
        [*worker_args, "-Q", queue, "-n", f"{name}@%h", "--without-gossip", "--without-mingle"],
        env,
        tmp_path / f"{name}-worker.log",
        app="shop",
    )
    beat = CeleryProcess(
        [*beat_args, "-s", str(tmp_path / "beat-schedule"), "--pidfile", str(tmp_path / "b.pid")],
        env,
        tmp_path / f"{name}-beat.log",
        app="shop",
    )
    try:
        worker.started(r"ready\.")
        beat.started(r"beat: Starting")
        assert "bpm.run_token" in worker.log()

        instance_id = run(lines[5]).strip()  # python -m shop.place_order
        eventually(
            lambda: celery_engine.get_instance(instance_id).state is InstanceState.COMPLETED,
            timeout=60,
            what="the order to complete in the shop's worker",
        )
        order = celery_engine.get_instance(instance_id)
        assert order.business_key == "o-1"
        assert order.variables["charged"] == 42 and order.variables["currency"] == "EUR"
        assert re.fullmatch(r"T-[0-9a-f-]{8}", order.variables["tracking"])
        assert order.variables["to"] == "1 Main St"

        shown = run(lines[6].replace("INSTANCE_ID", instance_id))  # bpm show
        assert "completed" in shown and "charge" in shown and "ship" in shown

        canvas_id, total = run(lines[7]).split()  # python -m shop.sizes
        assert total == "43"
        assert celery_engine.get_instance(canvas_id).state is InstanceState.COMPLETED

        again = run(lines[5]).strip()  # placing another order deploys nothing new
        eventually(
            lambda: celery_engine.get_instance(again).state is InstanceState.COMPLETED,
            timeout=60,
            what="the second order",
        )
        assert [d.version for d in celery_engine.definitions("order")] == [1]
    finally:
        stop_all([beat, worker])
