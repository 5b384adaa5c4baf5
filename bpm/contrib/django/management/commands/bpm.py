"""``python manage.py bpm ...``: the ``bpm`` command on this project's engine settings.

Every argument goes to the ``bpm`` command unchanged (``manage.py bpm start order --var
amount=120``, ``manage.py bpm instances``, ``manage.py bpm db upgrade``); the database and
broker default to those of ``settings.BPM``, and its ``HANDLERS`` are already imported.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click
from django.core.management.base import BaseCommand, CommandError, CommandParser


@contextmanager
def _environment() -> Iterator[None]:
    """Point the ``bpm`` command at the project's engine unless the environment already
    does, for the command's duration only (``call_command`` runs in the caller's process)."""
    from bpm.contrib.django.settings import read_settings

    conf = read_settings()
    wanted = {"BPM_DATABASE_URL": conf.database_url, "BPM_QUEUE": conf.queue}
    if conf.broker_url:
        wanted["BPM_BROKER_URL"] = conf.broker_url
    added = [k for k in wanted if k not in os.environ]
    os.environ.update({k: wanted[k] for k in added})
    try:
        yield
    finally:
        for key in added:
            os.environ.pop(key, None)


class Command(BaseCommand):  # type: ignore[misc]  # django ships no type hints
    help = "Run a bpm command (bpm --help lists them) on this project's database."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("bpm_args", nargs=argparse.REMAINDER, help="arguments of bpm")

    def run_from_argv(self, argv: list[str]) -> None:
        # Django's option parser would reject bpm's own options: hand them over untouched.
        from bpm.cli import app

        with _environment():
            app(args=argv[2:], prog_name=f"{os.path.basename(argv[0])} bpm")

    def handle(self, *args: Any, **options: Any) -> None:
        """``call_command("bpm", "instances")``: raises CommandError when bpm fails."""
        from bpm.cli import app

        try:
            with _environment():
                code = app(args=list(options.get("bpm_args") or args), standalone_mode=False)
        except click.exceptions.Exit as exc:  # not standalone: click may return or raise it
            code = exc.exit_code
        except click.ClickException as exc:
            raise CommandError(exc.format_message()) from exc
        if isinstance(code, int) and code:
            raise CommandError(f"bpm exited with code {code} (its message is above)")
