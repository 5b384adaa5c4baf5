"""A loan application as a Python builder process, with its handlers in the same file.

Run it embedded, with no broker and no server (SQLite ``./bpm.db``):

    bpm run examples/loan.py --var amount=5000
    bpm deploy examples/loan.py          # or examples/loan.py:process, examples.loan:process

See docs/embedded.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bpm import TaskContext, service_task
from bpm.builder import Process


@service_task("score-applicant")
def score(ctx: TaskContext) -> Mapping[str, Any]:
    return {"score": 700 if ctx.variables.get("amount", 0) < 10_000 else 550}


@service_task("approve-loan")
def approve(ctx: TaskContext) -> Mapping[str, Any]:
    return {"approved": True}


@service_task("reject-loan")
def reject(ctx: TaskContext) -> Mapping[str, Any]:
    return {"approved": False}


process = (
    Process("loan", name="Loan application")
    .start("received")
    .service_task("score", handler="score-applicant")
    .exclusive("good_score", default="low")
    .service_task("approve", handler="approve-loan")
    .service_task("reject", handler="reject-loan")
    .end("done")
    .sequence("received", "score", "good_score")
    .flow("good_score", "approve", "${score >= 650}", id="high")
    .flow("good_score", "reject", id="low")
    .flow("approve", "done")
    .flow("reject", "done")
)
