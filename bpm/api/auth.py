"""API keys: ``BPM_API_KEYS="id:secret[:topicA|topicB][:role=viewer][:workers=w1|w2],..."``.

A request authenticates with HTTP Basic (``id`` / ``secret``) or ``Authorization: Bearer
secret``. Missing or wrong credentials answer 401 (``WWW-Authenticate: Basic``); a key limited
to topics answers 403 for any other topic, and for the process endpoints (deploy, start),
which only unrestricted keys may use.

Roles: a key without topics is an ``operator`` (it may read and act: deploy, start,
terminate, retry...). ``id:secret:role=viewer`` is a read-only key: it may only read
(GET), everything else answers 403. A key with topics is a worker key.

Worker ids are namespaced by key (:mod:`bpm.api.worker_ids`): ``k1``'s worker ``w`` is
``k1:w``. ``workers=w1|w2`` limits a key to those worker ids (403 for any other).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import os
from collections.abc import Iterable
from dataclasses import dataclass, replace

from fastapi import Request

from bpm.api.errors import ApiError
from bpm.errors import ConfigurationError

ENV_VAR = "BPM_API_KEYS"


OPERATOR = "operator"
VIEWER = "viewer"
ROLES = (OPERATOR, VIEWER)
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True)
class ApiKey:
    """One credential; ``topics`` None means every topic and every endpoint.

    ``role`` is ``operator`` (may act) or ``viewer`` (may only read)."""

    id: str
    secret: str
    topics: frozenset[str] | None = None
    role: str = OPERATOR
    workers: frozenset[str] | None = None
    """The only worker ids this key may use (``workers=a|b``); None: any (namespaced by
    the key, :mod:`bpm.api.worker_ids`)."""


@dataclass(frozen=True)
class Principal:
    """Who is calling: a key, or nobody when the API runs without auth."""

    key: ApiKey | None = None

    @property
    def name(self) -> str:
        return self.key.id if self.key else "anonymous"

    @property
    def topics(self) -> frozenset[str] | None:
        """The topics this principal may work on; None: every topic."""
        return None if self.key is None else self.key.topics

    def allows_topic(self, topic: str) -> bool:
        return self.key is None or self.key.topics is None or topic in self.key.topics

    def check_topics(self, topics: Iterable[str]) -> None:
        """403 unless this principal may use every topic in ``topics``."""
        for topic in topics:
            if not self.allows_topic(topic):
                raise forbidden(f"API key '{self.name}' may not use topic '{topic}'")

    @property
    def read_only(self) -> bool:
        return self.key is not None and self.key.role == VIEWER

    @property
    def may_act(self) -> bool:
        """An operator key: not limited to topics, not read-only."""
        return self.key is not None and self.key.topics is None and self.key.role == OPERATOR

    def check_unrestricted(self, what: str) -> None:
        """403 for keys limited to topics: they are worker keys, not admin keys."""
        if self.key is not None and self.key.topics is not None:
            raise forbidden(f"API key '{self.name}' is limited to topics and may not {what}")


def forbidden(message: str) -> ApiError:
    return ApiError(403, "AuthorizationException", message)


def parse_api_keys(text: str | None) -> list[ApiKey]:
    """Parse ``id:secret[:option...],...``; raises ConfigurationError saying what is wrong.

    An option is ``role=viewer`` / ``role=operator``, ``workers=w1|w2`` (the worker ids
    this key owns, and the only ones it may use) or a topic list ``topicA|topicB``."""
    keys: list[ApiKey] = []
    for raw in (text or "").split(","):
        item = raw.strip()
        if not item:
            continue
        parts = item.split(":")
        if len(parts) < 2 or not parts[0] or not parts[1]:
            raise ConfigurationError(
                f"{ENV_VAR}: entry {parts[0]!r}... is not id:secret, id:secret:topicA|topicB, "
                "id:secret:role=viewer or id:secret:workers=w1|w2"
            )
        key = ApiKey(parts[0], parts[1])
        for option in (p.strip() for p in parts[2:]):
            key = _with_option(key, option)
        if any(k.id == key.id for k in keys):
            raise ConfigurationError(f"{ENV_VAR}: key id {key.id!r} appears twice")
        for other in keys:
            shared = (other.workers or frozenset()) & (key.workers or frozenset())
            if shared:
                raise ConfigurationError(
                    f"{ENV_VAR}: worker id {sorted(shared)[0]!r} is bound to both "
                    f"{other.id!r} and {key.id!r}; a worker id belongs to one key"
                )
        keys.append(key)
    return keys


def _with_option(key: ApiKey, option: str) -> ApiKey:
    name, eq, value = option.partition("=")
    if eq and name == "role":
        if value not in ROLES:
            raise ConfigurationError(
                f"{ENV_VAR}: key {key.id!r} has role {value!r}; use role=viewer or role=operator"
            )
        return replace(key, role=value)
    if eq and name == "workers":
        workers = frozenset(x.strip() for x in value.split("|") if x.strip())
        if not workers or key.workers is not None:
            raise ConfigurationError(
                f"{ENV_VAR}: key {key.id!r} needs one workers=w1|w2 option listing worker ids"
            )
        return replace(key, workers=workers)
    if eq:
        raise ConfigurationError(
            f"{ENV_VAR}: key {key.id!r} has an unknown option {name!r}; use role=, workers= "
            "or a topic list topicA|topicB"
        )
    topics = frozenset(x.strip() for x in option.split("|") if x.strip())
    if not topics:
        raise ConfigurationError(f"{ENV_VAR}: key {key.id!r} lists no topics")
    if key.topics is not None:
        raise ConfigurationError(f"{ENV_VAR}: key {key.id!r} has two topic lists; join them")
    return replace(key, topics=topics)


def keys_from_env() -> list[ApiKey]:
    return parse_api_keys(os.environ.get(ENV_VAR))


class Authenticator:
    """Checks the Authorization header against the configured keys (open if none)."""

    def __init__(self, keys: list[ApiKey], *, open_access: bool = False) -> None:
        if not keys and not open_access:
            raise ConfigurationError(
                f"no API keys configured: set {ENV_VAR}=id:secret[,...] or run without "
                "auth explicitly (--insecure-no-auth)"
            )
        self.keys = keys
        self.open = not keys

    def authenticate(self, header: str | None, *, challenge: bool = True) -> Principal:
        """The key of an ``Authorization`` header; 401 when it is missing or wrong.

        ``challenge=False`` leaves out ``WWW-Authenticate`` (the cockpit's JSON API: a
        browser must not pop up its Basic login box)."""
        if self.open:
            return Principal(None)
        if not header:
            raise _unauthorized(
                "authentication required: HTTP Basic or Bearer API key", challenge=challenge
            )
        scheme, _, value = header.partition(" ")
        value = value.strip()
        scheme = scheme.lower()
        if scheme == "bearer":
            for key in self.keys:
                if hmac.compare_digest(key.secret.encode(), value.encode()):
                    return Principal(key)
        elif scheme == "basic":
            try:
                user, _, secret = base64.b64decode(value, validate=True).decode().partition(":")
            except (binascii.Error, UnicodeDecodeError, ValueError):
                raise _unauthorized("malformed Basic credentials", challenge=challenge) from None
            for key in self.keys:
                if hmac.compare_digest(key.id.encode(), user.encode()) and hmac.compare_digest(
                    key.secret.encode(), secret.encode()
                ):
                    return Principal(key)
        raise _unauthorized("wrong credentials", challenge=challenge)

    def by_secret(self, secret: str) -> ApiKey | None:
        """The key whose secret this is (the cockpit's login form)."""
        for key in self.keys:
            if hmac.compare_digest(key.secret.encode(), secret.encode()):
                return key
        return None


def _unauthorized(message: str, *, challenge: bool = True) -> ApiError:
    return ApiError(
        401,
        "AuthenticationException",
        message,
        headers={"WWW-Authenticate": 'Basic realm="default"'} if challenge else None,
    )


async def principal(request: Request) -> Principal:
    """FastAPI dependency: the authenticated caller of this request (decided by
    :class:`bpm.api.auth_gate.AuthGate` before the body was read, when it guards the path).

    A read-only (viewer) key may only read: any other method answers 403."""
    who = getattr(request.state, "principal", None)
    if isinstance(who, Principal):
        return who
    auth: Authenticator = request.app.state.auth
    who = auth.authenticate(request.headers.get("authorization"))
    if who.read_only and request.method not in SAFE_METHODS:
        raise forbidden(
            f"API key '{who.name}' is read-only (role viewer) and may not change anything"
        )
    return who
