"""What anonymous callers cost a real client (issue 18 item 9).

One ``bpm api`` process with a key; a real client (the key, ``GET
/engine-rest/process-instance/count``: one database read) counts its requests a second,
alone and while 20 anonymous flooders hammer one keyless route as fast as they can
(``/health/live``, ``/health/ready``, ``/metrics``, or a ``/engine-rest`` route answered
401) from a process of their own. Each phase lasts ``--seconds``; every request goes to
127.0.0.1 only.

    python -m bench.keyless                       # 10 s a phase, 20 flooders, every route
    python -m bench.keyless --seconds 5 --routes ready,metrics
    python -m bench.keyless --root /path/to/an/older/checkout   # the same, older code

``--root`` runs the server from another checkout (the "before" figures); the database is
migrated with this checkout's schema, which the older one must share.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

import httpx
import psycopg

from bench.support import ROOT

ADMIN = os.environ.get("BPM_TEST_PG_DSN", "postgresql://root@127.0.0.1:5432/test")
ROUTES = {
    "live": "/health/live",
    "ready": "/health/ready",
    "metrics": "/metrics",
    "401": "/engine-rest/process-instance/count",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _database() -> tuple[str, str]:
    from bpm.store import db as bpm_db
    from bpm.store import migrate

    name = f"bpm_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base = ADMIN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1)
    url = f"{base}/{name}"
    eng = bpm_db.connect(url)
    migrate.upgrade(eng)
    eng.dispose()
    return name, url


def _drop(name: str) -> None:
    with psycopg.connect(ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _loop(base: str, path: str, seconds: float, auth: tuple[str, str] | None) -> Counter[int]:
    seen: Counter[int] = Counter()
    deadline = time.monotonic() + seconds
    with httpx.Client(base_url=base, auth=auth, timeout=30) as http:
        while time.monotonic() < deadline:
            try:
                seen[http.get(path).status_code] += 1
            except httpx.HTTPError:
                seen[0] += 1
    return seen


async def _flood(url: str, flooders: int, seconds: float) -> Counter[int]:
    """``flooders`` anonymous connections asking ``url`` as fast as they can."""
    seen: Counter[int] = Counter()
    deadline = time.monotonic() + seconds

    async def one(http: httpx.AsyncClient) -> None:
        while time.monotonic() < deadline:
            try:
                seen[(await http.get(url)).status_code] += 1
            except httpx.HTTPError:
                seen[0] += 1

    limits = httpx.Limits(max_connections=flooders, max_keepalive_connections=flooders)
    async with httpx.AsyncClient(timeout=30, limits=limits) as http:
        await asyncio.gather(*(one(http) for _ in range(flooders)))
    return seen


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) the process ``pid`` has used so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def phase(
    base: str, route: str | None, flooders: int, seconds: float
) -> tuple[float, Counter[int]]:
    """The real client's requests a second, and what the flooders got (status: count).

    The flooders run in a process of their own (asyncio, one connection each), so that
    they and the real client do not share one interpreter lock."""
    flood: Counter[int] = Counter()
    proc = None
    if route is not None:
        cmd = [sys.executable, "-m", "bench.keyless", "--flood", base + ROUTES[route]]
        cmd += ["--flooders", str(flooders), "--seconds", str(seconds)]
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
        time.sleep(0.5)  # let the flood start
    real = _loop(base, ROUTES["401"], seconds, ("bench", "bench-secret"))
    if proc is not None:
        out, _ = proc.communicate(timeout=seconds + 60)
        flood.update({int(k): v for k, v in json.loads(out).items()})
    return real[200] / seconds, flood


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--flooders", type=int, default=20)
    parser.add_argument("--routes", default="live,ready,metrics,401")
    parser.add_argument("--root", type=Path, default=ROOT, help="checkout to serve from")
    parser.add_argument("--flood", help=argparse.SUPPRESS)  # the flooders' process
    args = parser.parse_args(argv)
    if args.flood:
        got = asyncio.run(_flood(args.flood, args.flooders, args.seconds))
        print(json.dumps(dict(got)))
        return
    name, url = _database()
    port = _free_port()
    root = args.root.resolve()
    env = {
        **os.environ,
        "BPM_DATABASE_URL": url,
        "BPM_API_KEYS": "bench:bench-secret",
        "PYTHONPATH": str(root),
    }
    log = Path(tempfile.mkdtemp(prefix="bench-keyless-")) / "api.log"
    cmd = [sys.executable, "-c", "from bpm.cli import main; main()", "api", "--port", str(port)]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/health/live", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit(f"the API did not start; see {log}")
            time.sleep(0.1)
        load = os.getloadavg()[0]
        print(f"server from {root}; {args.flooders} flooders; {args.seconds:.0f} s a phase;")
        print(f"load average at start {load:.1f} (figures under load when above ~1)")
        cpu = cpu_seconds(proc.pid)
        alone, _ = phase(base, None, 0, args.seconds)
        used = cpu_seconds(proc.pid) - cpu
        per_real = used / max(1.0, alone * args.seconds) * 1000
        print(
            f"{'real client alone':<40} {alone:7.1f} req/s"
            f"   (server {per_real:.2f} ms CPU a request)"
        )
        for route in args.routes.split(","):
            cpu = cpu_seconds(proc.pid)
            rate, flood = phase(base, route, args.flooders, args.seconds)
            used = cpu_seconds(proc.pid) - cpu
            flooded = sum(flood.values())
            # the server's CPU beyond the real client's share, per anonymous request
            extra = max(0.0, used - per_real / 1000 * rate * args.seconds)
            statuses = ", ".join(f"{s}: {n}" for s, n in sorted(flood.items()))
            print(
                f"{'with the flood on ' + ROUTES[route]:<40} {rate:7.1f} req/s"
                f"   (flood {flooded / args.seconds:.0f} req/s, {statuses}; server "
                f"{extra / max(1, flooded) * 1000:.2f} ms CPU an anonymous request)"
            )
        print(f"load average at end {os.getloadavg()[0]:.1f}")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        _drop(name)


if __name__ == "__main__":
    main()
