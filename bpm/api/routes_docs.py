"""``/docs`` (Swagger UI) and ``/redoc`` (Redoc): the API's own documentation pages.

Their assets ship in the wheel (``bpm/api/apidocs/``, vendored from npm with their
licences: see its ``VERSION.md``); nothing is loaded from another site. The pages and
their assets need a key, as the API does: a browser asks for it with its Basic login box
(the key's id and secret), or uses the cockpit's session; without keys
(``--insecure-no-auth``, ``bpm dev``) they are open like the rest. The pages run no
inline script, under a Content-Security-Policy that allows only this origin's files.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, Response

from bpm.api.auth import Authenticator
from bpm.api.cockpit_auth import COOKIE, Sessions
from bpm.api.errors import ApiError

DOCS = Path(__file__).resolve().parent / "apidocs"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; "
    "worker-src 'self' blob:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)
_TYPES = {".js": "text/javascript", ".css": "text/css"}
#: The files ``/docs/static/...`` serves: the shipped scripts and styles, nothing else.
ASSETS = {
    p.relative_to(DOCS).as_posix(): p
    for p in sorted(DOCS.rglob("*"))
    if p.is_file() and p.suffix in _TYPES
}

router = APIRouter(include_in_schema=False)


def check_reader(request: Request) -> None:
    """401 (with the Basic challenge a browser answers) unless the request carries a key
    or a cockpit session; open when the API runs without keys."""
    auth: Authenticator = request.app.state.auth
    if auth.open:
        return
    header = request.headers.get("authorization")
    if header:
        auth.authenticate(header)
        return
    cookie = request.cookies.get(COOKIE)
    sessions: Sessions = request.app.state.sessions
    if cookie and sessions.verify(cookie, auth) is not None:
        return
    auth.authenticate(None)  # raises the 401 with WWW-Authenticate


def _page(name: str) -> Response:
    return FileResponse(
        DOCS / name,
        media_type="text/html",
        headers={"Content-Security-Policy": CSP, "Cache-Control": "no-cache"},
    )


@router.get("/docs")
async def swagger_ui(request: Request) -> Response:
    check_reader(request)
    return _page("docs.html")


@router.get("/redoc")
async def redoc(request: Request) -> Response:
    check_reader(request)
    return _page("redoc.html")


@router.get("/docs/static/{path:path}")
async def asset(path: str, request: Request) -> Response:
    check_reader(request)
    file = ASSETS.get(path)
    if file is None:
        raise ApiError(404, "RestException", f"no documentation asset {path[:200]!r}")
    return FileResponse(
        file, media_type=_TYPES[file.suffix], headers={"Cache-Control": "private, max-age=3600"}
    )
