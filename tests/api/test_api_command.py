"""``bpm api`` says where it serves, whether auth is on and the cockpit's URL once its port
is bound, a line when it stops, and logs each request only with ``--access-log``."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.api.conftest import BPM, ROOT
from tests.support import eventually, free_port

pytestmark = pytest.mark.slow

KEYS = "ops:0perat0r-secret,dash:viewer-secret:role=viewer,w1:w-secret:charge|ship"


class Served:
    """One ``bpm api`` process, its stdout and stderr in files."""

    def __init__(self, tmp_path: Path, db: str, *args: str, keys: str | None = None) -> None:
        env = {**os.environ, "BPM_DATABASE_URL": db, "PYTHONPATH": str(ROOT)}
        env.pop("BPM_API_KEYS", None)
        env.pop("BPM_LOG_FORMAT", None)
        if keys is not None:
            env["BPM_API_KEYS"] = keys
        self.out, self.err = tmp_path / "out.log", tmp_path / "err.log"
        with open(self.out, "wb") as out, open(self.err, "wb") as err:
            self.proc = subprocess.Popen(
                [*BPM, "api", *args], env=env, cwd=ROOT, stdout=out, stderr=err
            )

    def stderr(self) -> str:
        return self.err.read_text()

    def stdout(self) -> str:
        return self.out.read_text()

    def port(self) -> int:
        def printed() -> re.Match[str] | None:
            if self.proc.poll() is not None:
                raise AssertionError(f"bpm api exited with {self.proc.returncode}: {self.stderr()}")
            return re.search(r"bpm api: serving on .*, port (\d+) ", self.stderr())

        try:
            return int(eventually(printed, timeout=60, what="the start lines").group(1))
        except BaseException:
            self.stop()
            raise

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise


def test_bpm_api_prints_its_urls_and_auth_on_start_and_a_line_on_stop(
    pg_database_url: str, tmp_path: Path
) -> None:
    server = Served(tmp_path, pg_database_url, "--port", "0", "--access-log", keys=KEYS)
    try:
        port = server.port()  # --port 0: the port it got is the one printed
        base = f"http://127.0.0.1:{port}"
        # The start lines come before uvicorn serves (its start-up and the first request's
        # route set-up took over 10 s on the loaded CI machine): a deadline, not a measure.
        assert httpx.get(f"{base}/health/live", timeout=60).status_code == 200
        assert httpx.get(f"{base}/engine-rest/engine", timeout=60).status_code == 401
    finally:
        code = server.stop()
    err = server.stderr()
    assert code == 0, err
    lines = err.splitlines()
    assert lines[:8] + lines[-1:] == [
        f"bpm api: serving on 127.0.0.1, port {port} (1 process); Ctrl-C or SIGTERM stops it",
        f"  REST API:   {base}/engine-rest",
        f"  cockpit:    {base}/cockpit (sign in with a key's secret)",
        f"  API docs:   {base}/docs  (OpenAPI: {base}/openapi.json)",
        f"  health:     {base}/health/live, {base}/health/ready; metrics: {base}/metrics",
        "  auth: on, 3 API keys from BPM_API_KEYS (1 operator, 1 viewer, 1 worker)",
        "  access log: on (one line per request on stdout)",
        f"  links from bpm start / bpm show: export BPM_COCKPIT_URL={base}/cockpit",
        f"bpm api: stopped (was serving {base})",
    ]
    assert "Traceback" not in err
    requests = [line for line in server.stdout().splitlines() if "HTTP/1.1" in line]
    assert len(requests) == 2
    assert '"GET /health/live HTTP/1.1" 200' in requests[0]
    assert '"GET /engine-rest/engine HTTP/1.1" 401' in requests[1]


def test_without_auth_it_says_so_and_without_access_log_no_request_is_logged(
    pg_database_url: str, tmp_path: Path
) -> None:
    port = free_port()
    server = Served(
        tmp_path, pg_database_url, "--host", "0.0.0.0", "--port", str(port),
        "--workers", "2", "--insecure-no-auth",
    )  # fmt: skip
    try:
        assert server.port() == port
        base = f"http://127.0.0.1:{port}"

        def answers() -> bool:
            try:
                return httpx.get(f"{base}/engine-rest/engine", timeout=5).status_code == 200
            except httpx.HTTPError:  # the processes start after the start lines
                return False

        eventually(answers, timeout=90, what="the server processes to answer")
    finally:
        code = server.stop()
    err = server.stderr()
    assert code == 0, err
    assert f"bpm api: serving on all interfaces, port {port} (2 processes, starting)" in err
    assert f"  cockpit:    {base}/cockpit\n" in err
    assert (
        "  auth: OFF, serving WITHOUT authentication (--insecure-no-auth): anyone who reaches "
        "the port may call"
    ) in err
    assert "  access log: off (--access-log to log each request)" in err
    assert err.rstrip().endswith(f"bpm api: stopped (was serving {base})")
    assert "HTTP/1.1" not in server.stdout()
    assert "Traceback" not in err


def test_a_bad_log_level_or_a_taken_port_is_one_line_and_nothing_served(
    pg_database_url: str, tmp_path: Path
) -> None:
    bad = Served(tmp_path, pg_database_url, "--log-level", "loud", "--insecure-no-auth")
    assert bad.proc.wait(timeout=60) == 2
    assert "--log-level 'loud' is not a log level; use critical, error, warning" in bad.stderr()
    assert "bpm api: serving" not in bad.stderr()

    port = free_port()
    for name in ("first", "second"):
        (tmp_path / name).mkdir()
    first = Served(tmp_path / "first", pg_database_url, "--port", str(port), "--insecure-no-auth")
    try:
        assert first.port() == port
        second = Served(
            tmp_path / "second", pg_database_url, "--port", str(port), "--insecure-no-auth"
        )
        assert second.proc.wait(timeout=60) == 2
        err = second.stderr()
        assert f"cannot listen on 127.0.0.1:{port}: is another server using the port?" in err
        assert "bpm api: serving" not in err and "Traceback" not in err
    finally:
        assert first.stop() == 0
