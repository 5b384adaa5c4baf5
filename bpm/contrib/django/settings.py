"""Reading the engine's settings from ``django.conf.settings``."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from django.conf import settings

from bpm.dispatch import Dispatcher
from bpm.engine import Engine
from bpm.errors import ConfigurationError


def _dispatcher(path: str | None) -> Dispatcher | None:
    if not path:
        return None
    module_name, _, attr = path.rpartition(".")
    try:
        factory: Any = getattr(import_module(module_name), attr)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigurationError(f"BPM_DISPATCHER={path!r} cannot be imported: {exc}") from exc
    dispatcher: Dispatcher = factory()
    return dispatcher


def engine_from_settings() -> Engine:
    url = getattr(settings, "BPM_DATABASE_URL", None)
    if not url:
        raise ConfigurationError("set BPM_DATABASE_URL in your Django settings")
    return Engine(str(url), dispatcher=_dispatcher(getattr(settings, "BPM_DISPATCHER", None)))
