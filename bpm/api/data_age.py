"""How old a page's data is: the ``X-Bpm-Data-Age`` header of the routes that read on the
read replica (``/history/*``; :mod:`bpm.engine.replica`).

Only with a replica configured (``BPM_DATABASE_READ_URL``): the seconds the replica was
behind the primary when the page was answered, ``0`` when the read went to the primary
(the replica was further behind than ``BPM_DATABASE_READ_MAX_LAG``, or away). A client
that just changed something and must see it reads the runtime endpoints instead, which are
always served by the primary.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from bpm.engine import Engine

HEADER = "X-Bpm-Data-Age"


class DataAgeRoute(APIRoute):
    """A route whose answers say how old their data is (see the module docstring)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        answer = super().get_route_handler()

        async def with_age(request: Request) -> Response:
            response = await answer(request)
            engine: Engine = request.app.state.engine
            if engine.core.replica is not None:
                age = await run_in_threadpool(engine.read_age)
                response.headers[HEADER] = "0" if age is None else f"{age:.3f}"
            return response

        return with_age
