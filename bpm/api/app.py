"""The FastAPI application: ``/engine-rest`` (Camunda 7 compatible), the cockpit
(``/cockpit`` pages, ``/api`` native JSON), ``/health/*`` and ``/openapi.json``.

``/metrics`` serves Prometheus metrics (:mod:`bpm.api.metrics`).

Configuration comes from arguments or the environment: ``BPM_DATABASE_URL``,
``BPM_API_KEYS`` (see :mod:`bpm.api.auth`), ``BPM_API_INSECURE_NO_AUTH=1`` to serve without
keys, ``BPM_API_MAX_PENDING_POLLS`` (default 1000), ``BPM_API_MAX_POLLS_PER_KEY`` (default:
an equal share of those per key that may poll), ``BPM_API_MAX_BODY_BYTES`` (default: what
one request may store, ``BPM_MAX_UPDATE_BYTES`` (1 MiB), plus 64 KiB for the JSON around
it), ``BPM_API_MAX_DEPLOYMENT_BYTES`` (``/deployment/create``, default 16 MiB) and
``BPM_API_MAX_FETCH_BYTES`` (default 8 MiB: a fetch-and-lock answer stops before the task
that would go over it, and gives that task and the rest back).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.responses import JSONResponse
from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bpm import structured_logs
from bpm.api import errors, openapi
from bpm.api import metrics as api_metrics
from bpm.api.auth import VIEWER, ApiKey, Authenticator, keys_from_env
from bpm.api.auth_gate import AuthGate
from bpm.api.batching import CompletionBatcher, MessageBatcher
from bpm.api.celery_workers import CeleryWorkers
from bpm.api.cockpit_auth import Sessions
from bpm.api.errors import error_response
from bpm.api.headers import SecurityHeaders
from bpm.api.keyless import DEFAULT_BURST, DEFAULT_RATE, KeylessLimit
from bpm.api.longpoll import LongPollHub
from bpm.api.routes_batches import router as batches_router
from bpm.api.routes_cockpit import STATIC
from bpm.api.routes_cockpit import pages as cockpit_pages
from bpm.api.routes_cockpit import router as cockpit_router
from bpm.api.routes_cockpit_actions import router as cockpit_actions
from bpm.api.routes_cockpit_decisions import router as cockpit_decisions
from bpm.api.routes_decision_history import router as decision_history_router
from bpm.api.routes_decisions import router as decisions_router
from bpm.api.routes_definitions import router as definitions_router
from bpm.api.routes_deployments import router as deployments_router
from bpm.api.routes_docs import router as docs_router
from bpm.api.routes_external import router as external_router
from bpm.api.routes_filters import router as filters_router
from bpm.api.routes_health import router as health_router
from bpm.api.routes_history import router as history_router
from bpm.api.routes_identity import router as identity_router
from bpm.api.routes_messages import router as messages_router
from bpm.api.routes_migration import router as migration_router
from bpm.api.routes_modification import router as modification_router
from bpm.api.routes_process import router as process_router
from bpm.api.routes_task_comments import router as task_comments_router
from bpm.api.routes_task_forms import router as task_forms_router
from bpm.api.routes_task_variables import router as task_variables_router
from bpm.api.routes_tasklist import pages as tasklist_pages
from bpm.api.routes_tasklist import router as tasklist_router
from bpm.api.routes_tasks import router as task_router
from bpm.api.routes_tenants import router as tenants_router
from bpm.api.routes_variables import router as variables_router
from bpm.api.task_access import authorization_from_env
from bpm.api.tasklist_session import TasklistSessions
from bpm.api.worker_ids import WorkerIds
from bpm.contrib.otel_env import trace_from_env
from bpm.engine import Engine
from bpm.errors import ConfigurationError
from bpm.identity import IdentityProvider, identity_from_env
from bpm.runtime.external import NOTIFY_CHANNEL
from bpm.store.db import libpq_dsn
from bpm.tasklist import STATIC as TASKLIST_STATIC

PREFIX = "/engine-rest"
#: Room for the JSON around the variables of a request (names, type wrappers, fields).
BODY_ENVELOPE = 64 * 1024
#: Deployments carry BPMN files (each at most 5 MB), not variables: their own limit.
DEFAULT_MAX_DEPLOYMENT_BODY = 16 * 1024 * 1024
DEPLOYMENT_PATH = PREFIX + "/deployment/create"
DEFAULT_MAX_FETCH_BYTES = 8 * 1024 * 1024


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ConfigurationError(f"{name}={raw!r} is not an integer") from None


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name, "")
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        raise ConfigurationError(f"{name}={raw!r} is not a number") from None


class BodyLimit:
    """Refuse request bodies over ``limit`` bytes with 413, reading no more than that.

    A body announced with ``Content-Length`` is judged by it before a byte of it is read
    (the server never hands over more). A body without one (chunked) is read here, chunk
    by chunk, up to the limit: at one byte more the answer is 413 and the rest is never
    read; under it the app gets the body as one message (it would have read it all
    anyway). ``per_path`` gives some paths a limit of their own (deployments)."""

    def __init__(self, app: ASGIApp, limit: int, per_path: dict[str, int] | None = None) -> None:
        self.app = app
        self.limit = limit
        self.per_path = dict(per_path or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.per_path.get(scope["path"], self.limit)
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    size = int(value)
                except ValueError:
                    size = limit + 1
                if size > limit:
                    await self._too_large(limit, scope, receive, send)
                    return
                await self.app(scope, receive, send)
                return
        chunks: list[bytes] = []
        seen = 0
        while True:
            msg = await receive()
            if msg["type"] != "http.request":  # the client went away
                return
            chunk = msg.get("body", b"")
            seen += len(chunk)
            if seen > limit:
                await self._too_large(limit, scope, receive, send)
                return
            chunks.append(chunk)
            if not msg.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()  # then only http.disconnect (long polls wait for it)

        await self.app(scope, replay, send)

    async def _too_large(self, limit: int, scope: Scope, receive: Receive, send: Send) -> None:
        resp = error_response(
            413,
            "InvalidRequestException",
            f"request body over the limit of {limit} bytes",
            headers={"Connection": "close"},  # the rest of the body is never read
        )
        await resp(scope, receive, send)


def fair_share(max_pending: int, keys: list[ApiKey]) -> int:
    """Each key that may poll (not read-only) gets an equal share of the poll slots, so
    no key can take them all and leave the others with 429."""
    pollers = sum(1 for k in keys if k.role != VIEWER)
    return max(1, max_pending // max(1, pollers))


class CockpitStatic(StaticFiles):
    """The cockpit's assets, with headers that stop content sniffing."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        resp = await super().get_response(path, scope)
        resp.headers["X-Content-Type-Options"] = "nosniff"
        resp.headers["Cache-Control"] = "no-cache"
        return resp


