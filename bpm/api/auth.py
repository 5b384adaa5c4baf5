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

Users (:mod:`bpm.identity`) authenticate with HTTP Basic ``user id`` / ``password``, as
Camunda 7's REST API does with authentication on; ``id:secret:user=ann`` makes a key act
as user ``ann``. A user may do what their groups allow: their own and their groups' tasks,
their own profile; members of ``camunda-admin`` administer. Failed sign-ins are slowed
per user and per address (:mod:`bpm.identity.throttle`): 429 with ``Retry-After``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import math
import os
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import partial

from fastapi import Request
from starlette.concurrency import run_in_threadpool

from bpm.api.errors import ApiError
from bpm.errors import ConfigurationError
from bpm.identity.provider import IdentityProvider
from bpm.identity.throttle import SignInThrottle
from bpm.identity.values import Person

#: How long a verified user password is remembered (argon2 costs tens of milliseconds:
#: a client sending Basic on every request must not pay it every time).
VERIFIED_SECONDS = 60.0

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
    user: str | None = None
    """The user this key acts as (``user=ann``): it may do what that user may."""


@dataclass(frozen=True)
class Principal:
    """Who is calling: a key, a user (signed in, or a key acting as one), or nobody when
    the API runs without auth."""

    key: ApiKey | None = None
    person: Person | None = None

    @property
    def name(self) -> str:
        if self.person is not None:
            return self.person.id
        return self.key.id if self.key else "anonymous"

    @property
    def admin(self) -> bool:
        """May administer: no auth at all, an operator key, or a member of
        ``camunda-admin`` (a key acting as a user: that user must be one)."""
        if self.person is not None:
            return self.person.admin and (self.key is None or self.may_act_as_key)
        return self.key is None or self.may_act_as_key

    @property
    def may_act_as_key(self) -> bool:
        return self.key is not None and self.key.topics is None and self.key.role == OPERATOR

    @property
    def topics(self) -> frozenset[str] | None:
        """The topics this principal may work on; None: every topic. A user who signed in
        is not a worker: none."""
        if self.key is None:
            return None if self.person is None else frozenset()
        return self.key.topics

    def allows_topic(self, topic: str) -> bool:
        topics = self.topics
        return topics is None or topic in topics

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
        """An operator key (not limited to topics, not read-only), or an admin user."""
        return self.admin if self.person is not None else self.may_act_as_key

    def check_unrestricted(self, what: str) -> None:
        """403 for keys limited to topics (they are worker keys, not admin keys) and for
        users outside ``camunda-admin``."""
        if self.key is not None and self.key.topics is not None:
            raise forbidden(f"API key '{self.name}' is limited to topics and may not {what}")
        if self.person is not None and not self.person.admin:
            raise forbidden(
                f"user '{self.person.id}' may not {what}: it needs membership of the group "
                "camunda-admin"
            )

    def check_admin(self, what: str) -> None:
        """403 unless this principal administers (see :attr:`admin`)."""
        self.check_unrestricted(what)
        if not self.admin:
            raise forbidden(f"'{self.name}' may not {what}: it needs an operator key or admin")


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
    if eq and name == "user":
        if not value or key.user is not None:
            raise ConfigurationError(f"{ENV_VAR}: key {key.id!r} needs one user=ID option")
        return replace(key, user=value)
    if eq and name == "workers":
        workers = frozenset(x.strip() for x in value.split("|") if x.strip())
        if not workers or key.workers is not None:
            raise ConfigurationError(
                f"{ENV_VAR}: key {key.id!r} needs one workers=w1|w2 option listing worker ids"
            )
        return replace(key, workers=workers)
    if eq:
        raise ConfigurationError(
            f"{ENV_VAR}: key {key.id!r} has an unknown option {name!r}; use role=, workers=, user= "
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
    """Checks the Authorization header against the configured keys and, for HTTP Basic,
    the users of the identity provider (open if there are no keys)."""

    def __init__(
        self,
        keys: list[ApiKey],
        *,
        open_access: bool = False,
        identity: IdentityProvider | None = None,
        throttle: SignInThrottle | None = None,
    ) -> None:
        if not keys and not open_access:
            raise ConfigurationError(
                f"no API keys configured: set {ENV_VAR}=id:secret[,...] or run without "
                "auth explicitly (--insecure-no-auth)"
            )
        self.keys = keys
        self.open = not keys
        self.identity = identity
        self.throttle = throttle or SignInThrottle()
        self._secret = secrets.token_bytes(32)
        self._verified: dict[bytes, float] = {}

    def _basic(self, value: str, challenge: bool) -> tuple[str, str]:
        try:
            user, _, secret = base64.b64decode(value, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            raise _unauthorized("malformed Basic credentials", challenge=challenge) from None
        return user, secret

    def key_of(self, header: str | None, *, challenge: bool = True) -> ApiKey | None:
        """The key an ``Authorization`` header names (no I/O), None if it names none."""
        if not header:
            return None
        scheme, _, value = header.partition(" ")
        value = value.strip()
        scheme = scheme.lower()
        if scheme == "bearer":
            for key in self.keys:
                if hmac.compare_digest(key.secret.encode(), value.encode()):
                    return key
        elif scheme == "basic":
            user, secret = self._basic(value, challenge)
            for key in self.keys:
                if hmac.compare_digest(key.id.encode(), user.encode()) and hmac.compare_digest(
                    key.secret.encode(), secret.encode()
                ):
                    return key
        return None

    def authenticate(
        self, header: str | None, *, challenge: bool = True, address: str | None = None
    ) -> Principal:
        """Who an ``Authorization`` header names; 401 when it is missing or wrong, 429
        while a user's or an address's failed sign-ins must wait.

        ``challenge=False`` leaves out ``WWW-Authenticate`` (the cockpit's JSON API: a
        browser must not pop up its Basic login box). May read the identity provider: call
        it off the event loop (:meth:`authenticate_async`)."""
        if self.open:
            return Principal(None)
        if not header:
            raise _unauthorized(
                "authentication required: HTTP Basic or Bearer API key", challenge=challenge
            )
        key = self.key_of(header, challenge=challenge)
        if key is not None:
            return self._as_key(key)
        scheme, _, value = header.partition(" ")
        if scheme.lower() == "basic" and self.identity is not None:
            user, password = self._basic(value.strip(), challenge)
            person = self.sign_in(user, password, address=address, challenge=challenge)
            return Principal(None, person)
        raise _unauthorized("wrong credentials", challenge=challenge)

    async def authenticate_async(
        self, header: str | None, *, challenge: bool = True, address: str | None = None
    ) -> Principal:
        """:meth:`authenticate`, in a worker thread only when it must ask the identity
        provider (a plain key is checked on the event loop: the hot path stays cheap)."""
        if self.open or not header:
            return self.authenticate(header, challenge=challenge, address=address)
        key = self.key_of(header, challenge=challenge)
        if key is not None and key.user is None:
            return Principal(key)
        call = partial(self.authenticate, header, challenge=challenge, address=address)
        return await run_in_threadpool(call)

    def _as_key(self, key: ApiKey) -> Principal:
        if key.user is None:
            return Principal(key)
        if self.identity is None or self.identity.user(key.user) is None:
            raise _unauthorized(f"API key '{key.id}' acts as user '{key.user}', who does not exist")
        return Principal(key, Person(key.user, self.identity.groups_of(key.user)))

    def sign_in(
        self,
        user: str,
        password: str,
        *,
        address: str | None = None,
        challenge: bool = True,
        now: float | None = None,
    ) -> Person:
        """The user whose password this is, else 401; 429 while tries must wait. Each
        failure is counted for the user and the address."""
        if self.identity is None:
            raise _unauthorized("wrong credentials", challenge=challenge)
        wait = self.throttle.wait(user, address, now=now)
        if wait > 0:
            raise ApiError(
                429,
                "AuthenticationException",
                f"too many failed sign-ins: try again in {math.ceil(wait)} s",
                headers={"Retry-After": str(math.ceil(wait))},
            )
        if not self._check(user, password):
            self.throttle.failed(user, address, now=now)
            raise _unauthorized("wrong credentials", challenge=challenge)
        self.throttle.succeeded(user)
        return Person(user, self.identity.groups_of(user))

    def _check(self, user: str, password: str) -> bool:
        assert self.identity is not None
        version = self.identity.password_version(user)
        if version is None:
            return self.identity.check_password(user, password)  # the same cost: no oracle
        mark = hmac.new(
            self._secret,
            b"\0".join((user.encode(), version.encode(), password.encode())),
            hashlib.sha256,
        ).digest()
        now = time.monotonic()
        if self._verified.get(mark, 0.0) > now:
            return True
        if not self.identity.check_password(user, password):
            return False
        if len(self._verified) > 10_000:
            self._verified = {k: v for k, v in self._verified.items() if v > now}
        self._verified[mark] = now + VERIFIED_SECONDS
        return True

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
    address = request.client.host if request.client else None
    who = await auth.authenticate_async(request.headers.get("authorization"), address=address)
    if who.read_only and request.method not in SAFE_METHODS:
        raise forbidden(
            f"API key '{who.name}' is read-only (role viewer) and may not change anything"
        )
    return who
