"""Setting up metrics and logs where a process starts: worker settings, the multiprocess
directory (each case in a fresh interpreter: prometheus-client picks its mode at import),
and a worker refusing a bad setting."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bpm import ConfigurationError
from tests.e2e.procs import CeleryProcess
from tests.support import eventually, redis_url
from workers.settings import WorkerSettings

ROOT = Path(__file__).resolve().parents[1]


def test_worker_settings_read_the_metrics_port_and_log_format() -> None:
    s = WorkerSettings.from_env(
        {"BPM_METRICS_PORT": " 9808 ", "BPM_METRICS_ADDR": "127.0.0.1", "BPM_LOG_FORMAT": "json"}
    )
    assert (s.metrics_port, s.metrics_addr, s.log_format) == (9808, "127.0.0.1", "json")
    default = WorkerSettings.from_env({})
    assert (default.metrics_port, default.metrics_addr, default.log_format) == (
        None,
        "0.0.0.0",
        "text",
    )


@pytest.mark.parametrize("raw", ["abc", "0", "70000", "-1", "80.5"])
def test_a_bad_metrics_port_is_refused_with_the_fix(raw: str) -> None:
    with pytest.raises(ConfigurationError, match=rf"BPM_METRICS_PORT='{raw}'.*1-65535"):
        WorkerSettings.from_env({"BPM_METRICS_PORT": raw})


def test_a_bad_log_format_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="BPM_LOG_FORMAT='xml'"):
        WorkerSettings.from_env({"BPM_LOG_FORMAT": "xml"})


def python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    full.update(env, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=full, capture_output=True, text=True, timeout=60
    )


def test_a_private_directory_is_made_before_the_import_and_removed_at_exit() -> None:
    out = python(
        "import os\n"
        "from bpm.contrib.prometheus_dir import ensure_multiprocess_dir\n"
        "path = ensure_multiprocess_dir()\n"
        "from prometheus_client import values\n"
        "assert os.environ['PROMETHEUS_MULTIPROC_DIR'] == path and os.path.isdir(path)\n"
        "assert getattr(values.ValueClass, '_multiprocess', False)\n"
        "from bpm.contrib import prometheus\n"
        "prometheus.install().steps_started.labels('p', 'n').inc()\n"
        "assert any(os.scandir(path))\n"
        "print(path)\n"
    )
    assert out.returncode == 0, out.stderr
    path = Path(out.stdout.strip())
    assert path.name.startswith("bpm-metrics-") and not path.exists()


def test_a_given_directory_is_used_and_kept(tmp_path: Path) -> None:
    out = python(
        "from bpm.contrib.prometheus_dir import ensure_multiprocess_dir\n"
        "print(ensure_multiprocess_dir())\n",
        PROMETHEUS_MULTIPROC_DIR=str(tmp_path),
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(tmp_path) and tmp_path.is_dir()


def test_a_missing_directory_or_an_early_import_is_refused(tmp_path: Path) -> None:
    missing = python(
        "from bpm.contrib.prometheus_dir import ensure_multiprocess_dir\n"
        "ensure_multiprocess_dir()\n",
        PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "nope"),
    )
    assert missing.returncode != 0
    assert "is not a directory; create it (empty)" in missing.stderr
    early = python(
        "import prometheus_client\n"
        "from bpm.contrib.prometheus_dir import ensure_multiprocess_dir\n"
        "ensure_multiprocess_dir()\n"
    )
    assert early.returncode != 0
    assert "prometheus_client was imported before the metrics were set up" in early.stderr
    assert "set PROMETHEUS_MULTIPROC_DIR" in early.stderr


@pytest.mark.slow
def test_a_worker_with_a_bad_metrics_port_does_not_start(
    pg_database_url: str, tmp_path: Path
) -> None:
    env = {
        "BPM_DATABASE_URL": pg_database_url,
        "BPM_BROKER_URL": redis_url(),
        "BPM_METRICS_PORT": "not-a-port",
    }
    proc = CeleryProcess(["worker", "--pool", "solo", "-Q", "bpm-never"], env, tmp_path / "w.log")
    try:
        code = eventually(lambda: proc.proc.poll(), timeout=60, what="the worker to exit")
        assert code != 0
        assert "BPM_METRICS_PORT='not-a-port' is not a TCP port" in proc.log()
    finally:
        proc.stop()
