"""The adapter's settings: the ``BPM`` dict of ``django.conf.settings``, read once.

``BPM = {...}`` keys, all optional:

- ``DATABASE``: the alias whose connection and transactions the engine shares
  (``"default"``).
- ``SHARE_TRANSACTIONS``: run engine operations in Django's transactions on that alias
  (default True when it is PostgreSQL; needs psycopg 3, see :mod:`.transactions`).
- ``DATABASE_URL``: the engine's own connections (reads, and everything when not
  sharing); by default built from ``DATABASES[DATABASE]``.
- ``BROKER_URL`` / ``QUEUE``: where new steps are published (default ``$BPM_BROKER_URL``,
  ``$BPM_QUEUE`` or ``bpm``); without a broker nothing publishes and beat's sweeper
  finds new steps.
- ``HANDLERS``: modules imported when Django starts, so their ``@service_task`` register.
- ``COCKPIT_URL``: the cockpit the admin pages link to (e.g. ``"/cockpit"``).
- ``DISPATCHER``: a dotted path to a zero-argument factory of a custom dispatcher.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from importlib import import_module
from typing import Any

from django.conf import settings
from sqlalchemy.engine import URL

from bpm.dispatch import Dispatcher
from bpm.engine import Engine, EngineConfig
from bpm.errors import ConfigurationError

KNOWN_KEYS = frozenset(
    {
        "DATABASE",
        "SHARE_TRANSACTIONS",
        "DATABASE_URL",
        "BROKER_URL",
        "QUEUE",
        "HANDLERS",
        "COCKPIT_URL",
        "DISPATCHER",
    }
)


@dataclass(frozen=True)
class BpmSettings:
    """``settings.BPM`` with its defaults filled in."""

    database: str
    share_transactions: bool
    database_url: str
    broker_url: str | None
    queue: str
    handlers: tuple[str, ...]
    cockpit_url: str | None
    dispatcher: str | None


def _vendor(alias: str) -> str:
    from django.db import connections

    vendor: str = connections[alias].vendor
    return vendor


def url_of_alias(alias: str) -> str:
    """A SQLAlchemy URL for ``DATABASES[alias]`` (PostgreSQL through psycopg 3, or SQLite)."""
    from django.db import connections

    if alias not in connections.settings:
        raise ConfigurationError(f"BPM['DATABASE'] = {alias!r} is not in DATABASES")
    conf = connections.settings[alias]
    vendor = _vendor(alias)
    if vendor == "sqlite":
        return f"sqlite:///{conf['NAME']}"
    if vendor != "postgresql":
        raise ConfigurationError(
            f"DATABASES[{alias!r}] is {vendor}: the engine runs on PostgreSQL (or SQLite); "
            "set BPM['DATABASE_URL']"
        )
    options = conf.get("OPTIONS") or {}
    query = {k: str(options[k]) for k in ("sslmode", "sslrootcert", "sslcert") if k in options}
    return URL.create(
        "postgresql+psycopg",
        username=conf.get("USER") or None,
        password=conf.get("PASSWORD") or None,
        host=conf.get("HOST") or None,
        port=int(conf["PORT"]) if conf.get("PORT") else None,
        database=conf.get("NAME"),
        query=query,
    ).render_as_string(hide_password=False)


def read_settings() -> BpmSettings:
    """``settings.BPM`` checked: unknown keys and wrong types say what to write instead."""
    raw: Any = getattr(settings, "BPM", None) or {}
    if not isinstance(raw, dict):
        raise ConfigurationError("settings.BPM must be a dict, e.g. BPM = {'DATABASE': 'default'}")
    unknown = sorted(set(raw) - KNOWN_KEYS)
    if unknown:
        raise ConfigurationError(
            f"unknown key(s) in settings.BPM: {', '.join(unknown)}; "
            f"known keys: {', '.join(sorted(KNOWN_KEYS))}"
        )
    alias = str(raw.get("DATABASE", "default"))
    share = raw.get("SHARE_TRANSACTIONS")
    if share is None:
        from django.db import connections

        share = alias in connections.settings and _vendor(alias) == "postgresql"
    handlers = raw.get("HANDLERS", ())
    if isinstance(handlers, str):
        handlers = (handlers,)
    return BpmSettings(
        database=alias,
        share_transactions=bool(share),
        database_url=str(raw.get("DATABASE_URL") or url_of_alias(alias)),
        broker_url=str(raw.get("BROKER_URL") or os.environ.get("BPM_BROKER_URL", "")) or None,
        queue=str(raw.get("QUEUE") or os.environ.get("BPM_QUEUE", "") or "bpm"),
        handlers=tuple(str(h) for h in handlers),
        cockpit_url=raw.get("COCKPIT_URL") or None,
        dispatcher=raw.get("DISPATCHER") or None,
    )


def _dispatcher(path: str | None) -> Dispatcher | None:
    if not path:
        return None
    module_name, _, attr = path.rpartition(".")
    try:
        factory: Any = getattr(import_module(module_name), attr)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigurationError(f"BPM['DISPATCHER'] = {path!r} cannot be imported: {exc}") from exc
    dispatcher: Dispatcher = factory()
    return dispatcher


def engine_from_settings(conf: BpmSettings | None = None) -> Engine:
    """The engine the adapter hands out, built from ``settings.BPM``."""
    conf = conf or read_settings()
    transactions = None
    if conf.share_transactions:
        from bpm.contrib.django.transactions import DjangoTransactions

        transactions = DjangoTransactions(conf.database)
    config = replace(EngineConfig.from_env(), broker_url=conf.broker_url, queue=conf.queue)
    return Engine(
        conf.database_url,
        config=config,
        dispatcher=_dispatcher(conf.dispatcher),
        transactions=transactions,
    )
