"""Headers on every answer of the API process: nothing it serves runs script unless it is
a page that says so.

Every response gets ``X-Content-Type-Options: nosniff`` and, unless the route set a policy
of its own (the cockpit's page, the API docs pages), ``Content-Security-Policy:
default-src 'none'``: a JSON answer, an error, a stored text (an external task's error
details, a deployed BPMN file) opened in a browser is inert there, whatever it holds.
"""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: The policy of everything that is not a page: no script, no style, no frame, nothing.
NOTHING = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"


class SecurityHeaders:
    """Adds ``nosniff``, ``Referrer-Policy: no-referrer`` and the default CSP (when the
    response has none) to every HTTP response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers.setdefault("X-Content-Type-Options", "nosniff")
                headers.setdefault("Referrer-Policy", "no-referrer")
                headers.setdefault("Content-Security-Policy", NOTHING)
            await send(message)

        await self.app(scope, receive, with_headers)
