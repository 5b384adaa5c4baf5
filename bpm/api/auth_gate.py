"""Authentication before anything else: every ``/engine-rest`` request without valid
credentials answers 401 (a read-only key's write 403) before its body is read or parsed.

FastAPI reads and validates a request's body before it resolves a route's dependencies, so
an authentication dependency alone lets an anonymous caller learn about the body schema
(400) and makes the server read bodies for nobody. This ASGI layer decides first; the
route's :func:`bpm.api.auth.principal` dependency then reuses its answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.routing import compile_path
from starlette.types import ASGIApp, Receive, Scope, Send

from bpm.api.auth import SAFE_METHODS, Authenticator, Principal, forbidden
from bpm.api.errors import ApiError, error_response
from bpm.api.tasklist_session import TasklistSessions, cookie_of, session_principal
from bpm.identity import IdentityProvider

STATE_KEY = "principal"


@dataclass(frozen=True)
class RouteName:
    """Stands for the route a refused request was for: what the router would have put in
    ``scope["route"]`` (the request metrics label requests by ``route.path``)."""

    path: str


class AuthGate:
    """Authenticate requests under ``prefix`` before the app sees them."""

    def __init__(
        self,
        app: ASGIApp,
        auth: Authenticator,
        prefix: str,
        templates: Callable[[], Iterable[str]] = tuple,
        sessions: tuple[TasklistSessions, IdentityProvider] | None = None,
    ) -> None:
        self.app = app
        self.sessions = sessions
        self.auth = auth
        self.prefix = prefix
        # the route path templates (read once, on the first refusal): only to name the
        # route a refused request was for
        self.templates = templates
        self._compiled: list[tuple[re.Pattern[str], str]] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self._guarded(scope["path"]):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        try:
            # a task-list session (a user who signed in on /tasklist), without a header
            who: Principal | None = None
            if (
                self.sessions is not None
                and "authorization" not in headers
                and cookie_of(headers) is not None  # no thread hop without a cookie
            ):
                sessions, identity = self.sessions
                who = await run_in_threadpool(
                    session_principal, sessions, identity, headers, scope["method"]
                )
            if who is None and not self.auth.open:
                client = scope.get("client")
                who = await self.auth.authenticate_async(
                    headers.get("authorization"), address=client[0] if client else None
                )
            if who is not None:
                check_method(who, scope["method"])
        except ApiError as exc:
            self._name_route(scope)
            resp = error_response(exc.status, exc.type, exc.message, headers=exc.headers)
            await resp(scope, receive, send)
            return
        if who is not None:  # None: the API is open and nobody signed in
            scope.setdefault("state", {})[STATE_KEY] = who
        await self.app(scope, receive, send)

    def _name_route(self, scope: Scope) -> None:
        """Record the route the request was for, as the router would (the request metrics
        label it by its template, not ``unmatched``)."""
        if self._compiled is None:
            self._compiled = [(compile_path(t)[0], t) for t in self.templates()]
        path = scope["path"]
        for regex, template in self._compiled:
            if regex.match(path):
                scope["route"] = RouteName(template)
                return

    def _guarded(self, path: str) -> bool:
        return path == self.prefix or path.startswith(self.prefix + "/")


def check_method(who: Principal, method: str) -> None:
    """A read-only (viewer) key may only read: any other method answers 403."""
    if who.read_only and method not in SAFE_METHODS:
        raise forbidden(
            f"API key '{who.name}' is read-only (role viewer) and may not change anything"
        )
