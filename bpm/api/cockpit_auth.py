"""Who may use the cockpit, and the guard every cockpit action passes.

Reading: an API key in the ``Authorization`` header (Bearer or Basic), or a cockpit
session cookie made by logging in with a key's secret (``POST /api/session``), or nobody
when the API runs without keys. Keys limited to topics (worker keys) may not use it.

Acting (retry, terminate, edit variables...): an operator key (``role=viewer`` keys may
only read), or nobody only under ``bpm dev`` and only from this machine. Against
cross-site request forgery:

* the session cookie is ``HttpOnly`` and ``SameSite=Strict``;
* every action by session (or keyless under ``bpm dev``) must carry the header
  ``X-CSRF-Token`` with the token of that session, which only the cockpit's own pages can
  read (``GET /api/session``); a form or a script on another site cannot send it;
* a request whose ``Origin`` is not this server is refused;
* Basic credentials, which a browser may have remembered and sends by itself, may only
  read: actions by header need ``Authorization: Bearer``.

Sessions are stateless: ``key id . expiry . nonce . MAC``, the MAC keyed by the server
secret (``BPM_COCKPIT_SECRET``, random per process when unset) and the key's own secret, so
changing a key's secret ends its sessions. Set ``BPM_COCKPIT_SECRET`` when running several
API processes behind one address, so each accepts the others' sessions.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import ipaddress
import os
import secrets
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from fastapi import Request

from bpm.api.auth import ApiKey, Authenticator, Principal, forbidden

COOKIE = "bpm_session"
CSRF_HEADER = "x-csrf-token"
SESSION_SECONDS = 12 * 3600
SECRET_ENV = "BPM_COCKPIT_SECRET"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Sessions:
    """Issues and checks session cookies and their CSRF tokens."""

    def __init__(self, secret: bytes | None = None, ttl_seconds: int = SESSION_SECONDS) -> None:
        env = os.environ.get(SECRET_ENV, "")
        self.secret = secret if secret is not None else (env.encode() or secrets.token_bytes(32))
        self.ttl = ttl_seconds

    def _mac(self, key: ApiKey, message: str) -> str:
        digest = hmac.new(
            self.secret + b"\0" + key.secret.encode(), message.encode(), hashlib.sha256
        )
        return _b64(digest.digest())

    def issue(self, key: ApiKey, now: float | None = None) -> str:
        expires = int((now if now is not None else time.time()) + self.ttl)
        body = f"{_b64(key.id.encode())}.{expires}.{secrets.token_urlsafe(12)}"
        return f"{body}.{self._mac(key, body)}"

    def verify(self, value: str, auth: Authenticator, now: float | None = None) -> ApiKey | None:
        """The key of a valid, unexpired session cookie, else None."""
        parts = value.split(".")
        if len(parts) != 4 or len(value) > 1024:
            return None
        try:
            key_id = _unb64(parts[0]).decode()
            expires = int(parts[1])
        except (binascii.Error, UnicodeDecodeError, ValueError):
            return None
        if expires < (now if now is not None else time.time()):
            return None
        key = next((k for k in auth.keys if k.id == key_id), None)
        if key is None:
            return None
        body = ".".join(parts[:3])
        return key if hmac.compare_digest(self._mac(key, body), parts[3]) else None

    def csrf(self, key: ApiKey | None, session: str) -> str:
        """The CSRF token of a session (of keyless dev use when ``key`` is None)."""
        mac_key = self.secret + b"\0" + (key.secret.encode() if key else b"")
        return _b64(hmac.new(mac_key, b"csrf:" + session.encode(), hashlib.sha256).digest())


@dataclass(frozen=True)
class Caller:
    """Who calls the cockpit API and how: ``header``, ``session`` or ``open`` (no keys)."""

    principal: Principal
    via: str
    scheme: str = ""
    csrf: str | None = None

    @property
    def name(self) -> str:
        return self.principal.name


def _sessions(request: Request) -> Sessions:
    sessions: Sessions = request.app.state.sessions
    return sessions


async def cockpit_caller(request: Request) -> Caller:
    """FastAPI dependency: the caller of a cockpit endpoint (401 without credentials)."""
    auth: Authenticator = request.app.state.auth
    sessions = _sessions(request)
    header = request.headers.get("authorization")
    if auth.open:
        return Caller(Principal(None), "open", csrf=sessions.csrf(None, "open"))
    if header:
        address = request.client.host if request.client else None
        who = await auth.authenticate_async(header, challenge=False, address=address)
        _no_workers(who)
        return Caller(who, "header", scheme=header.partition(" ")[0].lower())
    cookie = request.cookies.get(COOKIE)
    if cookie:
        key = sessions.verify(cookie, auth)
        if key is not None:
            who = Principal(key)
            _no_workers(who)
            return Caller(who, "session", csrf=sessions.csrf(key, cookie))
    auth.authenticate(None, challenge=False)  # raises the 401
    raise AssertionError("unreachable")


def _no_workers(who: Principal) -> None:
    who.check_unrestricted("use the cockpit (it is a worker key)")


def _is_loopback(host: str | None) -> bool:
    try:
        return host is not None and ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def check_origin(request: Request) -> None:
    """Refuse a request a page of another origin made (its ``Origin`` names that page)."""
    origin = request.headers.get("origin")
    if origin is None:
        return
    host = request.headers.get("host", "")
    if origin == "null" or urlsplit(origin).netloc.lower() != host.lower():
        raise forbidden(f"cross-origin request from {origin} refused: open the cockpit itself")


async def cockpit_operator(request: Request) -> Caller:
    """FastAPI dependency of every cockpit action: the caller, if they may act here."""
    caller = await cockpit_caller(request)
    check_origin(request)
    if caller.via == "open":
        if not getattr(request.app.state, "cockpit_open_actions", False):
            raise forbidden(
                "actions need an operator API key: this server runs without keys, and only "
                "`bpm dev` lets a keyless cockpit act (on localhost)"
            )
        client = request.client.host if request.client else None
        # The Host check stops DNS rebinding: a site whose name resolves to 127.0.0.1 would
        # otherwise be "same origin" with the dev server.
        host = urlsplit("//" + request.headers.get("host", "")).hostname
        if not _is_loopback(client) or not _is_loopback(host):
            raise forbidden("keyless actions are only allowed on localhost / 127.0.0.1 (bpm dev)")
    elif not caller.principal.may_act:
        raise forbidden(
            f"API key '{caller.name}' is read-only (role viewer); actions need an operator key"
        )
    if caller.via == "header" and caller.scheme != "bearer":
        raise forbidden(
            "actions by header need 'Authorization: Bearer <secret>' (a browser may send "
            "remembered Basic credentials by itself), or a cockpit session"
        )
    if caller.via in ("session", "open"):
        sent = request.headers.get(CSRF_HEADER, "")
        if not caller.csrf or not hmac.compare_digest(sent.encode(), caller.csrf.encode()):
            raise forbidden(
                "missing or wrong X-CSRF-Token header: actions must come from the cockpit's "
                "own pages (reload it)"
            )
    return caller
