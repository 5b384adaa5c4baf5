"""``/metrics`` of a real API process: request latency by route template, and database
gauges equal to what the database holds; ``--workers 2`` sums both server processes;
``bpm dev`` counts the steps its loop runs."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families
from starlette.routing import Mount, Route

from bpm import Engine
from bpm.api.metrics import UNMATCHED, route_template
from tests.api.conftest import BPM, ROOT, Api, ApiServer, bpmn, free_port, one_task
from tests.engine_helpers import table_dump
from tests.support import eventually

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(url: str) -> Samples:
    r = httpx.get(url, timeout=30)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    out: Samples = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def sample(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def requests_of(samples: Samples, route: str, status: str = "200") -> float | None:
    labels = {"method": "GET", "route": route, "status": status}
    return sample(samples, "bpm_api_request_duration_seconds_count", **labels)


INLINE = bpmn(
    "inline",
    """
    <bpmn:startEvent id="start"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="work"/>
    <bpmn:serviceTask id="work" camunda:delegateExpression="${doWork}"/>
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="end"/>
    <bpmn:endEvent id="end"/>
    """,
)


def test_metrics_show_request_latency_by_route_template(api: Api) -> None:
    root = f"http://127.0.0.1:{api.server.port}"
    for _ in range(3):
        assert api.http.get("/engine").status_code == 200
    assert api.http.get("/process-instance/no-such-instance").status_code == 404
    assert httpx.get(f"{root}/no/such/route").status_code == 404
    assert httpx.get(f"{root}/cockpit/static/css/cockpit.css").status_code == 200
    assert httpx.get(f"{root}/api/instances/no-such-instance/trail").status_code == 404

    samples = scrape(f"{root}/metrics")

    assert requests_of(samples, "/engine-rest/engine") == 3
    # The template, never the id: one series per route, whatever ids are asked for.
    assert requests_of(samples, "/engine-rest/process-instance/{instance_id}", "404") == 1
    assert requests_of(samples, "unmatched", "404") == 1
    assert requests_of(samples, "/cockpit/static/{path}") == 1
    assert requests_of(samples, "/api/instances/{instance_id}/trail", "404") == 1
    assert not [k for k in samples if "no-such-instance" in str(k)]
    assert sample(samples, "bpm_metrics_database_up") == 1


def test_database_gauges_equal_the_database(api: Api) -> None:
    api.deploy(one_task("mailing", "mail"))
    api.deploy(INLINE, name="inline.bpmn")
    mails = [api.start("mailing") for _ in range(4)]
    inline = [api.start("inline") for _ in range(2)]  # nothing publishes: they stay Ready
    locked = api.fetch("w1", "mail", max_tasks=2)
    r = api.post(locked[0]["id"], "failure", {"workerId": "w1", "errorMessage": "x", "retries": 0})
    assert r.status_code == 204, r.text

    samples = scrape(f"http://127.0.0.1:{api.server.port}/metrics")

    assert len(mails) == 4 and len(inline) == 2
    tasks = {
        state: sample(samples, "bpm_external_tasks", topic="mail", state=state)
        for state in ("ready", "locked", "expired")
    }
    assert tasks == {"ready": 2, "locked": 1, "expired": 0}
    assert sample(samples, "bpm_open_incidents", definition="mailing", node="work") == 1
    assert sample(samples, "bpm_ready_tokens", definition="inline", node="work") == 2
    assert api.engine.count_external_tasks(topic="mail", locked=False, retries_left=True) == 2
    assert len(api.engine.incidents()) == 1


def test_metrics_need_no_key_where_the_api_does(pg_database_url: str, tmp_path: Path) -> None:
    server = ApiServer(pg_database_url, keys="ops:s3cret", log=tmp_path / "api.log").start()
    try:
        root = f"http://127.0.0.1:{server.port}"
        # a deadline as scrape()'s (httpx's default 5 s ran out on a loaded machine)
        refused = httpx.get(f"{root}/engine-rest/process-definition", timeout=30)
        assert refused.status_code == 401
        samples = scrape(f"{root}/metrics")  # like /health: for the scraper, no secrets
        assert requests_of(samples, "/engine-rest/process-definition", "401") == 1
        assert "s3cret" not in httpx.get(f"{root}/metrics", timeout=30).text
    finally:
        server.kill()


def test_metrics_refuses_other_methods_and_changes_nothing(api: Api) -> None:
    api.deploy(one_task("mailing", "mail"))
    api.start("mailing")
    before = table_dump(api.engine)
    r = httpx.post(f"http://127.0.0.1:{api.server.port}/metrics", content=b"x=1")
    assert r.status_code == 405
    assert set(r.json()) >= {"type", "message"}
    assert table_dump(api.engine) == before


def test_two_server_processes_serve_the_sum_of_both(pg_database_url: str, tmp_path: Path) -> None:
    port = free_port()
    prom_dir = tmp_path / "prom"
    prom_dir.mkdir()
    env = {
        **os.environ,
        "BPM_DATABASE_URL": pg_database_url,
        "PYTHONPATH": str(ROOT),
        "PROMETHEUS_MULTIPROC_DIR": str(prom_dir),
    }
    env.pop("BPM_API_KEYS", None)
    log = open(tmp_path / "api.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [*BPM, "api", "--port", str(port), "--workers", "2", "--insecure-no-auth"],
        env=env,
        cwd=ROOT,
        stdout=log,
        stderr=log,
    )
    root = f"http://127.0.0.1:{port}"
    try:

        def up() -> bool:
            assert proc.poll() is None, (tmp_path / "api.log").read_text()
            try:
                return httpx.get(f"{root}/health/live", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        eventually(up, timeout=90, what="two API processes")  # spawned: slow on a busy host
        for _ in range(40):  # a new connection each: the kernel spreads them over both
            assert httpx.get(f"{root}/engine-rest/engine").status_code == 200
        # Every scrape, whichever process answers it, shows the sum over both.
        for _ in range(4):
            assert requests_of(scrape(f"{root}/metrics"), "/engine-rest/engine") == 40
        files = list(prom_dir.glob("histogram_*.db"))
        assert len(files) >= 2  # the server processes (and the supervisor) write their own
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_route_templates_of_flat_nested_and_mounted_routes() -> None:
    async def endpoint(*_: object) -> None:
        return None

    flat = Route("/engine-rest/process-instance/{instance_id}", endpoint)
    nested = Route("/process-instance/{instance_id}", endpoint)
    path = "/engine-rest/process-instance/abc"
    want = "/engine-rest/process-instance/{instance_id}"
    # Older FastAPI copies included routes with their full path; newer nests them.
    assert route_template({"route": flat, "path": path}) == want
    assert route_template({"route": nested, "path": path}) == want
    mount = Mount("/cockpit/static", app=endpoint)
    assert route_template({"route": mount, "path": "/cockpit/static/a/b.js"}) == (
        "/cockpit/static/{path}"
    )
    mounted = {"path": "/cockpit/static/a.js", "root_path": "/cockpit/static"}
    assert route_template(mounted, "") == "/cockpit/static/{path}"
    wide = Route("/files/{rest:path}", endpoint)
    assert route_template({"route": wide, "path": "/x/files/a/b/c"}) == "/files/{rest:path}"
    assert route_template({"path": "/nothing/here"}) == UNMATCHED


HANDLERS = """
from bpm import service_task

