"""``python manage.py bpm ...``: the ``bpm`` command on this project's engine settings.

Every argument goes to the ``bpm`` command unchanged (``manage.py bpm start order --var
amount=120``, ``manage.py bpm instances``, ``manage.py bpm db upgrade``); the database and
broker default to those of ``settings.BPM``, and its ``HANDLERS`` are already imported.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import click
from django.core.management.base import BaseCommand, CommandError, CommandParser


def _environment() -> None:
    """Point the ``bpm`` command at the project's engine unless the environment already does."""
    from bpm.contrib.django.settings import read_settings

    conf = read_settings()
    os.environ.setdefault("BPM_DATABASE_URL", conf.database_url)
    if conf.broker_url:
        os.environ.setdefault("BPM_BROKER_URL", conf.broker_url)
    os.environ.setdefault("BPM_QUEUE", conf.queue)


class Command(BaseCommand):  # type: ignore[misc]  # django ships no type hints
    help = "Run a bpm command (bpm --help lists them) on this project's database."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("bpm_args", nargs=argparse.REMAINDER, help="arguments of bpm")

    def run_from_argv(self, argv: list[str]) -> None:
        # Django's option parser would reject bpm's own options: hand them over untouched.
        from bpm.cli import app

        _environment()
        app(args=argv[2:], prog_name=f"{os.path.basename(argv[0])} bpm")

    def handle(self, *args: Any, **options: Any) -> None:
        """``call_command("bpm", "instances")``: raises CommandError when bpm fails."""
        from bpm.cli import app

        _environment()
        try:
            code = app(args=list(options.get("bpm_args") or args), standalone_mode=False)
        except click.exceptions.Exit as exc:  # not standalone: click may return or raise it
            code = exc.exit_code
        except click.ClickException as exc:
            raise CommandError(exc.format_message()) from exc
        if isinstance(code, int) and code:
            raise CommandError(f"bpm exited with code {code} (its message is above)")
