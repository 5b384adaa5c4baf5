"""Authentication before anything else: every ``/engine-rest`` request without valid
credentials answers 401 (a read-only key's write 403) before its body is read or parsed.

FastAPI reads and validates a request's body before it resolves a route's dependencies, so
an authentication dependency alone lets an anonymous caller learn about the body schema
(400) and makes the server read bodies for nobody. This ASGI layer decides first; the
route's :func:`bpm.api.auth.principal` dependency then reuses its answer.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from bpm.api.auth import SAFE_METHODS, Authenticator, Principal, forbidden
from bpm.api.errors import ApiError, error_response

STATE_KEY = "principal"


class AuthGate:
    """Authenticate requests under ``prefix`` before the app sees them."""

    def __init__(self, app: ASGIApp, auth: Authenticator, prefix: str) -> None:
        self.app = app
        self.auth = auth
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.auth.open or not self._guarded(scope["path"]):
            await self.app(scope, receive, send)
            return
        try:
            who = self.auth.authenticate(Headers(scope=scope).get("authorization"))
            check_method(who, scope["method"])
        except ApiError as exc:
            resp = error_response(exc.status, exc.type, exc.message, headers=exc.headers)
            await resp(scope, receive, send)
            return
        scope.setdefault("state", {})[STATE_KEY] = who
        await self.app(scope, receive, send)

    def _guarded(self, path: str) -> bool:
        return path == self.prefix or path.startswith(self.prefix + "/")


def check_method(who: Principal, method: str) -> None:
    """A read-only (viewer) key may only read: any other method answers 403."""
    if who.read_only and method not in SAFE_METHODS:
        raise forbidden(
            f"API key '{who.name}' is read-only (role viewer) and may not change anything"
        )
