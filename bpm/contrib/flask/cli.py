"""``flask bpm ...``: the ``bpm`` command on the app's engine, beside Django's
``manage.py bpm``.

Every argument goes to the ``bpm`` command unchanged (``flask bpm instances --json``,
``flask bpm start order --var amount=120``, ``flask bpm db upgrade``, ``flask bpm --help``).
The database, broker and queue are the app's (``BPM_DATABASE_URL`` or the session's
database, ``BPM_BROKER_URL``, ``BPM_QUEUE``); its ``BPM_HANDLERS`` are already imported.
:class:`~bpm.contrib.flask.BPM` registers it on ``app.cli``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import click
from flask import current_app
from flask.cli import with_appcontext

from bpm.engine import Engine

EXTENSION_KEY = "bpm"
"""Where :class:`bpm.contrib.flask.BPM` keeps an app's engine in ``app.extensions``."""


@contextmanager
def _environment(engine: Engine) -> Iterator[None]:
    """Point the ``bpm`` command at the app's engine for the command's duration."""
    wanted = {"BPM_DATABASE_URL": engine.url, "BPM_QUEUE": engine.config.queue}
    if engine.config.broker_url:
        wanted["BPM_BROKER_URL"] = engine.config.broker_url
    before = {k: os.environ.get(k) for k in wanted}
    os.environ.update(wanted)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@click.command(
    "bpm",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    add_help_option=False,  # `flask bpm --help` is bpm's own help
    short_help="Run a bpm command (flask bpm --help lists them) on this app's engine.",
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@with_appcontext
def bpm_command(args: tuple[str, ...]) -> None:
    """Run a bpm command on this app's engine: flask bpm instances, flask bpm show ID..."""
    from bpm.cli import app as bpm_app

    # The extension (bpm.contrib.flask.BPM) added this command and its engine: read it by
    # the key, so this module does not import the package that imports it.
    engine: Engine = current_app.extensions[EXTENSION_KEY]
    with _environment(engine):
        bpm_app(args=list(args), prog_name="flask bpm")
