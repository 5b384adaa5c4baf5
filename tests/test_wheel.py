"""The wheel ships ``bpm`` alone: no top-level ``workers`` or ``beat`` package lands in the
environment of an app that installs it (where modules of those names may already live)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    # Built from a copy of what the wheel is made of: an in-tree build writes build/ and
    # *.egg-info into the checkout while the rest of the suite runs from it (a CI run's
    # build failed there, its reason swallowed: it is printed now).
    # The whole tree, its other top-level packages (workers, beat) included: the wheel
    # must leave them out by its own configuration.
    src = tmp_path_factory.mktemp("tree") / "source"
    junk = (".git", ".venv", "build", "*.egg-info", "__pycache__", "node_modules", ".*_cache")
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(*junk, "*.db", "*.db-*"))
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(out), str(src)],
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (built,) = out.glob("bpm_celery-*.whl")
    return zipfile.ZipFile(built)


def test_the_wheel_has_no_top_level_package_but_bpm(wheel: zipfile.ZipFile) -> None:
    tops = {name.split("/")[0] for name in wheel.namelist()}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"bpm"}
    top_level = next(n for n in wheel.namelist() if n.endswith(".dist-info/top_level.txt"))
    assert wheel.read(top_level).decode().split() == ["bpm"]


def test_the_wheel_carries_what_install_needs(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    for module in ("install", "tasks", "beat_tasks", "schedule", "waiter", "publisher"):
        assert f"bpm/contrib/celery/{module}.py" in names
    assert "bpm/store/migrations/env.py" in names
    assert "bpm/store/migrations/versions/0012_identity.py" in names
    for asset in (
        "index.html",
        "tasklist.js",
        "tasklist.css",
        "vendor/form-js/form-viewer.umd.js",
        "vendor/form-js/form-js.css",
        "vendor/form-js/LICENSE",
    ):
        assert f"bpm/tasklist/static/{asset}" in names, asset


def test_the_wheel_registers_the_test_kit_as_a_pytest_plugin(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    assert "bpm/testing/plugin.py" in names and "bpm/testing/report.py" in names
    points = next(n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt"))
    text = wheel.read(points).decode()
    # Named as the module: tests/conftest.py's pytest_plugins then loads it once.
    assert "[pytest11]\nbpm.testing.plugin = bpm.testing.plugin" in text
