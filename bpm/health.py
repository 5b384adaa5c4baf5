"""Health checks shared by the API (``/health/ready``) and ``bpm doctor``: the database
answers, its schema is at the newest migration, the broker accepts connections, and (on a
worker host) every handler the deployed processes name is registered.

Each check returns a :class:`Check` instead of raising, so one report lists every problem.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from bpm.engine import Engine
from bpm.handlers import HandlerRegistry
from bpm.model import nodes as n
from bpm.store.health import ping
from bpm.store.migrate import current_revision, head_revision


@dataclass(frozen=True)
class Check:
    """One check's outcome; ``skipped`` checks do not count as failures."""

    name: str
    ok: bool
    detail: str
    seconds: float = 0.0
    skipped: bool = False


def _timed(name: str, fn: Callable[[], str]) -> Check:
    started = time.perf_counter()
    try:
        detail = fn()
    except Exception as exc:  # the point of a health check: report, never raise
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return Check(name, False, f"{type(exc).__name__}: {first[:300]}",
                     time.perf_counter() - started)  # fmt: skip
    return Check(name, True, detail, time.perf_counter() - started)


def check_database(engine: Engine) -> Check:
    def run() -> str:
        with engine.db.connect() as conn:
            ping(conn)
        return f"{engine.db.dialect.name} answers"

    return _timed("database", run)


def check_migrations(engine: Engine) -> Check:
    def run() -> str:
        current, head = current_revision(engine.db), head_revision()
        if current != head:
            raise RuntimeError(
                f"schema at revision {current or 'none'}, the code needs {head}: run "
                "`bpm db upgrade`"
            )
        return f"schema at revision {current}"

    return _timed("migrations", run)


def check_broker(url: str | None, *, timeout: float = 3.0) -> Check:
    """Open (and close) one connection to the Celery broker at ``url``."""
    if not url:
        return Check("broker", True, "no broker configured (BPM_BROKER_URL unset)", skipped=True)

    def run() -> str:
        try:
            from kombu import Connection  # noqa: PLC0415  (optional: bpm-celery[celery])
        except ImportError:
            raise RuntimeError("kombu is not installed: pip install 'bpm-celery[celery]'") from None
        with Connection(url, connect_timeout=timeout) as conn:
            conn.ensure_connection(
                max_retries=1, interval_start=0, interval_step=0, timeout=int(max(timeout, 1))
            )
            transport = conn.transport_cls
        return f"{transport} broker accepts connections"

    return _timed("broker", run)


def check_handlers(engine: Engine, registry: HandlerRegistry) -> Check:
    """Every inline service task of the newest version of each process has a handler."""

    def run() -> str:
        newest: dict[str, str] = {}
        versions: dict[str, int] = {}
        for d in engine.definitions():
            if d.version > versions.get(d.key, 0):
                versions[d.key], newest[d.key] = d.version, d.id
        missing = sorted(
            {
                f"{key}:{task.id} needs handler '{task.handler}'"
                for key, def_id in newest.items()
                for node in engine.model(def_id).nodes.values()
                if (task := n.inline_task(node)) is not None
                and task.handler is not None
                and registry.find(task.handler) is None
            }
        )
        if missing:
            raise RuntimeError(
                "; ".join(missing[:10]) + " (set BPM_HANDLERS to the modules that define them)"
            )
        return f"every inline task of {len(newest)} processes has a handler"

    return _timed("handlers", run)


def healthy(checks: Iterable[Check]) -> bool:
    return all(c.ok or c.skipped for c in checks)
