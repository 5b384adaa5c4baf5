"""Worker and beat settings read from ``BPM_*`` environment variables, in one typed value."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from bpm.errors import ConfigurationError

DEFAULT_BROKER_URL = "redis://127.0.0.1:6379/0"
DEFAULT_DATABASE_URL = "postgresql+psycopg://root@127.0.0.1:5432/bpm"
DEFAULT_QUEUE = "bpm"


@dataclass(frozen=True)
class WorkerSettings:
    """Where the broker and the database are, which queue to use, which handlers to load."""

    broker_url: str = DEFAULT_BROKER_URL
    database_url: str = DEFAULT_DATABASE_URL
    queue: str = DEFAULT_QUEUE
    handler_modules: tuple[str, ...] = ()

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> WorkerSettings:
        """Read ``BPM_BROKER_URL``, ``BPM_DATABASE_URL``, ``BPM_QUEUE`` and ``BPM_HANDLERS``.

        ``BPM_HANDLERS`` is a comma-separated list of modules that register handlers.
        """
        env = os.environ if env is None else env
        queue = env.get("BPM_QUEUE", "").strip() or DEFAULT_QUEUE
        modules = tuple(m.strip() for m in env.get("BPM_HANDLERS", "").split(",") if m.strip())
        return cls(
            broker_url=env.get("BPM_BROKER_URL", "").strip() or DEFAULT_BROKER_URL,
            database_url=env.get("BPM_DATABASE_URL", "").strip() or DEFAULT_DATABASE_URL,
            queue=queue,
            handler_modules=modules,
        )


def env_number(name: str, default: float, env: Mapping[str, str] | None = None) -> float:
    """A non-negative number (seconds, days) from the environment, or ``default`` if unset."""
    env = os.environ if env is None else env
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigurationError(f"{name}={raw!r} is not a number") from None
    if value < 0:
        raise ConfigurationError(f"{name}={raw!r} must not be negative")
    return value
