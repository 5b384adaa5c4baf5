"""What ``bpm api`` says when it starts and stops, and its logging (the access-log switch).

The start lines come once the port is bound (so they never announce a port someone else
holds, and ``--port 0`` shows the port it got): where the REST API, the cockpit and the
docs are, whether callers need a key, where the access log goes. The stop line comes when
the server has shut down.
"""

from __future__ import annotations

import contextlib
import copy
import signal
from collections.abc import Iterator, Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # bpm.api needs the api extra; this module is imported by bpm api only
    from bpm.api.auth import ApiKey

#: Where ``bpm start`` / ``bpm show`` link an instance to (see docs/cockpit.md).
COCKPIT_URL_ENV = "BPM_COCKPIT_URL"


def base_url(host: str, port: int) -> str:
    """``http://host:port``; an all-interfaces bind is shown as the local host's address."""
    shown = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    return f"http://[{shown}]:{port}" if ":" in shown else f"http://{shown}:{port}"


def auth_line(keys: Sequence[ApiKey], open_access: bool) -> str:
    """Whether a caller needs a key, and which keys there are (counts by kind)."""
    if open_access and not keys:
        return (
            "auth: OFF, serving WITHOUT authentication (--insecure-no-auth): anyone who "
            "reaches the port may call"
        )
    kinds = {
        "operator": sum(1 for k in keys if k.topics is None and k.role == "operator"),
        "viewer": sum(1 for k in keys if k.topics is None and k.role == "viewer"),
        "worker": sum(1 for k in keys if k.topics is not None),
    }
    counted = ", ".join(f"{n} {kind}" for kind, n in kinds.items() if n)
    plural = "" if len(keys) == 1 else "s"
    return f"auth: on, {len(keys)} API key{plural} from BPM_API_KEYS ({counted})"


def start_lines(
    host: str,
    port: int,
    *,
    keys: Sequence[ApiKey],
    open_access: bool,
    workers: int,
    access_log: bool,
) -> list[str]:
    base = base_url(host, port)
    where = "all interfaces" if host in ("0.0.0.0", "::", "") else host
    # A single process has its app loaded when the port is bound; N processes load
    # theirs after it (the port refuses connections until the first is up).
    processes = "1 process" if workers <= 1 else f"{workers} processes, starting"
    cockpit = f"{base}/cockpit"
    login = "" if open_access and not keys else " (sign in with a key's secret)"
    return [
        f"bpm api: serving on {where}, port {port} ({processes}); Ctrl-C or SIGTERM stops it",
        f"  REST API:   {base}/engine-rest",
        f"  cockpit:    {cockpit}{login}",
        f"  API docs:   {base}/docs  (OpenAPI: {base}/openapi.json)",
        f"  health:     {base}/health/live, {base}/health/ready; metrics: {base}/metrics",
        f"  {auth_line(keys, open_access)}",
        "  access log: on (one line per request on stdout)"
        if access_log
        else "  access log: off (--access-log to log each request)",
        f"  links from bpm start / bpm show: export {COCKPIT_URL_ENV}={cockpit}",
    ]


def stop_line(host: str, port: int) -> str:
    return f"bpm api: stopped (was serving {base_url(host, port)})"


class _Stopped(Exception):
    """SIGTERM or SIGINT reached the command (after uvicorn's own handling)."""


def _stop(signum: int, frame: FrameType | None) -> None:
    raise _Stopped


@contextlib.contextmanager
def stopped_by_signals() -> Iterator[None]:
    """SIGTERM and SIGINT end the block quietly (uvicorn handles them first, then raises
    them again to whoever handled them before it: here, this)."""
    before = {sig: signal.signal(sig, _stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    except _Stopped:
        pass
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def log_config(level: str, *, access_log: bool, text: bool) -> dict[str, Any]:
    """uvicorn's logging: its own lines from ``level`` on, each request at INFO when the
    access log is on. ``text``: uvicorn's handlers and formats; else (JSON logs) no
    handler of its own, its lines go to the root's JSON handler."""
    import uvicorn.config

    upper: int = uvicorn.config.LOG_LEVELS[level.lower()]
    access = min(upper, uvicorn.config.LOG_LEVELS["info"]) if access_log else upper
    if text:
        config: dict[str, Any] = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
        config["loggers"]["uvicorn"]["level"] = upper
        config["loggers"]["uvicorn.error"]["level"] = upper
        config["loggers"]["uvicorn.access"]["level"] = access
        return config
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "loggers": {
            "uvicorn": {"level": upper},
            "uvicorn.error": {"level": upper},
            "uvicorn.access": {"level": access},
        },
    }


def check_level(level: str) -> str | None:
    """None when ``level`` is a log level; else what to pass instead."""
    import uvicorn.config

    if level.lower() in uvicorn.config.LOG_LEVELS:
        return None
    return f"--log-level {level!r} is not a log level; use {', '.join(uvicorn.config.LOG_LEVELS)}"


__all__ = [
    "COCKPIT_URL_ENV",
    "auth_line",
    "base_url",
    "check_level",
    "log_config",
    "start_lines",
    "stop_line",
    "stopped_by_signals",
]