for name in ("validate-order", "reserve-stock", "charge-payment", "ship-order"):
    service_task(name)(lambda ctx: {ctx.node_id: ctx.attempt})
"""


def test_bpm_dev_serves_the_steps_its_loop_ran(tmp_path: Path) -> None:
    (tmp_path / "shop_handlers.py").write_text(HANDLERS)
    url = f"sqlite:///{tmp_path / 'dev.db'}"
    port = free_port()
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    env.pop("BPM_API_KEYS", None)
    log = open(tmp_path / "dev.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [*BPM, "dev", "--db", url, "--port", str(port), "--handlers", "shop_handlers"],
        env=env,
        cwd=tmp_path,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    engine = None
    try:

        def up() -> bool:
            assert proc.poll() is None, (tmp_path / "dev.log").read_text()
            try:
                return httpx.get(f"{base}/health/live", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        eventually(up, timeout=30, what="bpm dev to serve")
        engine = Engine(url)
        engine.deploy(ROOT / "examples" / "order.bpmn")
        started = [
            httpx.post(
                f"{base}/engine-rest/process-definition/key/order/start",
                json={"variables": {"amount": {"value": amount}}},
            )
            for amount in (120, 120, 50)
        ]
        ids = [r.json()["id"] for r in started]
        for iid in ids:
            eventually(lambda iid=iid: engine.get_instance(iid).ended, what=f"{iid} to end")
        executing: dict[str, int] = {}
        for iid in ids:
            for e in engine.history(iid):
                if e.type == "token_executing":
                    executing[e.node_id or ""] = executing.get(e.node_id or "", 0) + 1

        def served() -> dict[str, float]:
            samples = scrape(f"{base}/metrics")
            return {
                node: sample(samples, "bpm_steps_completed_total", definition="order", node=node)
                or 0.0
                for node in executing
            }

        eventually(lambda: served() == executing, timeout=10, what=f"{executing} counted")
        assert executing == {"validate": 3, "reserve": 2, "charge": 2, "ship": 3}
    finally:
        if engine is not None:
            engine.close()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_made_up_methods_and_paths_add_no_series(pg_database_url: str, tmp_path: Path) -> None:
    """Issue 18 item 1: every made-up method and path, answered 401/404/405 to nobody,
    once became a label value of its own (40,000 requests grew /metrics to 156 MB). The
    labels are a closed method set and the app's route templates, whatever is asked."""
    env = {"BPM_API_KEYLESS_RATE": "0"}  # every request answered, none held back (429)
    server = ApiServer(pg_database_url, keys="ops:s3cret", log=tmp_path / "api.log", env=env)
    server.start()
    root = f"http://127.0.0.1:{server.port}"
    try:
        with httpx.Client(base_url=root, timeout=30) as http:
            for i in range(150):
                http.request(f"FAKE{i}", f"/engine-rest/process-instance/x{i}")
                http.request(f"M{i}X", "/health/live")
                http.get(f"/no/such/{i}/route")
                http.get(f"/engine-rest/made-up-{i}")
                http.get(f"/cockpit/static/missing-{i}.js")
                http.get(f"/api/instances/i{i}/trail")
            samples = scrape(f"{root}/metrics")
    finally:
        server.kill()
    series = [
        dict(labels)
        for (name, labels) in samples
        if name == "bpm_api_request_duration_seconds_count"
    ]
    methods = {s["method"] for s in series}
    routes = {s["route"] for s in series}
    assert methods <= {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "other"}
    assert "other" in methods
    assert not [r for r in routes if any(ch.isdigit() for ch in r)], routes
    assert len(series) <= 12, series  # a handful of (method, route, status) triples
