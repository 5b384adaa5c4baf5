"""The cockpit's pages (``/cockpit``) and its native read API (``/api/...``).

Every read goes through ``engine.cockpit`` or the engine facade; every list is paged or
bounded. Actions are in :mod:`bpm.api.routes_cockpit_actions`.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import FileResponse, JSONResponse, RedirectResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from bpm.api import cockpit_json as j
from bpm.api.auth import Authenticator, Principal
from bpm.api.celery_workers import CeleryWorkers
from bpm.api.cockpit_auth import (
    COOKIE,
    Caller,
    Sessions,
    check_origin,
    cockpit_caller,
)
from bpm.api.errors import ApiError, bad_request
from bpm.cockpit.links import PAGES, hash_route
from bpm.engine import Engine
from bpm.engine.cockpit import InstanceFilter
from bpm.runtime.states import InstanceState

STATIC = Path(__file__).resolve().parent.parent / "cockpit" / "static"
CSP = (
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
    "font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
    "form-action 'self'"
)

router = APIRouter()
pages = APIRouter()
Reader = Annotated[Caller, Depends(cockpit_caller)]
ShortText = Annotated[str | None, Query(max_length=255)]
MAX_PAGE = 200


def engine_of(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


def check_id(value: str, what: str) -> str:
    if not value or len(value) > 300:
        raise bad_request(f"{what} must be 1 to 300 characters")
    return value


# -- pages ------------------------------------------------------------------------------------


def _page_headers() -> dict[str, str]:
    return {
        "Content-Security-Policy": CSP,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-cache",
    }


@pages.get("/cockpit", include_in_schema=False)
async def cockpit_index() -> Response:
    return FileResponse(STATIC / "index.html", media_type="text/html", headers=_page_headers())


@pages.get("/cockpit/", include_in_schema=False)
async def cockpit_slash() -> Response:
    return RedirectResponse("/cockpit", status_code=308)


@pages.get("/cockpit/{page}", include_in_schema=False)
async def cockpit_page(page: str, request: Request) -> Response:
    """A page's path form (``/cockpit/incidents``, ``/cockpit/instances?state=failed``)
    goes to its hash route (``/cockpit#/incidents``): links that survive tools that drop
    the part after ``#``, printed by ``bpm start`` / ``bpm show`` (docs/cockpit.md)."""
    return _to_hash_route(request, page, "")


@pages.get("/cockpit/{page}/{rest:path}", include_in_schema=False)
async def cockpit_page_of(page: str, rest: str, request: Request) -> Response:
    """``/cockpit/instances/ID`` -> ``/cockpit#/instances/ID`` (any page, any id)."""
    return _to_hash_route(request, page, rest)


def _to_hash_route(request: Request, page: str, rest: str) -> Response:
    if page not in PAGES:
        known = ", ".join(f"/cockpit/{p}" for p in sorted(PAGES))
        raise ApiError(
            404,
            "RestException",
            f"no resource at {request.method} {request.url.path}: the cockpit's pages are {known}",
        )
    root = request.scope.get("root_path", "")
    target = f"{root}/cockpit" + hash_route(page, rest.strip("/"), request.url.query)
    return RedirectResponse(target, status_code=302)


# -- session ----------------------------------------------------------------------------------


def _session_json(request: Request, caller: Caller | None) -> dict[str, Any]:
    auth: Authenticator = request.app.state.auth
    if caller is None:
        return {
            "authenticated": False,
            "open": auth.open,
            "key": None,
            "role": None,
            "canAct": False,
            "csrf": None,
        }
    who = caller.principal
    if caller.via == "open":
        can_act = bool(getattr(request.app.state, "cockpit_open_actions", False))
    else:
        can_act = who.may_act and (caller.via == "session" or caller.scheme == "bearer")
    return {
        "authenticated": True,
        "open": caller.via == "open",
        "key": who.key.id if who.key else None,
        "role": who.key.role if who.key else ("operator" if can_act else "viewer"),
        "canAct": can_act,
        "csrf": caller.csrf,
    }


@router.get("/session")
async def session(request: Request) -> Response:
    """Who the cockpit is talking to; ``authenticated: false`` means "show the login"."""
    try:
        caller = await cockpit_caller(request)
    except ApiError as exc:
        if exc.status != 401:
            raise
        caller = None
    return JSONResponse(_session_json(request, caller), headers={"Cache-Control": "no-store"})


class LoginBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    secret: str = Field(min_length=1, max_length=1024)


@router.post("/session")
async def login(body: LoginBody, request: Request) -> Response:
    """Log in with an API key's secret: sets the session cookie (HttpOnly, SameSite=Strict)."""
    check_origin(request)
    auth: Authenticator = request.app.state.auth
    sessions: Sessions = request.app.state.sessions
    key = auth.by_secret(body.secret)
    if key is None or auth.open:
        raise ApiError(401, "AuthenticationException", "wrong API key secret")
    if key.topics is not None:
        raise ApiError(403, "AuthorizationException", f"API key '{key.id}' is a worker key")
    cookie = sessions.issue(key)
    caller = Caller(Principal(key), "session", csrf=sessions.csrf(key, cookie))
    resp = JSONResponse(_session_json(request, caller))
    resp.set_cookie(
        COOKIE,
        cookie,
        max_age=sessions.ttl,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )
    return resp


@router.delete("/session")
async def logout(request: Request, caller: Reader) -> Response:
    check_origin(request)
    resp = JSONResponse({"authenticated": False})
    resp.delete_cookie(COOKIE, path="/")
    return resp


# -- definitions ------------------------------------------------------------------------------


@router.get("/definitions")
async def definitions(request: Request, caller: Reader) -> Response:
    found = await run_in_threadpool(engine_of(request).cockpit.definitions)
    return JSONResponse({"items": [j.summary_json(s) for s in found]})


@router.get("/definitions/{definition_id}")
async def definition(definition_id: str, request: Request, caller: Reader) -> Response:
    check_id(definition_id, "definition id")
    cockpit = engine_of(request).cockpit

    def read() -> dict[str, Any]:
        summary, groups = cockpit.definition_summary(definition_id)
        return {**j.summary_json(summary), "incidentsByNode": [j.group_json(g) for g in groups]}

    return JSONResponse(await run_in_threadpool(read))


@router.get("/definitions/{definition_id}/xml")
async def definition_xml(definition_id: str, request: Request, caller: Reader) -> Response:
    """BPMN XML to draw: the deployed file, or the model laid out automatically."""
    check_id(definition_id, "definition id")
    xml = await run_in_threadpool(engine_of(request).cockpit.diagram_xml, definition_id)
    # The deployed file is whatever its author wrote (a <script> in an XHTML namespace
    # runs when a browser opens XML): served as a download, and inert if opened anyway.
    # The cockpit reads it with fetch(), which neither header affects. Definitions never
    # change: the browser may keep it.
    name = re.sub(r"[^A-Za-z0-9._-]", "_", definition_id)[:100]
    return Response(
        xml,
        media_type="application/xml",
        headers={
            "Cache-Control": "private, max-age=3600",
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "default-src 'none'; sandbox",
            "Content-Disposition": f'attachment; filename="{name}.bpmn"',
        },
    )


# -- instances --------------------------------------------------------------------------------


def _parse_time(value: str | None, name: str) -> datetime | None:
    if value is None or value == "":
        return None
    try:
        at = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise bad_request(
            f"{name}={value!r} is not an ISO 8601 time (e.g. 2026-11-30T09:00:00Z)"
        ) from None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _parse_states(value: str | None) -> tuple[InstanceState, ...]:
    if not value:
        return ()
    out = []
    for raw in value.split(","):
        try:
            out.append(InstanceState(raw.strip()))
        except ValueError:
            names = ", ".join(s.value for s in InstanceState)
            raise bad_request(f"state={raw.strip()!r} is not one of {names}") from None
    return tuple(dict.fromkeys(out))


def _parse_bool(value: str | None, name: str) -> bool | None:
    if value is None or value == "":
        return None
    if value.lower() in ("true", "1", "yes"):
        return True
    if value.lower() in ("false", "0", "no"):
        return False
    raise bad_request(f"{name}={value!r} must be true or false")


@router.get("/instances")
async def instances(
    request: Request,
    caller: Reader,
    definition_key: ShortText = None,
    definition_id: Annotated[str | None, Query(max_length=300)] = None,
    state: Annotated[str | None, Query(max_length=200)] = None,
    business_key: ShortText = None,
    started_after: Annotated[str | None, Query(max_length=64)] = None,
    started_before: Annotated[str | None, Query(max_length=64)] = None,
    has_incident: Annotated[str | None, Query(max_length=8)] = None,
    id: Annotated[str | None, Query(max_length=300)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
    cursor: Annotated[str | None, Query(max_length=600)] = None,
) -> Response:
    """A page of instances, newest first, with every given filter; ``next`` pages on."""
    after = _parse_time(started_after, "started_after")
    before = _parse_time(started_before, "started_before")
    if after is not None and before is not None and after >= before:
        raise bad_request("started_after must be earlier than started_before")
    f = InstanceFilter(
        definition_key=definition_key or None,
        definition_id=definition_id or None,
        states=_parse_states(state),
        business_key=business_key or None,
        started_after=after,
        started_before=before,
        has_incident=_parse_bool(has_incident, "has_incident"),
        instance_id=(id or "").strip() or None,
    )
    page_from = j.decode_cursor(cursor) if cursor else None
    found = await run_in_threadpool(
        lambda: engine_of(request).cockpit.instances(f, limit=limit, cursor=page_from)
    )
    return JSONResponse(j.page_json(found))


@router.get("/instances/{instance_id}")
async def instance(instance_id: str, request: Request, caller: Reader) -> Response:
    check_id(instance_id, "instance id")
    view = await run_in_threadpool(engine_of(request).cockpit.instance, instance_id)
    return JSONResponse(j.instance_view_json(view))


@router.get("/instances/{instance_id}/trail")
async def trail(
    instance_id: str,
    request: Request,
    caller: Reader,
    after_seq: Annotated[int | None, Query(ge=0, le=2**62)] = None,
    limit: Annotated[int, Query(ge=1, le=2000)] = 500,
) -> Response:
    """The instance's history events in order (``after_seq``: only newer ones)."""
    check_id(instance_id, "instance id")
    events = await run_in_threadpool(
        lambda: engine_of(request).cockpit.trail(instance_id, after_seq=after_seq, limit=limit)
    )
    return JSONResponse({"items": [j.event_json(e) for e in events]})


# -- incidents and work -----------------------------------------------------------------------


@router.get("/incidents")
async def incidents(
    request: Request,
    caller: Reader,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
) -> Response:
    """Open incidents grouped by definition and node, and the oldest ``limit`` of them."""
    engine = engine_of(request)

    def read() -> dict[str, Any]:
        groups = engine.cockpit.incident_groups()
        items = engine.incidents(limit=limit)
        return {
            "groups": [j.group_json(g) for g in groups],
            "items": [j.incident_json(i) for i in items],
            "total": sum(g.count for g in groups),
        }

    return JSONResponse(await run_in_threadpool(read))


@router.get("/work")
async def work(request: Request, caller: Reader) -> Response:
    """Queues and who works on them: ready tokens, topics, due timers, lock owners, and
    the Celery workers that answer a ping (when ``BPM_BROKER_URL`` is set)."""
    overview = await run_in_threadpool(engine_of(request).cockpit.work)
    celery: CeleryWorkers | None = getattr(request.app.state, "celery_workers", None)
    if celery is not None:
        overview = replace(overview, celery_workers=await run_in_threadpool(celery.names))
    return JSONResponse(j.work_json(overview))
