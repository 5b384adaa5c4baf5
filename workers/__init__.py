"""The ready-made Celery app of the repository (``celery -A workers.app worker``).

Built on :func:`bpm.contrib.celery.install`; see ``docs/celery.md``. Not in the wheel.
"""

from __future__ import annotations
