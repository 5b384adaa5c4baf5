"""The ``bpm`` command. Each command group lives in its own module and registers on ``app``."""

from __future__ import annotations

from bpm.cli import api as _api  # noqa: F401  (registers commands)
from bpm.cli import batches as _batches  # noqa: F401  (registers commands)
from bpm.cli import doctor as _doctor  # noqa: F401  (registers commands)
from bpm.cli import instances as _instances  # noqa: F401  (registers commands)
from bpm.cli import lint as _lint  # noqa: F401  (registers commands)
from bpm.cli import migrate as _migrate  # noqa: F401  (registers commands)
from bpm.cli import modify as _modify  # noqa: F401  (registers commands)
from bpm.cli import schedules as _schedules  # noqa: F401  (registers commands)
from bpm.cli import timers as _timers  # noqa: F401  (registers commands)
from bpm.cli import trail as _trail  # noqa: F401  (registers commands)
from bpm.cli import variables as _variables  # noqa: F401  (registers commands)
from bpm.cli.app import app, main

__all__ = ["app", "main"]
