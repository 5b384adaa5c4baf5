"""The form of a user task as the REST layer needs it: the model's user task node (form
key, Camunda Forms reference, generated fields), its deployed ``.form`` document, and the
check of a submitted form (a 400 naming the field, before anything changes)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import Request
from starlette.concurrency import run_in_threadpool

from bpm.api.errors import ApiError
from bpm.engine import Engine
from bpm.engine.queries import TaskRow
from bpm.errors import NotFound
from bpm.forms import FormInvalid, check_camunda_form, check_generated
from bpm.forms.deployed import find_form
from bpm.model import nodes as n
from bpm.model.nodes import FormFieldSpec


@dataclass(frozen=True)
class TaskForm:
    """What the model says of a task's form (every part may be empty)."""

    key: str | None
    ref: dict[str, str] | None
    fields: tuple[FormFieldSpec, ...]
    document: dict[str, Any] | None  # the deployed Camunda Form, when it names one


def _engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


def form_of(engine: Engine, definition_id: str, node: n.Node | None) -> TaskForm:
    key = getattr(node, "form_key", None)
    ref = dict(getattr(node, "form_ref", None) or {}) or None
    fields = tuple(getattr(node, "form_fields", ()) or ())
    document = None
    if key or ref:
        definition = engine.definition_by_id(definition_id)
        if definition is not None:
            document = find_form(engine, definition, key, ref)
    return TaskForm(key, ref, fields, document)


async def task_form(request: Request, row: TaskRow) -> TaskForm:
    engine = _engine(request)

    def read() -> TaskForm:
        try:
            model = engine.model(row.definition_id)
        except NotFound:
            return TaskForm(None, None, (), None)
        return form_of(engine, row.definition_id, model.nodes.get(row.task.node_id))

    return await run_in_threadpool(read)


def checked_submission(
    form: TaskForm, task_id: str, variables: dict[str, Any], *, what: str = "task form"
) -> dict[str, Any]:
    """The variables to complete with (generated fields typed); 400 naming the field that
    fails a check of the form."""
    try:
        out = check_generated(form.fields, variables) if form.fields else dict(variables)
        if form.document is not None:
            check_camunda_form(form.document, out)
    except FormInvalid as exc:
        raise ApiError(
            400, "InvalidRequestException", f"Cannot submit {what} {task_id}: {exc}"
        ) from None
    return out
