"""``bpm lint FILE...``: check BPMN files without a database, for users' own CI.

Every problem that would refuse a deploy is an error; settings the engine understands but
does not honour are warnings. With ``--handlers MODULE`` the inline handlers the models
name must be registered by those modules (a missing one would be an incident at run time).
Exit code: 0 clean, 1 warnings only and ``--strict``, 2 errors.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bpm.cli.app import app, console, import_handlers

__all__ = ["lint"]


def _lint_file(path: Path, check_handlers: bool) -> tuple[list[str], list[str]]:
    """(errors, warnings) of one file, each a printable line."""
    from bpm.bpmn import parse_bpmn_file
    from bpm.errors import DeploymentError
    from bpm.handlers import registry

    try:
        data = path.read_bytes()
    except OSError as exc:
        return [f"{path}: error: cannot read the file: {exc.strerror or exc}"], []
    try:
        parsed = parse_bpmn_file(data, path.name)
    except DeploymentError as exc:
        errors = []
        for problem in exc.problems:
            where = f"{path}:{problem.line}" if problem.line is not None else str(path)
            kind = f"{problem.element_type} " if problem.element_type else ""
            element = f" [{kind}{problem.element_id}]" if problem.element_id else ""
            errors.append(f"{where}: error: {problem.message}{element}")
        return errors, []
    errors = []
    if check_handlers:
        known = set(registry.names())
        for model in parsed.models:
            for name, tasks in sorted(model.handler_names().items()):
                if name in known:
                    continue
                line = model.nodes[tasks[0]].line
                where = f"{path}:{line}" if line is not None else str(path)
                errors.append(
                    f"{where}: error: no handler named '{name}' is registered (run by "
                    f"{', '.join(tasks)} in process '{model.key}'): register one with "
                    f"@service_task('{name}') in the handler modules"
                )
    return errors, [f"{path}: warning: {w}" for w in parsed.all_warnings]


@app.command("lint")
def lint(
    files: Annotated[list[Path], typer.Argument(help="BPMN files to check.")],
    handlers: Annotated[
        str | None,
        typer.Option(
            "--handlers", help="Comma-separated handler modules: every inline handler must exist."
        ),
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit 1 when there are warnings (and no errors).")
    ] = False,
) -> None:
    """Check BPMN files as a deploy would, without a database.

    Prints one line per error and warning. Exit code 0: clean; 1: warnings with --strict;
    2: errors (the file would be refused, or a handler is missing).
    """
    if handlers is not None:
        import_handlers(handlers)
    all_errors = all_warnings = 0
    for path in files:
        errors, warnings = _lint_file(path, handlers is not None)
        for line in errors:
            console.print(line, highlight=False, soft_wrap=True, markup=False)
        for line in warnings:
            console.print(line, highlight=False, soft_wrap=True, markup=False)
        all_errors += len(errors)
        all_warnings += len(warnings)
    summary = f"{len(files)} file(s): {all_errors} error(s), {all_warnings} warning(s)"
    console.print(summary, highlight=False)
    if all_errors:
        raise typer.Exit(2)
    if all_warnings and strict:
        raise typer.Exit(1)
