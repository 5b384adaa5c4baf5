"""``/metrics`` (Prometheus text format) and the timer behind the API request latency.

``/metrics`` shows the process's counters and histograms (every process's, under
``PROMETHEUS_MULTIPROC_DIR``, e.g. ``bpm api --workers 4``) and the database gauges.
Like ``/health``, it needs no credentials and holds no secrets (process keys, node ids,
topics, route templates): restrict it at the network, as for any exporter. It is rendered
at most once a second, and anonymous callers are rate-limited (:mod:`bpm.api.keyless`).
"""

from __future__ import annotations

import time

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool
from starlette.routing import Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bpm.api.errors import ApiError
from bpm.api.keyless import Cached
from bpm.observe import Observers, RequestServed, observers

router = APIRouter()

UNMATCHED = "unmatched"  # the route label of requests no route matched (404s)
#: The method label's values: the methods this app answers, and ``other`` for any method
#: a client makes up (HTTP lets a method be any token: each would be a new series).
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"})
OTHER_METHOD = "other"


def method_label(method: str) -> str:
    """``method`` when it is one of :data:`METHODS`, else ``other``: the label set stays
    closed whatever clients send."""
    return method if method in METHODS else OTHER_METHOD


#: A scrape is rendered at most once a second (scrapers ask every 15 s or so): an
#: anonymous flood of ``/metrics`` costs one rendering a second, not one per request.
RENDER_TTL = 1.0


@router.get("/metrics", include_in_schema=False)
async def metrics(request: Request) -> Response:
    try:
        from bpm.contrib import prometheus  # noqa: PLC0415  (optional: prometheus-client)
    except ImportError:
        raise ApiError(
            404,
            "NotFound",
            "metrics need prometheus-client: pip install 'bpm-celery[prometheus]'",
        ) from None
    rendered: Cached[tuple[bytes, str]] | None = getattr(request.app.state, "metrics", None)
    if rendered is None:
        engine = request.app.state.engine

        async def render() -> tuple[bytes, str]:
            return await run_in_threadpool(prometheus.exposition, engine)

        rendered = request.app.state.metrics = Cached(render, RENDER_TTL)
    body, content_type = await rendered.get()
    return Response(body, media_type=content_type, headers={"Cache-Control": "no-store"})


class RequestTimer:
    """Tells the observers how long each HTTP request took, by method (a closed set) and
    route template: the labels never carry what a client wrote (a method, a path, an id),
    so no request adds a series beyond the app's routes."""

    def __init__(self, app: ASGIApp, observers: Observers) -> None:
        self.app = app
        self.observers = observers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.observers:
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        root = str(scope.get("root_path", ""))
        status = 500  # unless a response starts: an error no handler answered

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            self.observers.emit(
                RequestServed(
                    method_label(str(scope["method"])),
                    route_template(scope, root),
                    status,
                    time.perf_counter() - started,
                )
            )


def route_template(scope: Scope, root_path: str = "") -> str:
    """The matched route's path template (``/engine-rest/external-task/{task_id}/complete``),
    so ids never become label values; ``unmatched`` when no route matched.

    The router records the matched route in the scope. Routers included with a prefix may
    keep their own, shorter path (newer FastAPI nests them): the request path's leading
    segments the template lacks are the prefix, which is literal in this app. A mounted
    app (the cockpit's assets) shows as its mount path, whose end the scope's
    ``root_path`` (``root_path`` before routing) says.
    """
    route = scope.get("route")
    template = getattr(route, "path", None)
    if isinstance(route, Mount) and isinstance(template, str):
        return template + "/{path}"
    if not isinstance(template, str) or not template:
        mounted = str(scope.get("root_path", ""))
        if len(mounted) > len(root_path) and mounted.startswith(root_path):
            return mounted[len(root_path) :] + "/{path}"
        return UNMATCHED
    if ":path}" in template:  # a parameter that spans segments: the prefix is unknowable
        return template
    path = str(scope.get("path", ""))
    extra = path.count("/") - template.count("/")
    if extra > 0:
        return "/".join(path.split("/")[: extra + 1]) + template
    return template


def install(app: FastAPI, to: Observers | None = None) -> None:
    """Serve ``/metrics``, time every request, and count this process's work (when
    prometheus-client is installed; without it ``/metrics`` says how to get it)."""
    try:
        from bpm.contrib import prometheus  # noqa: PLC0415  (optional: prometheus-client)
    except ImportError:
        pass
    else:
        prometheus.install()
    app.include_router(router)
    app.add_middleware(RequestTimer, observers=observers if to is None else to)
