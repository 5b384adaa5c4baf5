"""Django adapter: add ``"bpm.contrib.django"`` to ``INSTALLED_APPS`` and set
``BPM_DATABASE_URL`` in settings; then ``get_engine()`` anywhere.

``BPM_DISPATCHER`` may name a zero-argument factory (``"workers.dispatch.make_dispatcher"``)
that returns a :class:`bpm.dispatch.Dispatcher`; without one, the beat sweeper publishes
new steps. The engine keeps its own connections: starting an instance inside a Django
``transaction.atomic()`` block commits independently of it.
"""

from __future__ import annotations

import threading

from bpm.engine import Engine

_lock = threading.Lock()
_engine: Engine | None = None


def get_engine() -> Engine:
    """The process-wide engine built from Django settings (created on first use)."""
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