def create_app(
    engine: Engine | None = None,
    *,
    database_url: str | None = None,
    api_keys: list[ApiKey] | None = None,
    open_access: bool | None = None,
    max_pending_polls: int | None = None,
    max_polls_per_key: int | None = None,
    max_body_bytes: int | None = None,
    max_fetch_bytes: int | None = None,
    cockpit_open_actions: bool = False,
    identity: IdentityProvider | None = None,
    task_authorization: bool | None = None,
) -> FastAPI:
    """Build the app. Without arguments everything comes from the environment.

    ``cockpit_open_actions``: with no API keys, let the keyless cockpit act from localhost
    (only ``bpm dev`` sets it). ``identity``: who the users and groups are (default: as
    ``BPM_IDENTITY`` says, the engine's own tables unless it names a file).
    ``task_authorization`` False: every user sees and claims every task
    (``BPM_TASK_AUTHORIZATION=off``, :mod:`bpm.api.task_access`)."""
    keys = api_keys if api_keys is not None else keys_from_env()
    if open_access is None:
        open_access = os.environ.get("BPM_API_INSECURE_NO_AUTH", "") in ("1", "true", "yes")
    if engine is None:
        url = database_url or os.environ.get("BPM_DATABASE_URL")
        if not url:
            raise ConfigurationError("no database: set BPM_DATABASE_URL or pass database_url")
        engine = Engine(url)
    eng = engine
    people = identity if identity is not None else identity_from_env(eng.core)
    auth = Authenticator(keys, open_access=open_access, identity=people)
    max_pending = max_pending_polls or _env_int("BPM_API_MAX_PENDING_POLLS", 1000)
    hub = LongPollHub(
        libpq_dsn(eng.db),
        channel=NOTIFY_CHANNEL,
        max_pending=max_pending,
        max_per_owner=max_polls_per_key
        or _env_int("BPM_API_MAX_POLLS_PER_KEY", 0)
        or fair_share(max_pending, keys),
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await hub.start()
        try:
            yield
        finally:
            await hub.stop()
            eng.close()

    app = FastAPI(
        title="bpm engine REST API",
        description="Camunda-7-compatible external-task and process endpoints.",
        version="0.1.0",
        lifespan=lifespan,
        # FastAPI's own pages load their scripts from a CDN: ours ship in the wheel
        docs_url=None,
        redoc_url=None,
    )
    app.state.engine = eng
    app.state.auth = auth
    app.state.identity = people
    app.state.task_authorization = (
        authorization_from_env() if task_authorization is None else task_authorization
    )
    app.state.longpoll = hub
    app.state.completions = CompletionBatcher(eng)
    app.state.messages = MessageBatcher(eng)
    app.state.worker_ids = WorkerIds(keys)
    app.state.max_fetch_bytes = max_fetch_bytes or _env_int(
        "BPM_API_MAX_FETCH_BYTES", DEFAULT_MAX_FETCH_BYTES
    )
    app.state.sessions = Sessions()
    app.state.tasklist_sessions = TasklistSessions()
    broker = os.environ.get("BPM_BROKER_URL")
    app.state.celery_workers = CeleryWorkers(broker) if broker else None
    app.state.cockpit_open_actions = cockpit_open_actions and auth.open
    errors.install(app)
    openapi.install(app)
    meta = APIRouter()

    @meta.get("/version")
    async def version() -> JSONResponse:
        return JSONResponse({"version": "7.20.0"})

    @meta.get("/engine")
    async def engines() -> JSONResponse:
        return JSONResponse([{"name": "default"}])

    app.include_router(meta, prefix=PREFIX)
    app.include_router(external_router, prefix=PREFIX)
    app.include_router(deployments_router, prefix=PREFIX)
    app.include_router(definitions_router, prefix=PREFIX)
    app.include_router(decisions_router, prefix=PREFIX)
    app.include_router(decision_history_router, prefix=PREFIX)
    app.include_router(process_router, prefix=PREFIX)
    app.include_router(modification_router, prefix=PREFIX)
    app.include_router(batches_router, prefix=PREFIX)
    app.include_router(migration_router, prefix=PREFIX)
    app.include_router(messages_router, prefix=PREFIX)
    app.include_router(task_router, prefix=PREFIX)
    app.include_router(task_variables_router, prefix=PREFIX)
    app.include_router(task_comments_router, prefix=PREFIX)
    app.include_router(task_forms_router, prefix=PREFIX)
    app.include_router(variables_router, prefix=PREFIX)
    app.include_router(history_router, prefix=PREFIX)
    app.include_router(identity_router, prefix=PREFIX)
    app.include_router(tenants_router, prefix=PREFIX)
    app.include_router(filters_router, prefix=PREFIX)
    app.include_router(cockpit_router, prefix="/api")
    app.include_router(cockpit_actions, prefix="/api")
    app.include_router(cockpit_decisions, prefix="/api")
    # The assets before the pages: /cockpit/{page}/{rest} would take /cockpit/static/...
    app.mount("/cockpit/static", CockpitStatic(directory=STATIC), name="cockpit-static")
    app.include_router(cockpit_pages)
    app.mount("/tasklist/static", CockpitStatic(directory=TASKLIST_STATIC), name="tasklist-static")
    app.include_router(tasklist_pages)
    app.include_router(tasklist_router)
    app.include_router(health_router)
    app.include_router(docs_router)
    limit = max_body_bytes or _env_int(
        "BPM_API_MAX_BODY_BYTES", eng.core.config.max_update_bytes + BODY_ENVELOPE
    )
    deployments = _env_int("BPM_API_MAX_DEPLOYMENT_BYTES", DEFAULT_MAX_DEPLOYMENT_BODY)
    app.add_middleware(BodyLimit, limit=limit, per_path={DEPLOYMENT_PATH: deployments})
    # outside BodyLimit: 401 first
    app.add_middleware(
        AuthGate,
        auth=auth,
        prefix=PREFIX,
        templates=lambda: app.openapi()["paths"],
        sessions=(app.state.tasklist_sessions, people),
    )
    # outside the AuthGate: an anonymous flood is refused before anything else runs
    app.add_middleware(
        KeylessLimit,
        rate=_env_float("BPM_API_KEYLESS_RATE", DEFAULT_RATE),
        burst=_env_int("BPM_API_KEYLESS_BURST", DEFAULT_BURST),
        open_api=auth.open,
    )
    api_metrics.install(app)  # /metrics, and the layer that times every answer
    app.add_middleware(SecurityHeaders)  # outermost: every answer, refusals too
    return app


def app_factory() -> Any:
    """For ``uvicorn --factory bpm.api.app:app_factory`` (each server process: logging
    as ``BPM_LOG_FORMAT`` says, then the app)."""
    structured_logs.configure_from_env()
    trace_from_env("bpm-api")  # OTEL_EXPORTER_OTLP_ENDPOINT...: spans of fetch and complete
    return create_app()
