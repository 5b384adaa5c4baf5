"""A synchronous HTTP client of an app in this process (httpx over ASGI, one event loop):
for cases that need no server process. The app's lifespan is not run."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx


class InProcess:
    """``get``/``post``/``put``/``delete`` as httpx's, against ``app``."""

    def __init__(
        self, app: Any, base_url: str = "http://t/engine-rest", address: str = "127.0.0.1"
    ) -> None:
        self.loop = asyncio.new_event_loop()
        transport = httpx.ASGITransport(app=app, client=(address, 50000))
        self.client = httpx.AsyncClient(transport=transport, base_url=base_url)

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        return self.loop.run_until_complete(self.client.request(method, url, **kwargs))

    def get(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", url, **kwargs)

    def put(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("PUT", url, **kwargs)

    def delete(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("DELETE", url, **kwargs)

    def close(self) -> None:
        self.loop.run_until_complete(self.client.aclose())
        self.loop.close()
