"""The HTML coverage report: each process's diagram (bpmn-js, the cockpit's vendored
viewer) with the elements and flows the tests took in green and the rest in red.

The report is a directory: ``index.html`` with the diagrams and figures inline, and
``bpmn-js/``, a copy of the viewer, so it opens from disk with no network (``file://``
pages may load scripts beside them, not fetch data: everything else is in the page).
"""

from __future__ import annotations

import html
import json
import shutil
from importlib.resources import files
from pathlib import Path

from bpm.testing.coverage import Coverage

__all__ = ["write_html"]

_VIEWER_FILES = (
    "bpmn-navigated-viewer.production.min.js",
    "LICENSE",
    "assets/diagram-js.css",
    "assets/bpmn-js.css",
    "assets/bpmn-font/css/bpmn.css",
    "assets/bpmn-font/font/bpmn.woff2",
    "assets/bpmn-font/font/bpmn.woff",
    "assets/bpmn-font/font/bpmn.ttf",
    "assets/bpmn-font/font/bpmn.eot",
    "assets/bpmn-font/font/bpmn.svg",
)

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #1f2328; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin: 28px 0 6px; }
table.summary { border-collapse: collapse; }
.summary td, .summary th { padding: 4px 12px; border-bottom: 1px solid #ddd; text-align: right; }
.summary td:first-child, .summary th:first-child { text-align: left; }
.diagram { height: 420px; border: 1px solid #ccc; border-radius: 4px; }
.missed-list { color: #8a1c1c; font-size: 13px; }
.legend span { display: inline-block; padding: 0 8px; margin-right: 8px; border-radius: 3px; }
.legend .c { background: #dff3e4; border: 2px solid #1a7f37; }
.legend .m { background: #fff1f1; border: 2px solid #cf222e; }
.bpm-covered:not(.djs-connection) .djs-visual > :nth-child(1) {
  stroke: #1a7f37 !important; stroke-width: 3px !important; fill: #dff3e4 !important; }
.bpm-missed:not(.djs-connection) .djs-visual > :nth-child(1) {
  stroke: #cf222e !important; stroke-width: 2px !important; fill: #fff1f1 !important; }
.bpm-covered.djs-connection .djs-visual > path {
  stroke: #1a7f37 !important; stroke-width: 3px !important; }
.bpm-missed.djs-connection .djs-visual > path { stroke: #cf222e !important; }
.bpm-id { font: 11px system-ui, sans-serif; color: #57606a; white-space: nowrap; }
"""

_SCRIPT = """
(async function () {
  const data = JSON.parse(document.getElementById('bpm-coverage-data').textContent);
  for (const [i, p] of data.entries()) {
    const el = document.getElementById('diagram-' + i);
    const viewer = new window.BpmnJS({ container: el });
    try {
      await viewer.importXML(p.diagram);
    } catch (err) {
      el.textContent = 'the diagram could not be drawn: ' + err.message;
      continue;
    }
    const canvas = viewer.get('canvas');
    const registry = viewer.get('elementRegistry');
    canvas.zoom('fit-viewport', 'auto');
    const covered = new Set([...p.covered_nodes, ...p.covered_flows]);
    const overlays = viewer.get('overlays');
    for (const id of [...p.nodes, ...p.flows]) {
      const el = registry.get(id);
      if (!el) continue;
      canvas.addMarker(id, covered.has(id) ? 'bpm-covered' : 'bpm-missed');
      // A node without a name (builder models often) is labelled with its id.
      if (!el.waypoints && !(el.businessObject && el.businessObject.name)) {
        const tag = document.createElement('div');
        tag.className = 'bpm-id';
        tag.textContent = id;
        overlays.add(id, 'bpm-id', { position: { bottom: -4, left: 0 }, html: tag });
      }
    }
    el.dataset.loaded = 'true';
  }
  document.body.dataset.loaded = 'true';
})();
"""


def _viewer_dir() -> Path:
    return Path(str(files("bpm.cockpit") / "static" / "vendor" / "bpmn-js"))


def write_html(coverage: Coverage, directory: Path) -> Path:
    """Write the report into ``directory`` (created; files of an earlier report are
    replaced); returns the path of its ``index.html``."""
    directory.mkdir(parents=True, exist_ok=True)
    viewer = directory / "bpmn-js"
    source = _viewer_dir()
    for name in _VIEWER_FILES:
        target = viewer / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / name, target)
    entries = coverage.entries()
    rows = []
    sections = []
    for i, (label, e) in enumerate(entries):
        nodes = f"{len(e.covered_nodes & set(e.nodes))}/{len(e.nodes)}"
        flows = f"{len(e.covered_flows & set(e.flows))}/{len(e.flows)}"
        rows.append(
            f'<tr data-process="{html.escape(label)}"><td><a href="#process-{i}">'
            f"{html.escape(label)}</a></td><td>{nodes}</td><td>{flows}</td>"
            f'<td class="percent">{e.percent:.0f}%</td><td>{len(e.tests)}</td></tr>'
        )
        missed = e.missed()
        missed_html = (
            f'<p class="missed-list">not taken: {html.escape(", ".join(missed))}</p>'
            if missed
            else '<p class="missed-list">everything taken</p>'
        )
        title = html.escape(label + (f" — {e.name}" if e.name else ""))
        sections.append(
            f'<section id="process-{i}"><h2>{title} · {e.percent:.0f}%</h2>{missed_html}'
            f'<div class="diagram" id="diagram-{i}" data-testid="diagram-{i}"></div></section>'
        )
    payload = json.dumps(
        [
            {
                "label": label,
                "diagram": e.diagram,
                "nodes": list(e.nodes),
                "flows": list(e.flows),
                "covered_nodes": sorted(e.covered_nodes),
                "covered_flows": sorted(e.covered_flows),
            }
            for label, e in entries
        ]
    ).replace("</", "<\\/")
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>BPMN coverage</title>
<link rel="stylesheet" href="bpmn-js/assets/diagram-js.css">
<link rel="stylesheet" href="bpmn-js/assets/bpmn-js.css">
<link rel="stylesheet" href="bpmn-js/assets/bpmn-font/css/bpmn.css">
<style>{_STYLE}</style></head>
<body>
<h1>BPMN coverage</h1>
<p class="legend"><span class="c">taken</span><span class="m">not taken</span></p>
<table class="summary"><thead><tr><th>process</th><th>elements</th><th>flows</th>
<th>covered</th><th>tests</th></tr></thead><tbody>{"".join(rows)}</tbody></table>
{"".join(sections)}
<script id="bpm-coverage-data" type="application/json">{payload}</script>
<script src="bpmn-js/bpmn-navigated-viewer.production.min.js"></script>
<script>{_SCRIPT}</script>
</body></html>
"""
    index = directory / "index.html"
    index.write_text(page, encoding="utf-8")
    return index
