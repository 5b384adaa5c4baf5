"""``/health/live`` (the process answers) and ``/health/ready`` (database reachable, schema
current, broker reachable when ``BPM_BROKER_URL`` is set). No credentials needed, and no
secrets in the answers: load balancers and orchestrators call these.

The readiness checks run at most once a second (``READY_TTL``) however many callers ask
(:class:`bpm.api.keyless.Cached`): an anonymous flood of ``/health/ready`` costs what one
of ``/health/live`` does, not a database round trip each."""

from __future__ import annotations

import asyncio
import os

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from bpm.api.keyless import Cached
from bpm.engine import Engine
from bpm.health import Check, check_broker, check_database, check_migrations, healthy

router = APIRouter()
READY_TIMEOUT = 5.0
READY_TTL = 1.0


def _json(c: Check) -> dict[str, object]:
    return {
        "name": c.name,
        "ok": c.ok,
        "skipped": c.skipped,
        "detail": c.detail,
        "ms": round(c.seconds * 1000, 1),
    }


@router.get("/health/live")
async def live() -> Response:
    return JSONResponse({"status": "ok"}, headers={"Cache-Control": "no-store"})


def readiness(engine: Engine, ttl: float = READY_TTL) -> Cached[list[Check]]:
    """The readiness checks of ``engine``, run at most once per ``ttl`` seconds."""

    async def run() -> list[Check]:
        broker = os.environ.get("BPM_BROKER_URL") or None

        def checks() -> list[Check]:
            return [check_database(engine), check_migrations(engine), check_broker(broker)]

        try:
            return await asyncio.wait_for(run_in_threadpool(checks), READY_TIMEOUT)
        except TimeoutError:
            return [Check("checks", False, f"no answer within {READY_TIMEOUT:.0f} s")]

    return Cached(run, ttl)


@router.get("/health/ready")
async def ready(request: Request) -> Response:
    cached: Cached[list[Check]] | None = getattr(request.app.state, "readiness", None)
    if cached is None:
        engine: Engine = request.app.state.engine
        cached = request.app.state.readiness = readiness(engine)
    checks = await cached.get()
    ok = healthy(checks)
    return JSONResponse(
        {"status": "ok" if ok else "unavailable", "checks": [_json(c) for c in checks]},
        status_code=200 if ok else 503,
        headers={"Cache-Control": "no-store"},
    )
