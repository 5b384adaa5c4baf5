"""``bpm migrate``: move running instances to another version of their process (issue 22,
items 3, 4 and 8), with a plan file in Camunda's JSON, a dry run, and undo."""

from __future__ import annotations

import getpass
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from bpm.cli.app import DbOpt, app, console, fail, open_engine, print_json, resolve_id, user_errors


def _read_plan(path: Path) -> tuple[Any, dict[str, Any]]:
    """The plan of a file holding Camunda's ``MigrationPlanDto``, or a
    ``MigrationExecutionDto`` (the plan as ``migrationPlan``, beside the instances)."""
    from bpm.engine.migration_plan import MigrationPlan
    from bpm.errors import VariableError
    from bpm.runtime.typed_values import from_typed

    try:
        body = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        fail(f"cannot read the plan {path}: {exc}")
    if not isinstance(body, dict):
        fail(f"the plan {path} is not a JSON object (Camunda's migration plan)")
    raw = body.get("migrationPlan", body)
    if not isinstance(raw, dict) or not raw.get("sourceProcessDefinitionId"):
        fail(
            f"the plan {path} needs sourceProcessDefinitionId, targetProcessDefinitionId and "
            "instructions (write one with: bpm migrate --source ID --target ID)"
        )
    plan = MigrationPlan.from_camunda(raw)
    variables: dict[str, Any] = {}
    for name, value in (raw.get("variables") or {}).items():
        entry = dict(value) if isinstance(value, dict) else {"value": value}
        try:
            variables[str(name)] = from_typed(str(name), entry)
        except VariableError as exc:
            fail(f"{path}: plan variable {exc}")
    return MigrationPlan(
        plan.source_definition_id, plan.target_definition_id, plan.instructions, variables
    ), body


@app.command("migrate")
def migrate(
    plan_file: Annotated[
        Path | None,
        typer.Argument(
            help="A plan in Camunda's JSON (MigrationPlanDto or MigrationExecutionDto)."
        ),
    ] = None,
    instances: Annotated[
        list[str] | None,
        typer.Argument(help="Instance ids (or unique prefixes) to migrate.", show_default=False),
    ] = None,
    all_: Annotated[
        bool, typer.Option("--all", help="Every running instance of the plan's source.")
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Try the plan on each instance; nothing changes."),
    ] = False,
    undo: Annotated[
        str | None,
        typer.Option(help="Move back the instances of this migration (its operation id)."),
    ] = None,
    source: Annotated[
        str | None, typer.Option(help="Print a generated plan from this definition id...")
    ] = None,
    target: Annotated[str | None, typer.Option(help="...to this one.")] = None,
    update_event_triggers: Annotated[
        bool,
        typer.Option(
            "--update-event-triggers", help="With --source/--target: re-plan timers, rename waits."
        ),
    ] = False,
    annotation: Annotated[str | None, typer.Option(help="Why: kept in the operation log.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    db: DbOpt = None,
) -> None:
    """Migrate running instances to another version of their process (Camunda's
    migration). ``--source A --target B`` prints a generated plan (activities with the
    same id and kind mapped) to edit and save; ``bpm migrate PLAN.json ID...`` (or
    ``--all``) migrates in one transaction, all or none; ``--dry-run`` tries the plan on
    each instance in a transaction rolled back and says where its tokens would stand or
    what stops it (exit 1 when one cannot migrate); ``--undo OPERATION`` moves back the
    instances of a migration that did not advance since (exit 1 when some are refused)."""
    from bpm.store.migration import InstanceSelection

    with user_errors():
        engine = open_engine(db)
        who = f"cli:{getpass.getuser()}"
        if undo is not None:
            if plan_file is not None or source or target:
                fail("--undo takes no plan")
            done = engine.migration.undo(undo, by=who, annotation=annotation)
            if as_json:
                print_json(
                    {
                        "operation_id": done.operation_id,
                        "undone": list(done.undone),
                        "refused": dict(done.refused),
                    }
                )
            else:
                console.print(
                    f"moved back {len(done.undone)} instances (operation {done.operation_id})",
                    highlight=False,
                )
                for iid, why in sorted(done.refused.items()):
                    console.print(f"[red]refused[/] {escape(iid)}: {escape(why)}")
            if done.refused:
                raise typer.Exit(1)
            return
        if source or target:
            if not (source and target) or plan_file is not None:
                fail("--source and --target go together, without a plan file")
            assert source is not None and target is not None
            plan = engine.migration.generate(
                source, target, update_event_triggers=update_event_triggers
            )
            print_json(plan.to_camunda())
            return
        if plan_file is None:
            fail("give a plan file (or --source/--target to write one, or --undo)")
        assert plan_file is not None
        plan, body = _read_plan(plan_file)
        ids = [resolve_id(engine, "instance", i) for i in instances or []]
        ids += [str(i) for i in body.get("processInstanceIds") or [] if str(i) not in ids]
        query = None
        if all_:
            query = InstanceSelection(definition_id=plan.source_definition_id)
        if not ids and query is None:
            fail("name the instances to migrate (ids, or --all)")
        if dry_run:
            report, reports = engine.migration.dry_run(plan, ids or None, query)
            _print_dry_run(report, reports, as_json)
            if not report.ok or not all(r.can_migrate for r in reports):
                raise typer.Exit(1)
            return
        moved = engine.migration.execute(plan, ids or None, query, by=who, annotation=annotation)
        if as_json:
            print_json({"operation_id": moved.operation_id, "instances": list(moved.instance_ids)})
        else:
            console.print(
                f"migrated {len(moved.instance_ids)} instances to {plan.target_definition_id} "
                f"(operation {moved.operation_id}; undo: bpm migrate --undo {moved.operation_id})",
                highlight=False,
            )


def _print_dry_run(report: Any, reports: Any, as_json: bool) -> None:
    if as_json:
        print_json(
            {
                "instructionReports": [
                    {"instruction": r.instruction.to_camunda(), "failures": list(r.failures)}
                    for r in report.instruction_reports
                ],
                "instanceReports": [
                    {
                        "processInstanceId": r.instance_id,
                        "canMigrate": r.can_migrate,
                        "failures": list(r.failures),
                        "activityIds": list(r.activities),
                    }
                    for r in reports
                ],
            }
        )
        return
    for r in report.instruction_reports:
        console.print(
            f"[red]instruction[/] {escape(r.instruction.source)} -> "
            f"{escape(r.instruction.target)}: {escape('; '.join(r.failures))}"
        )
    table = Table("instance", "can migrate", "afterwards / why not")
    for r in reports:
        what = ", ".join(r.activities) if r.can_migrate else "; ".join(r.failures)
        table.add_row(r.instance_id, "yes" if r.can_migrate else "[red]no[/]", escape(what))
    console.print(table)
