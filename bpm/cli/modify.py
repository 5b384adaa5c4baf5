"""``bpm modify``: the activity instance tree of an instance, and modifying it (issue 22)."""

from __future__ import annotations

import getpass
import json
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.tree import Tree

from bpm.cli.app import DbOpt, app, console, fail, open_engine, print_json, resolve_id, user_errors
from bpm.engine import ActivityInstance
from bpm.engine.modification import (
    Cancel,
    Instruction,
    StartAfter,
    StartBefore,
    StartTransition,
)

Ids = Annotated[list[str] | None, typer.Option(show_default=False)]


def _label(ai: ActivityInstance) -> str:
    where = f"[bold]{escape(ai.activity_id)}[/] {escape(ai.activity_type)}"
    if ai.incident_ids:
        where += f" [red]incidents {', '.join(ai.incident_ids)}[/]"
    return f"{where}  [dim]{escape(ai.id)}[/]"


def tree_view(ai: ActivityInstance, into: Tree | None = None) -> Tree:
    """The tree as rich prints it: activity instances, then their transition instances."""
    node = into.add(_label(ai)) if into is not None else Tree(_label(ai))
    for child in ai.child_activity_instances:
        tree_view(child, node)
    for tr in ai.child_transition_instances:
        extra = f" [red]incidents {', '.join(tr.incident_ids)}[/]" if tr.incident_ids else ""
        node.add(
            f"[italic]{escape(tr.activity_id)}[/] {escape(tr.activity_type)} waits for a worker"
            f"{extra}  [dim]{escape(tr.id)}[/]"
        )
    return node


def tree_json(ai: ActivityInstance) -> dict[str, Any]:
    return {
        "id": ai.id,
        "activity_id": ai.activity_id,
        "activity_type": ai.activity_type,
        "incident_ids": list(ai.incident_ids),
        "children": [tree_json(c) for c in ai.child_activity_instances],
        "transitions": [
            {"id": t.id, "activity_id": t.activity_id, "incident_ids": list(t.incident_ids)}
            for t in ai.child_transition_instances
        ],
    }


def plan_instructions(path: Path) -> tuple[list[Instruction], dict[str, Any]]:
    """The instructions of a plan file in Camunda's JSON (a modification body: with
    ``instructions``, ``skipIoMappings``, ``annotation``), typed values in ``variables``."""
    from bpm.errors import VariableError
    from bpm.runtime.typed_values import from_typed

    try:
        body = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        fail(f"cannot read the plan {path}: {exc}")
    if not isinstance(body, dict) or not isinstance(body.get("instructions"), list):
        fail(f"the plan {path} needs an 'instructions' list (Camunda's modification body)")
    out: list[Instruction] = []
    for index, raw in enumerate(body["instructions"]):
        where = f"{path}: instruction {index}"
        if not isinstance(raw, dict):
            fail(f"{where} is not a JSON object")
        kind = raw.get("type")
        plain: dict[str, Any] = {}
        mine: dict[str, Any] = {}
        for name, value in (raw.get("variables") or {}).items():
            entry = dict(value) if isinstance(value, dict) else {"value": value}
            into = mine if entry.pop("local", False) else plain
            try:
                into[str(name)] = from_typed(str(name), entry)
            except VariableError as exc:
                fail(f"{where}: {exc}")
        ancestor = raw.get("ancestorActivityInstanceId")
        if kind == "cancel":
            out.append(
                Cancel(
                    activity_id=raw.get("activityId"),
                    activity_instance_id=raw.get("activityInstanceId"),
                    transition_instance_id=raw.get("transitionInstanceId"),
                    current_only=bool(raw.get("cancelCurrentActiveActivityInstances")),
                )
            )
        elif kind == "startTransition":
            out.append(StartTransition(str(raw.get("transitionId")), plain, mine, ancestor))
        elif kind in ("startBeforeActivity", "startAfterActivity"):
            made = StartBefore if kind == "startBeforeActivity" else StartAfter
            out.append(made(str(raw.get("activityId")), plain, mine, ancestor))
        else:
            fail(
                f"{where}: type {kind!r} is none of startBeforeActivity, startAfterActivity, "
                "startTransition, cancel"
            )
    return out, body


@app.command("modify")
def modify(
    instance_id: Annotated[str, typer.Argument(help="The instance id, or a unique prefix.")],
    start_before: Ids = None,
    start_after: Ids = None,
    start_transition: Ids = None,
    cancel: Annotated[
        list[str] | None,
        typer.Option(help="Cancel every token at this activity.", show_default=False),
    ] = None,
    cancel_instance: Annotated[
        list[str] | None,
        typer.Option(
            help="Cancel this activity or transition instance (an id the tree shows).",
            show_default=False,
        ),
    ] = None,
    var: Annotated[
        list[str] | None,
        typer.Option("--var", help="NAME=VALUE written with the first start.", show_default=False),
    ] = None,
    plan: Annotated[
        Path | None,
        typer.Option(help="A JSON file in Camunda's modification body (instructions...)."),
    ] = None,
    annotation: Annotated[str | None, typer.Option(help="Why: kept in the trail.")] = None,
    skip_io_mappings: Annotated[
        bool, typer.Option("--skip-io-mappings", help="Started activities skip input mappings.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the tree as JSON.")] = False,
    db: DbOpt = None,
) -> None:
    """Show where an instance's tokens stand (its activity instance tree), or start and
    cancel activities of it in one transaction (Camunda's modification): starts
    (--start-before, --start-after, --start-transition) first, then cancels (--cancel,
    --cancel-instance), or the instructions of --plan in its order. A bad instruction
    changes nothing. The tree after it is printed."""
    from bpm.cli.app import parse_vars

    with user_errors():
        engine = open_engine(db)
        full = resolve_id(engine, "instance", instance_id)
        instructions: list[Instruction] = []
        variables = parse_vars(var)
        for activity in start_before or []:
            instructions.append(StartBefore(activity))
        for activity in start_after or []:
            instructions.append(StartAfter(activity))
        for flow in start_transition or []:
            instructions.append(StartTransition(flow))
        if variables and not instructions:
            fail("--var goes with a start (--start-before, --start-after, --start-transition)")
        if variables:
            first = instructions[0]
            assert not isinstance(first, Cancel)
            instructions[0] = replace(first, variables=variables)
        instructions += [Cancel(activity_id=a) for a in cancel or []]
        for given in cancel_instance or []:
            tree = engine.activity_instances(full)
            if any(t.id == given for t in tree.transitions()):
                instructions.append(Cancel(transition_instance_id=given))
            else:
                instructions.append(Cancel(activity_instance_id=given))
        skip = skip_io_mappings
        if plan is not None:
            if instructions:
                fail("give --plan or instruction options, not both")
            instructions, body = plan_instructions(plan)
            skip = skip or bool(body.get("skipIoMappings"))
            annotation = annotation or body.get("annotation")
        if instructions:
            inst = engine.modify(
                full,
                instructions,
                skip_io_mappings=skip,
                annotation=annotation,
                by=f"cli:{getpass.getuser()}",
            )
            console.print(f"{inst.id}: {inst.state.value}", highlight=False)
        tree = engine.activity_instances(full)
        if as_json:
            print_json(tree_json(tree))
        else:
            console.print(tree_view(tree))
