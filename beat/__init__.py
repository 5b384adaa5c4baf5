"""Beat of the ready-made app: ``celery -A workers.app beat``.

The schedule, the sweeps and the timer waiter live in :mod:`bpm.contrib.celery`
(``schedule``, ``beat_tasks``, ``waiter``): :func:`bpm.contrib.celery.install` puts them on
any Celery app. Not in the wheel.
"""

from __future__ import annotations
