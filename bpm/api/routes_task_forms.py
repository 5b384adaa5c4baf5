"""Forms of Camunda 7's REST API: ``GET /task/{id}/form`` (the form key and Camunda Forms
reference), ``/task/{id}/deployed-form`` (the ``.form`` JSON deployed with the process) and
``/process-definition/{id}/deployed-start-form``. Form variables and ``submit-form`` (with
the server-side checks) are with the task's variables and its completion."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from bpm.api import bodies as b
from bpm.api import openapi as oa
from bpm.api import schemas as s
from bpm.api import traced
from bpm.api.auth import Principal, principal
from bpm.api.errors import ApiError
from bpm.api.routes_definitions import started
from bpm.api.routes_tasks import visible_task
from bpm.api.starters import check_start
from bpm.api.task_forms import TaskForm, checked_submission, form_of, task_form
from bpm.api.variables import from_camunda, to_camunda
from bpm.engine import Engine
from bpm.errors import NotFound
from bpm.forms import generated_values

router = APIRouter()
Who = Annotated[Principal, Depends(principal)]


class FormOut(s.Dto):
    key: str | None
    contextPath: str | None
    camundaFormRef: dict[str, Any] | None


def _engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


def form_json(form: TaskForm) -> dict[str, Any]:
    return {"key": form.key, "contextPath": None, "camundaFormRef": form.ref}


def _no_form(what: str) -> ApiError:
    return ApiError(
        404,
        "InvalidRequestException",
        f"No deployed Camunda Form for {what}: its formKey must be "
        "camunda-forms:deployment:NAME.form, or a formRef to a deployed .form",
    )


def _form_document(form: TaskForm, what: str) -> Response:
    if form.document is None:
        raise _no_form(what)
    return JSONResponse(form.document)


@router.get("/task/{task_id}/form", response_model=FormOut, responses=oa.errors(404))
async def form(task_id: str, request: Request, who: Who) -> Response:
    """The task's ``formKey`` and ``camundaFormRef`` (``{key, binding, version}``)."""
    row = await visible_task(request, who, task_id)
    return JSONResponse(form_json(await task_form(request, row)))


@router.get(
    "/task/{task_id}/deployed-form",
    responses={200: {"content": {"application/json": {}}, "description": "the .form JSON"}},
)
async def deployed_form(task_id: str, request: Request, who: Who) -> Response:
    row = await visible_task(request, who, task_id)
    return _form_document(await task_form(request, row), f"task {task_id}")


async def start_form(request: Request, definition_id: str) -> TaskForm:
    """The form of the definition's none start event; 404 for an unknown definition."""
    engine = _engine(request)

    def read() -> TaskForm | None:
        if engine.definition_by_id(definition_id) is None:
            return None
        try:
            model = engine.model(definition_id)
        except NotFound:
            return None
        plain = [x for x in model.start_events if x.timer is None and x.event is None]
        return form_of(engine, definition_id, plain[0] if plain else None)

    found = await run_in_threadpool(read)
    if found is None:
        raise ApiError(
            404, "InvalidRequestException", f"No matching definition with id {definition_id}"
        )
    return found


@router.get(
    "/process-definition/{definition_id}/deployed-start-form",
    responses={200: {"content": {"application/json": {}}, "description": "the .form JSON"}},
)
async def deployed_start_form(definition_id: str, request: Request, who: Who) -> Response:
    """The Camunda Form of the definition's none start event (for a user: of a process
    they may start, :mod:`bpm.api.starters`)."""
    await check_start(request, who, definition_id, "read process definitions")
    found = await start_form(request, definition_id)
    return _form_document(found, f"the start event of {definition_id}")


@router.get(
    "/process-definition/{definition_id}/form-variables",
    response_model=dict[str, s.VariableValueDto],
    responses=oa.errors(404),
)
async def start_form_variables(definition_id: str, request: Request, who: Who) -> Response:
    """A generated start form's fields with their defaults (``${var}`` defaults: none yet)."""
    await check_start(request, who, definition_id, "read process definitions")
    found = await start_form(request, definition_id)
    return JSONResponse(to_camunda(generated_values(found.fields, {}), True))


@router.post("/process-definition/{definition_id}/submit-form", responses=oa.errors(400, 404))
async def submit_start_form(
    definition_id: str, body: b.StartBody, request: Request, who: Who
) -> Response:
    """Start an instance with the start form's values, checked first against the start
    event's form (generated fields, a Camunda Form's rules): 400 naming the field, and no
    instance is started. A user who is no admin may start only a process naming them or
    one of their groups as candidate starter (:mod:`bpm.api.starters`; 403 otherwise)."""
    await check_start(request, who, definition_id)
    found = await start_form(request, definition_id)
    variables = checked_submission(
        found, definition_id, from_camunda(body.variables) or {}, what="the start form of"
    )
    engine = _engine(request)
    with traced.caller_context(request):
        inst = await run_in_threadpool(
            lambda: engine.start_definition(definition_id, variables, business_key=body.businessKey)
        )
    return await started(request, inst, body)
