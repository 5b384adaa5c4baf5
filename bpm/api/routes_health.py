"""``/health/live`` (the process answers) and ``/health/ready`` (database reachable, schema
current, broker reachable when ``BPM_BROKER_URL`` is set). No credentials needed, and no
secrets in the answers: load balancers and orchestrators call these."""

from __future__ import annotations

import asyncio
import os

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from bpm.engine import Engine
from bpm.health import Check, check_broker, check_database, check_migrations, healthy

router = APIRouter()
READY_TIMEOUT = 5.0


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


@router.get("/health/ready")
async def ready(request: Request) -> Response:
    engine: Engine = request.app.state.engine
    broker = os.environ.get("BPM_BROKER_URL") or None

    def run() -> list[Check]:
        return [check_database(engine), check_migrations(engine), check_broker(broker)]

    try:
        checks = await asyncio.wait_for(run_in_threadpool(run), READY_TIMEOUT)
    except TimeoutError:
        checks = [Check("checks", False, f"no answer within {READY_TIMEOUT:.0f} s")]
    ok = healthy(checks)
    return JSONResponse(
        {"status": "ok" if ok else "unavailable", "checks": [_json(c) for c in checks]},
        status_code=200 if ok else 503,
        headers={"Cache-Control": "no-store"},
    )
