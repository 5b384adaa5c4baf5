"""The directory of prometheus-client's multiprocess mode, chosen before it is imported.

prometheus-client decides at its first import whether values live in memory or in files
under ``PROMETHEUS_MULTIPROC_DIR``. A prefork Celery worker (and ``bpm api --workers N``)
needs the files: its children count, one process serves the sum. This module must not
import prometheus-client itself.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile

from bpm.errors import ConfigurationError

ENV_VAR = "PROMETHEUS_MULTIPROC_DIR"


def ensure_multiprocess_dir() -> str:
    """The multiprocess directory of this process and its children: the one in the
    environment, else a new private one (removed when this process exits)."""
    path = os.environ.get(ENV_VAR, "").strip()
    if path:
        if not os.path.isdir(path):
            raise ConfigurationError(
                f"{ENV_VAR}={path!r} is not a directory; create it (empty) before the "
                "process starts, or unset it to let the process make its own"
            )
        return path
    if "prometheus_client" in sys.modules:
        raise ConfigurationError(
            "prometheus_client was imported before the metrics were set up (by a handler "
            f"module?), so its children's metrics would be lost; set {ENV_VAR} to an empty "
            "directory in the environment of this process"
        )
    path = tempfile.mkdtemp(prefix="bpm-metrics-")
    os.environ[ENV_VAR] = path
    owner = os.getpid()

    def remove() -> None:
        if os.getpid() == owner:  # not in a forked child that happens to run atexit
            shutil.rmtree(path, ignore_errors=True)

    atexit.register(remove)
    return path
