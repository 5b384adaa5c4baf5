"""The Grafana dashboard in docs/ asks only for metrics the package exports."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from bpm import Engine
from bpm.contrib.prometheus import DatabaseGauges, PrometheusObserver

DASHBOARD = Path(__file__).resolve().parents[1] / "docs" / "grafana-dashboard.json"


def exprs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["expr"]] if isinstance(node.get("expr"), str) else []
        return found + [e for v in node.values() for e in exprs(v)]
    if isinstance(node, list):
        return [e for v in node for e in exprs(v)]
    return []


def exported(pg_database_url: str) -> set[str]:
    registry = CollectorRegistry()
    PrometheusObserver(registry)
    names = {s.name for f in registry.collect() for s in f.samples} | {
        f.name for f in registry.collect()
    }
    for kind in ("_total", "_bucket", "_sum", "_count"):  # samples of labelled series
        names |= {f.name + kind for f in registry.collect()}
    engine = Engine(pg_database_url)
    try:
        names |= {f.name for f in DatabaseGauges(engine).collect()}
    finally:
        engine.close()
    return names


def test_every_metric_of_the_dashboard_is_exported(pg_database_url: str) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    queries = exprs(dashboard["panels"]) + exprs(dashboard["templating"])
    used = {m for q in queries for m in re.findall(r"\bbpm_[a-z_]+", q)}
    assert len(queries) >= 20 and len(used) >= 12
    assert used <= exported(pg_database_url), used - exported(pg_database_url)
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
