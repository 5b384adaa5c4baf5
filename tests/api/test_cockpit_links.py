"""Deep links into the cockpit: the path form of each page (``/cockpit/instances/ID``)
redirects to its hash route (``/cockpit#/instances/ID``), on a real ``bpm api``; ``bpm start``
and ``bpm show`` print the link when ``BPM_COCKPIT_URL`` says where the cockpit is."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.api.conftest import ROOT, ApiServer
from tests.forked import run_bpm

pytestmark = pytest.mark.slow


@pytest.fixture
def site(pg_database_url: str, tmp_path: Path) -> Iterator[httpx.Client]:
    server = ApiServer(pg_database_url, log=tmp_path / "api.log").start()  # no keys
    root = server.base.removesuffix("/engine-rest")
    with httpx.Client(base_url=root, timeout=30, follow_redirects=False) as http:
        yield http
    server.kill()


def bpm(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m bpm ARGS``, a process of its own forked from the zygote (tests/forked.py)."""
    full = {k: v for k, v in os.environ.items() if k != "BPM_COCKPIT_URL"}
    return run_bpm(
        args,
        env={**full, "PYTHONPATH": str(ROOT), "COLUMNS": "200", **env},
        cwd=ROOT,
        timeout=120,
        argv0=str(ROOT / "bpm" / "__main__.py"),
    )


def test_the_path_form_of_every_page_redirects_to_its_hash_route(site: httpx.Client) -> None:
    for path, target in (
        ("/cockpit/instances/5b1c2d3e-aaaa-bbbb-cccc-000000000001",
         "/cockpit#/instances/5b1c2d3e-aaaa-bbbb-cccc-000000000001"),
        ("/cockpit/instances/5b1c/", "/cockpit#/instances/5b1c"),
        ("/cockpit/instances", "/cockpit#/instances"),
        ("/cockpit/instances?state=failed&definition_id=order:1:x",
         "/cockpit#/instances?state=failed&definition_id=order:1:x"),
        ("/cockpit/definitions/order:3:abc", "/cockpit#/definitions/order:3:abc"),
        ("/cockpit/definitions", "/cockpit#/definitions"),
        ("/cockpit/incidents", "/cockpit#/incidents"),
        ("/cockpit/decisions/d-1", "/cockpit#/decisions/d-1"),
        ("/cockpit/work", "/cockpit#/work"),
    ):  # fmt: skip
        r = site.get(path)
        assert (r.status_code, r.headers["location"]) == (302, target), path
    page = site.get("/cockpit")
    assert page.status_code == 200 and "<title>" in page.text  # where each lands
    # The assets are still the assets; a page the cockpit does not have is a 404 saying which
    # it has.
    js = site.get("/cockpit/static/js/main.js")
    assert js.status_code == 200 and "hashchange" in js.text
    assert site.get("/cockpit/static/js/nothing.js").status_code == 404
    for bad in ("/cockpit/nothing", "/cockpit/nothing/here"):
        r = site.get(bad)
        assert r.status_code == 404, bad
        assert r.json()["message"] == (
            f"no resource at GET {bad}: the cockpit's pages are /cockpit/decisions, "
            "/cockpit/definitions, /cockpit/incidents, /cockpit/instances, /cockpit/work"
        )


def test_bpm_start_and_show_print_the_instance_link_when_the_cockpit_url_is_set(
    site: httpx.Client, pg_database_url: str
) -> None:
    db = ["--db", pg_database_url]
    assert bpm("deploy", "examples/order.bpmn", *db).returncode == 0
    plain = bpm("start", "order", "--var", "amount=120", *db)
    assert plain.returncode == 0, plain.stderr
    assert "cockpit" not in plain.stdout  # not configured: no link

    cockpit = f"{site.base_url}/cockpit"
    started = bpm("start", "order", "--var", "amount=120", *db, BPM_COCKPIT_URL=cockpit + "/")
    assert started.returncode == 0, started.stderr
    first, link_line = started.stdout.splitlines()
    instance_id = first.split()[1]
    assert link_line == f"cockpit: {cockpit}/instances/{instance_id}"

    shown = bpm("show", instance_id, *db, BPM_COCKPIT_URL=cockpit)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.rstrip().splitlines()[-1] == link_line
    as_json = bpm("show", instance_id, "--json", *db, BPM_COCKPIT_URL=cockpit)
    assert as_json.returncode == 0 and "cockpit" not in as_json.stdout  # JSON as it was

    # The printed link opens the instance's page.
    r = site.get(link_line.removeprefix("cockpit: "))
    assert (r.status_code, r.headers["location"]) == (302, f"/cockpit#/instances/{instance_id}")
