"""The task list: its page (``/tasklist``), its assets, and the few calls it needs beside
``/engine-rest``: signing in and out (a session cookie, see
:mod:`bpm.api.tasklist_session`) and the form of a task as one bpmn.io form-js schema
(a deployed Camunda Form as it is; a generated ``camunda:formData`` form turned into one).
Everything else the page does goes through ``/engine-rest`` as the signed-in user, under
the same rules (:mod:`bpm.api.task_access`), the submitted form checked again on the server.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from pydantic import Field
from starlette.concurrency import run_in_threadpool

from bpm.api.auth import Authenticator, Principal, principal
from bpm.api.bodies import Body
from bpm.api.errors import ApiError
from bpm.api.routes_task_forms import start_form
from bpm.api.routes_tasks import visible_task
from bpm.api.starters import check_start, may_start_sync
from bpm.api.task_access import check_task_caller
from bpm.api.task_forms import TaskForm, task_form
from bpm.api.tasklist_session import COOKIE, TasklistSessions, cookie_of, session_principal
from bpm.engine import Engine
from bpm.identity import IdentityProvider
from bpm.identity.passwords import MAX_LENGTH
from bpm.model.nodes import FormFieldSpec
from bpm.tasklist import STATIC

pages = APIRouter(include_in_schema=False)
router = APIRouter(include_in_schema=False)


async def tasklist_caller(request: Request) -> Principal:
    """The signed-in user of the session cookie, else whoever the Authorization header
    names (:func:`bpm.api.auth.principal`)."""
    if "authorization" not in request.headers and cookie_of(request.headers) is not None:
        _, sessions, identity = _parts(request)
        who = await run_in_threadpool(
            session_principal, sessions, identity, request.headers, request.method
        )
        if who is not None:
            return who
    return await principal(request)


Who = Annotated[Principal, Depends(tasklist_caller)]

#: The page's policy: its own scripts and styles only (form-js sets inline styles).
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; form-action 'none'; "
    "frame-ancestors 'none'; base-uri 'none'"
)


@pages.get("/tasklist")
async def page() -> Response:
    return FileResponse(
        STATIC / "index.html",
        media_type="text/html",
        headers={"Content-Security-Policy": CSP, "Cache-Control": "no-cache"},
    )


class SignIn(Body):
    username: str = Field(min_length=1, max_length=255)
    password: str = Field(max_length=MAX_LENGTH)


def _parts(request: Request) -> tuple[Authenticator, TasklistSessions, IdentityProvider]:
    return request.app.state.auth, request.app.state.tasklist_sessions, request.app.state.identity


@router.post("/tasklist/api/session")
async def sign_in(body: SignIn, request: Request) -> Response:
    """``{"username", "password"}``: the session cookie and ``{"user", "csrf"}``; 401 for
    a wrong password, 429 while failed sign-ins must wait (per user and per address)."""
    auth, sessions, identity = _parts(request)
    address = request.client.host if request.client else None
    person = await run_in_threadpool(
        lambda: auth.sign_in(body.username, body.password, address=address, challenge=False)
    )
    version = await run_in_threadpool(identity.password_version, person.id) or ""
    cookie = sessions.issue(person.id, version)
    resp = JSONResponse({"user": person.id, "csrf": sessions.csrf(cookie)})
    resp.set_cookie(
        COOKIE, cookie, max_age=sessions.ttl, httponly=True, samesite="strict", path="/",
        secure=request.url.scheme == "https",
    )  # fmt: skip
    return resp


@router.get("/tasklist/api/session")
async def session(request: Request) -> Response:
    """Who is signed in, and the CSRF token of their session (401 when nobody)."""
    _, sessions, identity = _parts(request)
    who = await run_in_threadpool(session_principal, sessions, identity, request.headers, "GET")
    cookie = cookie_of(request.headers)
    if who is None or who.person is None or cookie is None:
        raise ApiError(401, "AuthenticationException", "not signed in")
    return JSONResponse(
        {"user": who.person.id, "groups": sorted(who.person.groups), "csrf": sessions.csrf(cookie)}
    )


@router.delete("/tasklist/api/session", status_code=204)
async def sign_out() -> Response:
    resp = Response(status_code=204)
    resp.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
    return resp


def _generated_schema(fields: tuple[FormFieldSpec, ...]) -> dict[str, Any]:
    """A generated form as a form-js schema (the same validation as the server's)."""
    components: list[dict[str, Any]] = []
    for f in fields:
        rules = {name.lower(): config for name, config in f.constraints}
        validate: dict[str, Any] = {}
        if "required" in rules:
            validate["required"] = True
        kind = f.type.lower()
        c: dict[str, Any] = {"key": f.id, "label": f.label or f.id, "id": "Field_" + f.id}
        if kind in ("long", "integer", "short", "double"):
            c["type"] = "number"
            for name in ("min", "max"):
                if rules.get(name) not in (None, ""):
                    validate[name] = float(rules[name] or 0)
        elif kind == "boolean":
            c["type"] = "checkbox"
        elif kind == "enum":
            c["type"] = "select"
            c["values"] = [{"value": v, "label": label} for v, label in f.values]
        else:
            c["type"] = "textfield"
            for name, key in (("minlength", "minLength"), ("maxlength", "maxLength")):
                if rules.get(name) not in (None, ""):
                    validate[key] = int(float(rules[name] or 0))
        if "readonly" in rules:
            c["readonly"] = True
        if validate:
            c["validate"] = validate
        components.append(c)
    return {"type": "default", "id": "generated", "components": components, "schemaVersion": 16}


def _form_json(found: TaskForm) -> dict[str, Any]:
    schema = found.document
    if schema is None and found.fields:
        schema = _generated_schema(found.fields)
    return {"schema": schema, "formKey": found.key}


@router.get("/tasklist/api/task/{task_id}/form")
async def form(task_id: str, request: Request, who: Who) -> Response:
    """``{"schema"}``: the task's form as form-js renders it (null: the task has none
    the page can render, e.g. an embedded form key), or 404 for a task the user may not see."""
    row = await visible_task(request, who, task_id)
    return JSONResponse(_form_json(await task_form(request, row)))


def _engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


@router.get("/tasklist/api/task/{task_id}/diagram")
async def diagram(task_id: str, request: Request, who: Who) -> Response:
    """``{"xml", "activityId"}``: the BPMN XML of the task's process (null for a builder
    model) and the element the task stands on; 404 for a task the user may not see."""
    row = await visible_task(request, who, task_id)
    xml = await run_in_threadpool(_engine(request).definition_source, row.definition_id)
    return JSONResponse(
        {
            "xml": xml or None,
            "activityId": row.task.node_id,
            "processInstanceId": row.task.instance_id,
        }
    )


@router.get("/tasklist/api/start")
async def startable(request: Request, who: Who) -> Response:
    """The processes the caller may start from the task list (their latest versions):
    ``[{"id", "key", "name", "version"}]``, by name."""
    check_task_caller(who)
    engine = _engine(request)

    def read() -> list[dict[str, Any]]:
        latest: dict[str, Any] = {}
        for d in engine.definitions():
            if d.key not in latest or d.version > latest[d.key].version:
                latest[d.key] = d
        out = []
        for d in latest.values():
            if d.suspended or not may_start_sync(engine, request, who, d):
                continue
            out.append({"id": d.id, "key": d.key, "name": d.name or d.key, "version": d.version})
        return sorted(out, key=lambda x: (str(x["name"]).lower(), x["key"]))

    return JSONResponse(await run_in_threadpool(read))


@router.get("/tasklist/api/process-definition/{definition_id}/form")
async def start_form_schema(definition_id: str, request: Request, who: Who) -> Response:
    """The start form as form-js renders it (``{"schema", "formKey"}``), for a process the
    caller may start (403 otherwise, 404 for no such definition)."""
    await check_start(request, who, definition_id, "read process definitions")
    return JSONResponse(_form_json(await start_form(request, definition_id)))
