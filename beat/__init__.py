"""Celery beat: the periodic tasks that keep the engine moving (``celery -A workers.app beat``).

:mod:`beat.schedule` says when each task runs, :mod:`beat.tasks` what it does.
"""

from __future__ import annotations
