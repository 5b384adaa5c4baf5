"""What an anonymous caller may cost: requests without credentials are rate-limited per
client address, and the keyless routes answer from a short cache.

A request that carries no key (no ``Authorization``, no cockpit session) can only reach
the routes that need none (``/health/*``, ``/metrics``, ``/openapi.json``, the cockpit's
page and assets) or be refused with 401. Twenty anonymous clients on ``/health/ready`` or
``/metrics`` once cut a real client from 204 to 15 requests a second (a database round trip
or a scrape each). Now each client address has a token bucket (``BPM_API_KEYLESS_RATE``
requests a second, default 20, bursts of ``BPM_API_KEYLESS_BURST``, default 100; ``0``
turns it off): over it the answer is 429 with ``Retry-After``, decided before anything else
runs. Requests with credentials never count (authentication decides them). Without keys
(``--insecure-no-auth``, ``bpm dev``) the whole API is keyless by choice: only the keyless
routes count there.

:class:`Cached` answers the expensive keyless routes (readiness, metrics) from one result
for a second: however many callers ask, the work is done once a second (callers that
arrive while it runs wait for that run instead of starting their own).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from starlette.types import ASGIApp, Receive, Scope, Send

from bpm.api.cockpit_auth import COOKIE
from bpm.api.errors import error_response

DEFAULT_RATE = 20.0
DEFAULT_BURST = 100
MAX_ADDRESSES = 10_000
#: The routes that answer without a key (and what /cockpit/static/... starts with).
KEYLESS_PATHS = frozenset({"/health/live", "/health/ready", "/metrics", "/openapi.json"})
KEYLESS_PREFIXES = ("/cockpit",)

T = TypeVar("T")


@dataclass
class _Bucket:
    tokens: float
    at: float


class KeylessLimit:
    """Per client address, at most ``rate`` keyless requests a second (bursts of
    ``burst``); more answer 429 ``RestException`` with ``Retry-After``."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        rate: float = DEFAULT_RATE,
        burst: int = DEFAULT_BURST,
        open_api: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app = app
        self.rate = rate
        self.burst = max(1, burst)
        self.open_api = open_api
        self.clock = clock
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()
        self.refused = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.rate <= 0 or not self._keyless(scope):
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        address = str(client[0]) if client else "unknown"
        wait = self._take(address)
        if wait <= 0:
            await self.app(scope, receive, send)
            return
        self.refused += 1
        retry = max(1, math.ceil(wait))
        resp = error_response(
            429,
            "RestException",
            f"too many requests without credentials from {address}; retry after {retry} s "
            "(or authenticate)",
            headers={"Retry-After": str(retry)},
        )
        await resp(scope, receive, send)

    def _keyless(self, scope: Scope) -> bool:
        path = str(scope.get("path", ""))
        public = path in KEYLESS_PATHS or path.startswith(KEYLESS_PREFIXES)
        if self.open_api:
            return public
        if public:
            return True
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                return False
            if name == b"cookie" and COOKIE.encode() in value:
                return False
        return True

    def _take(self, address: str) -> float:
        """Take a token; 0 when one was there, else the seconds until one is."""
        now = self.clock()
        bucket = self._buckets.get(address)
        if bucket is None:
            bucket = _Bucket(float(self.burst), now)
            self._buckets[address] = bucket
            if len(self._buckets) > MAX_ADDRESSES:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(address)
            bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.at) * self.rate)
            bucket.at = now
        if bucket.tokens >= 1:
            bucket.tokens -= 1
            return 0.0
        return (1 - bucket.tokens) / self.rate


class Cached(Generic[T]):
    """One result of ``compute`` for ``ttl`` seconds; concurrent callers share one run."""

    def __init__(
        self,
        compute: Callable[[], Awaitable[T]],
        ttl: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.compute = compute
        self.ttl = ttl
        self.clock = clock
        self.runs = 0
        self._value: tuple[T, float] | None = None
        self._lock = asyncio.Lock()

    async def get(self) -> T:
        held = self._value
        if held is not None and self.clock() - held[1] < self.ttl:
            return held[0]
        async with self._lock:  # one run at a time; the others take its result
            held = self._value
            if held is not None and self.clock() - held[1] < self.ttl:
                return held[0]
            value = await self.compute()
            self.runs += 1
            self._value = (value, self.clock())
            return value
