"""``bpm dev``: the cockpit is open on localhost and may act without a key, with the
page's CSRF token, and only when addressed as localhost (no DNS rebinding)."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import httpx

from bpm import Engine
from tests.api.conftest import BPM, ROOT, free_port, one_task
from tests.engine_helpers import table_dump
from tests.support import eventually


def test_bpm_dev_cockpit_acts_without_keys_from_localhost_only(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'dev.db'}"
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("BPM_API_KEYS", None)
    log = open(tmp_path / "dev.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [*BPM, "dev", "--db", url, "--port", str(port)],
        env=env,
        cwd=tmp_path,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:

        def up() -> bool:
            assert proc.poll() is None, (tmp_path / "dev.log").read_text()
            try:
                return httpx.get(f"{base}/health/live", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        eventually(up, timeout=30, what="bpm dev to serve")
        engine = Engine(url)
        engine.deploy(one_task("ext", "t"))
        iid = engine.start("ext").id
        http = httpx.Client(base_url=base, timeout=30)
        me = http.get("/api/session").json()
        assert me["open"] is True and me["canAct"] is True and me["csrf"]
        assert "/cockpit" in (tmp_path / "dev.log").read_text()

        before = table_dump(engine)
        refused = [
            http.post(f"/api/instances/{iid}/suspend"),  # no token
            http.post(f"/api/instances/{iid}/suspend", headers={"X-CSRF-Token": "x"}),
            # a page of a site whose name resolves to 127.0.0.1 (DNS rebinding)
            http.post(
                f"/api/instances/{iid}/suspend",
                headers={"X-CSRF-Token": me["csrf"], "Host": f"evil.example:{port}"},
            ),
        ]
        assert [r.status_code for r in refused] == [403, 403, 403]
        assert table_dump(engine) == before

        ok = http.post(f"/api/instances/{iid}/suspend", headers={"X-CSRF-Token": me["csrf"]})
        assert ok.status_code == 200 and ok.json()["state"] == "suspended"
        assert engine.get_instance(iid).state.value == "suspended"
        engine.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
