"""Celery side of the engine: the app, the ``run_token`` task and the Celery dispatcher.

Start a worker with ``celery -A workers.app worker``; see ``docs/celery.md``.
"""

from __future__ import annotations
