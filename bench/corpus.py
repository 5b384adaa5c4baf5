"""Deploy every ``.bpmn`` file under a folder and say, per source folder, what happened.

```sh
python -m bench.corpus /work/corpus              # a table per source folder, then totals
python -m bench.corpus /work/corpus --details    # also every refusal and crash, one line each
python -m bench.corpus DIR --json out.json       # the per-file outcomes, for comparisons
```

Each file is deployed on the embedded default (SQLite, in a temporary folder) exactly as
``bpm deploy FILE`` would, and ends in one of:

``deployed``
    every executable process of the file deployed (warnings allowed);
``refused``
    a :class:`~bpm.errors.DeploymentError`: the problems name element ids, which are
    mapped back to their element kinds (``boundaryEvent:message``, ``subProcess``...) to rank
    what stops models from deploying;
``crashed``
    any other exception: a bug, whatever the file holds.

Only *valid executable models* count in the ratio: well-formed XML whose root is BPMN
``definitions`` with at least one ``process`` that is ``isExecutable="true"`` or has no
``isExecutable`` attribute. Other files (diagram-only exports, non-executable collaboration
models, DMN or CMMN saved as .bpmn) are counted apart. Files whose path (within their
source folder) says they are broken on purpose (``invalid``, ``broken``, ``illegal``... see
``--broken``) are listed apart too: each of them should be refused.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from xml.etree.ElementTree import Element

from defusedxml import ElementTree as SafeET

BPMN_NS = "http://www.omg.org/spec/BPMN/20100524/MODEL"
DEFAULT_BROKEN = r"invalid|broken|illegal|malformed|unparsable|unparseable|notallowed"


@dataclass
class Outcome:
    """What deploying one file did."""

    path: str
    source: str
    valid: bool
    broken: bool
    result: str  # deployed | refused | crashed | skipped (not a valid executable model)
    kinds: list[str] = field(default_factory=list)
    message: str = ""
    processes: int = 0
    warnings: int = 0


def _local(tag: str) -> tuple[str, str]:
    if tag.startswith("{"):
        ns, _, name = tag[1:].partition("}")
        return ns, name
    return "", tag


def _kind(el: Element) -> str:
    """``boundaryEvent:message`` for events, the local name for everything else."""
    _, name = _local(el.tag)
    for child in el:
        _, child_name = _local(child.tag)
        if child_name.endswith("EventDefinition"):
            return f"{name}:{child_name.removesuffix('EventDefinition')}"
    return name


def classify(data: bytes) -> tuple[bool, dict[str, str], str]:
    """(is a valid executable model, element id -> kind, why not)."""
    try:
        root = SafeET.fromstring(data, forbid_dtd=False)
    except Exception as exc:  # not XML, or refused entities: not a model we can judge
        return False, {}, f"not XML: {type(exc).__name__}"
    if root.tag != f"{{{BPMN_NS}}}definitions":
        return False, {}, f"root is {_local(root.tag)[1]}"
    kinds = {el.get("id", ""): _kind(el) for el in root.iter() if el.get("id")}
    processes = [p for p in root if p.tag == f"{{{BPMN_NS}}}process"]
    executable = [
        p for p in processes if (p.get("isExecutable") or "true").strip().lower() == "true"
    ]
    if not executable:
        return False, kinds, "no executable process" if processes else "no process"
    return True, kinds, ""


def _problem_kind(problem: Any, kinds: dict[str, str]) -> str:
    element_id = getattr(problem, "element_id", None)
    if element_id and element_id in kinds:
        return kinds[element_id]
    message = str(getattr(problem, "message", problem))
    message = re.sub(r"\d+", "N", re.sub(r"'[^']*'", "'…'", message))
    return "(file) " + message[:60]


class Deployer:
    """One engine on a throwaway SQLite file; deploys like ``bpm deploy``."""

    def __init__(self, folder: Path) -> None:
        from bpm import Engine

        self.engine = Engine(f"sqlite:///{folder / 'corpus.db'}")
        self.engine.upgrade()

    def deploy(self, path: Path) -> tuple[int, int]:
        """(processes deployed, warnings); raises what deploy raises."""
        create = getattr(self.engine, "create_deployment", None)
        if create is not None:  # every executable process of the file
            deployment = create(path)
            return len(deployment.definitions), len(deployment.warnings)
        definition = self.engine.deploy(path)
        return 1, len(self.engine.model(definition.id).warnings)


def run_one(deployer: Deployer, root: Path, path: Path, broken: re.Pattern[str]) -> Outcome:
    from bpm.errors import DeploymentError

    rel = path.relative_to(root)
    source = rel.parts[0] if len(rel.parts) > 1 else "."
    data = path.read_bytes()
    valid, kinds, why = classify(data)
    inside = "/".join(rel.parts[1:])  # the path within its source, folders included
    out = Outcome(str(rel), source, valid, bool(broken.search(inside)), "skipped")
    try:
        out.processes, out.warnings = deployer.deploy(path)
        out.result = "deployed"
    except DeploymentError as exc:
        out.result = "refused"
        out.kinds = sorted({_problem_kind(p, kinds) for p in exc.problems})
        out.message = str(exc.problems[0]) if exc.problems else str(exc)
    except Exception as exc:  # the point of this tool: anything else is a crash
        out.result = "crashed"
        out.message = f"{type(exc).__name__}: {exc}"[:300]
    if not valid and out.result != "crashed":
        out.result, out.message = "skipped", out.message or why
    return out


def _progress(done: int, total: int, started: float, name: str) -> None:
    if not sys.stderr.isatty():
        if done == total or done % 100 == 0:
            print(f"{done}/{total} files", file=sys.stderr, flush=True)
        return
    rate = done / max(time.monotonic() - started, 1e-6)
    left = (total - done) / rate if rate else 0
    line = f"[{done}/{total}] {rate:5.1f} files/s, ~{left:4.0f}s left  {name[-60:]}"
    print(f"\r{line:<110}", end="" if done < total else "\n", file=sys.stderr, flush=True)


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:5.1f}%" if whole else "    -"


def report(outcomes: list[Outcome], *, details: bool, top: int) -> str:
    """The per-source table, the totals and the ranked refusing kinds."""
    lines: list[str] = []
    head = (
        f"{'source':<20} {'files':>6} {'valid':>6} {'deploy':>7} {'refused':>7} {'crash':>6} "
        f"{'deploy%':>8}   {'broken':>6} {'refused':>8}"
    )
    lines += [head, "-" * len(head)]
    sources = sorted({o.source for o in outcomes})
    for source in [*sources, "TOTAL"]:
        rows = [o for o in outcomes if source in ("TOTAL", o.source)]
        if source == "TOTAL":
            lines.append("-" * len(head))
        valid = [o for o in rows if o.valid and not o.broken]
        deployed = sum(o.result == "deployed" for o in valid)
        refused = sum(o.result == "refused" for o in valid)
        crashed = sum(o.result == "crashed" for o in rows)
        broken = [o for o in rows if o.broken and o.valid]
        lines.append(
            f"{source:<20} {len(rows):>6} {len(valid):>6} {deployed:>7} {refused:>7} "
            f"{crashed:>6} {_pct(deployed, len(valid)):>8}   {len(broken):>6} "
            f"{sum(o.result == 'refused' for o in broken):>8}"
        )
    lines.append(
        "valid = valid executable models, not counting the broken-on-purpose ones; "
        "crash counts every file"
    )
    ranked = Counter(k for o in outcomes if o.result == "refused" and o.valid for k in o.kinds)
    lines += ["", f"refusing element kinds (valid models refused because of each, top {top}):"]
    lines += [f"{count:>6}  {kind}" for kind, count in ranked.most_common(top)]
    crashes = [o for o in outcomes if o.result == "crashed"]
    if crashes:
        lines += ["", "crashes:"]
        lines += [f"  {o.path}: {o.message}" for o in crashes]
    broken_deployed = [o for o in outcomes if o.broken and o.valid and o.result == "deployed"]
    if broken_deployed:
        lines += ["", "deployed although the name says broken (check each):"]
        lines += [f"  {o.path}" for o in broken_deployed]
    if details:
        lines += ["", "refused:"]
        lines += [f"  {o.path}: {o.message}" for o in outcomes if o.result == "refused" and o.valid]
    return "\n".join(lines)


def run(root: Path, files: Iterable[Path], broken: re.Pattern[str]) -> list[Outcome]:
    paths = sorted(files)
    outcomes: list[Outcome] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bpm-corpus-") as tmp:
        deployer = Deployer(Path(tmp))
        for i, path in enumerate(paths, 1):
            outcomes.append(run_one(deployer, root, path, broken))
            _progress(i, len(paths), started, str(path))
        deployer.engine.close()
    return outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("folder", type=Path, help="Deploy every .bpmn file under this folder.")
    parser.add_argument("--details", action="store_true", help="List every refusal.")
    parser.add_argument("--json", type=Path, help="Write the per-file outcomes here.")
    parser.add_argument("--top", type=int, default=30, help="How many refusing kinds to rank.")
    parser.add_argument(
        "--broken", default=DEFAULT_BROKEN, help="Paths (regex) of broken-on-purpose models."
    )
    args = parser.parse_args(argv)
    root: Path = args.folder.resolve()
    if not root.is_dir():
        parser.error(f"{root} is not a folder")
    outcomes = run(root, root.rglob("*.bpmn"), re.compile(args.broken, re.IGNORECASE))
    print(report(outcomes, details=args.details, top=args.top))
    if args.json is not None:
        args.json.write_text(json.dumps([asdict(o) for o in outcomes], indent=1))
    return 1 if any(o.result == "crashed" for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
