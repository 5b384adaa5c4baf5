"""Task-list sessions: a user signs in with their password and gets a cookie; the page's
calls to ``/engine-rest`` then act as that user, under the same rules as HTTP Basic.

Against cross-site request forgery: the cookie is ``HttpOnly`` and ``SameSite=Strict``;
every call that is not a read must carry ``X-CSRF-Token`` with the session's token (only
the task list's own page can read it, from ``GET /tasklist/api/session``) and an ``Origin``,
if sent, naming this server. Sessions are stateless (``user . expiry . nonce . MAC``), the
MAC keyed by the server secret (``BPM_COCKPIT_SECRET``, shared with the cockpit) and the
user's password version, so a new password ends every session of that user.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import secrets
import time
from urllib.parse import urlsplit

from starlette.datastructures import Headers

from bpm.api.auth import SAFE_METHODS, Principal, forbidden
from bpm.identity import IdentityProvider, Person

COOKIE = "bpm_tasklist"
CSRF_HEADER = "x-csrf-token"
SESSION_SECONDS = 8 * 3600


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class TasklistSessions:
    """Issues and checks task-list session cookies and their CSRF tokens."""

    def __init__(self, secret: bytes | None = None, ttl_seconds: int = SESSION_SECONDS) -> None:
        env = os.environ.get("BPM_COCKPIT_SECRET", "")
        self.secret = secret if secret is not None else (env.encode() or secrets.token_bytes(32))
        self.ttl = ttl_seconds

    def _mac(self, version: str, message: str) -> str:
        key = self.secret + b"\0tasklist\0" + version.encode()
        return _b64(hmac.new(key, message.encode(), hashlib.sha256).digest())

    def issue(self, user_id: str, version: str, now: float | None = None) -> str:
        expires = int((now if now is not None else time.time()) + self.ttl)
        body = f"{_b64(user_id.encode())}.{expires}.{secrets.token_urlsafe(12)}"
        return f"{body}.{self._mac(version, body)}"

    def user_of(
        self, value: str, identity: IdentityProvider, now: float | None = None
    ) -> str | None:
        """The user of a valid, unexpired session whose password is unchanged, else None."""
        parts = value.split(".")
        if len(parts) != 4 or len(value) > 1024:
            return None
        try:
            user_id = _unb64(parts[0]).decode()
            expires = int(parts[1])
        except (binascii.Error, UnicodeDecodeError, ValueError):
            return None
        if expires < (now if now is not None else time.time()):
            return None
        version = identity.password_version(user_id)
        if version is None:
            return None
        body = ".".join(parts[:3])
        return user_id if hmac.compare_digest(self._mac(version, body), parts[3]) else None

    def csrf(self, session: str) -> str:
        mac = hmac.new(self.secret, b"tasklist-csrf:" + session.encode(), hashlib.sha256)
        return _b64(mac.digest())


def cookie_of(headers: Headers) -> str | None:
    for part in headers.get("cookie", "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE and value:
            return value
    return None


def session_principal(
    sessions: TasklistSessions, identity: IdentityProvider, headers: Headers, method: str
) -> Principal | None:
    """The user of the request's task-list cookie (None: no valid session). A write must
    carry the session's CSRF token and come from this origin (403 otherwise). Reads the
    identity provider: call it off the event loop."""
    cookie = cookie_of(headers)
    if cookie is None:
        return None
    user = sessions.user_of(cookie, identity)
    if user is None:
        return None
    if method not in SAFE_METHODS:
        origin = headers.get("origin")
        host = headers.get("host", "")
        if origin is not None and (
            origin == "null" or urlsplit(origin).netloc.lower() != host.lower()
        ):
            raise forbidden(f"cross-origin request from {origin} refused: use the task list itself")
        sent = headers.get(CSRF_HEADER, "")
        if not hmac.compare_digest(sent.encode(), sessions.csrf(cookie).encode()):
            raise forbidden(
                "missing or wrong X-CSRF-Token header: changes must come from the task "
                "list's own page (reload it)"
            )
    return Principal(None, Person(user, identity.groups_of(user)))
