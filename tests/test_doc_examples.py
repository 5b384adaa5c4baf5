"""Every Python block of the README and docs/ marked ``<!-- tested ... -->`` runs as it is
written, in a fresh process and an empty directory, so the examples cannot drift."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MARKED = re.compile(r"<!-- tested[^>]*-->\n```python\n(.*?)\n```", re.S)


def _blocks() -> list[tuple[str, str]]:
    out = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for n, match in enumerate(MARKED.finditer(doc.read_text()), start=1):
            out.append((f"{doc.relative_to(ROOT)}#{n}", match.group(1)))
    return out


BLOCKS = _blocks()


def test_the_readme_and_the_embedded_guide_have_tested_examples() -> None:
    names = {name.split("#")[0] for name, _ in BLOCKS}
    assert {"README.md", "docs/embedded.md"} <= names


@pytest.mark.parametrize(("name", "code"), BLOCKS, ids=[name for name, _ in BLOCKS])
def test_a_doc_example_runs(name: str, code: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BPM_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    res = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, f"{name} failed:\n{res.stdout}\n{res.stderr}"
