"""The wheel ships ``bpm`` alone: no top-level ``workers`` or ``beat`` package lands in the
environment of an app that installs it (where modules of those names may already live)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
    )  # fmt: skip
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


def test_the_wheel_registers_the_test_kit_as_a_pytest_plugin(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    assert "bpm/testing/plugin.py" in names and "bpm/testing/report.py" in names
    points = next(n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt"))
    text = wheel.read(points).decode()
    # Named as the module: tests/conftest.py's pytest_plugins then loads it once.
    assert "[pytest11]\nbpm.testing.plugin = bpm.testing.plugin" in text
