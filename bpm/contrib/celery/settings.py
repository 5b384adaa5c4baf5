"""Worker and beat settings read from ``BPM_*`` environment variables, in one typed value."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from bpm.errors import ConfigurationError
from bpm.structured_logs import TEXT, log_format

DEFAULT_BROKER_URL = "redis://127.0.0.1:6379/0"
DEFAULT_DATABASE_URL = "postgresql+psycopg://root@127.0.0.1:5432/bpm"
DEFAULT_QUEUE = "bpm"


@dataclass(frozen=True)
class WorkerSettings:
    """Where the broker and the database are, which queue to use, which handlers to load,
    where to serve metrics and how to log."""

    broker_url: str = DEFAULT_BROKER_URL
    database_url: str = DEFAULT_DATABASE_URL
    queue: str = DEFAULT_QUEUE
    handler_modules: tuple[str, ...] = ()
    metrics_port: int | None = None  # None: no /metrics from this process
    metrics_addr: str = "0.0.0.0"
    log_format: str = TEXT

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> WorkerSettings:
        """Read ``BPM_BROKER_URL``, ``BPM_DATABASE_URL``, ``BPM_QUEUE``, ``BPM_HANDLERS``,
        ``BPM_METRICS_PORT``, ``BPM_METRICS_ADDR`` and ``BPM_LOG_FORMAT``.

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
            metrics_port=port_of("BPM_METRICS_PORT", env),
            metrics_addr=env.get("BPM_METRICS_ADDR", "").strip() or "0.0.0.0",
            log_format=log_format(env),
        )


def port_of(name: str, env: Mapping[str, str]) -> int | None:
    """A TCP port from the environment, or None if unset."""
    raw = env.get(name, "").strip()
    if not raw:
        return None
    try:
        port = int(raw)
    except ValueError:
        port = 0
    if not 1 <= port <= 65535:
        raise ConfigurationError(f"{name}={raw!r} is not a TCP port; use a number 1-65535")
    return port


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
