"""Django adapter: add ``"bpm.contrib.django"`` to ``INSTALLED_APPS``, optionally a ``BPM``
dict to settings (see :mod:`bpm.contrib.django.settings`), then in a view::

    from django.db import transaction
    from bpm.contrib.django import start_process

    with transaction.atomic():
        order = Order.objects.create(amount=120)
        start_process("order", {"order_id": order.id}, idempotency_key=request_key)

On PostgreSQL the engine shares Django's connection: the instance commits or rolls back
with ``order``, and its first steps are published to Celery only in ``on_commit``.
``python manage.py bpm ...`` runs the ``bpm`` command on the project's database, the admin
lists instances and incidents, and :mod:`bpm.contrib.django.signals` tells the app when an
instance completes or fails.
"""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Any

from bpm.engine import Engine
from bpm.runtime.records import Instance

_lock = threading.Lock()
_engine: Engine | None = None


def get_engine() -> Engine:
    """The process-wide engine built from ``settings.BPM`` (created on first use)."""
    global _engine
    with _lock:
        if _engine is None:
            from bpm.contrib.django.settings import engine_from_settings

            _engine = engine_from_settings()
        return _engine


def reset_engine() -> None:
    """Forget the engine (tests, or after changing settings)."""
    global _engine
    with _lock:
        if _engine is not None:
            _engine.close()
        _engine = None


def start_process(
    key: str,
    variables: dict[str, Any] | None = None,
    *,
    business_key: str | None = None,
    idempotency_key: str | None = None,
    now: datetime | None = None,
) -> Instance:
    """Start the latest version of ``key`` in the current Django transaction.

    Inside ``transaction.atomic()`` the instance is created in a savepoint and exists only
    if the block commits; its first steps are published on commit. A retried request that
    passes the same ``idempotency_key`` gets the first instance back.
    """
    return get_engine().start(
        key, variables, business_key=business_key, idempotency_key=idempotency_key, now=now
    )


def complete_user_task(
    task_id: str, variables: dict[str, Any] | None = None, *, now: datetime | None = None
) -> None:
    """Complete an open user task in the current Django transaction (steps publish on commit)."""
    get_engine().complete_user_task(task_id, variables, now=now)
