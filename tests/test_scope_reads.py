"""The reads of a step's scopes stay within its instance (PostgreSQL's plans).

A step inside a multi-instance activity (a canvas group member) needs its scope and the
scopes around it, read by a recursive statement on every claim and every finish. Its
plan must not depend on how many scopes the table holds: unbounded, the planner hashed the
whole ``scope`` table, every scope of every instance that ever ran, on each call.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Connection, select, text

from bpm import Engine
from bpm.builder import Process
from bpm.runtime.states import ScopeKind
from bpm.store import tables as t
from bpm.store import work


def _plan_nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    out = [plan]
    for child in plan.get("Plans", []):
        out.extend(_plan_nodes(child))
    return out


def _explain(conn: Connection, statement: Any, params: dict[str, Any]) -> list[dict[str, Any]]:
    sql = statement.params(**params).compile(
        dialect=conn.dialect, compile_kwargs={"literal_binds": True}
    )
    (row,) = conn.execute(text(f"EXPLAIN (FORMAT JSON) {sql}")).all()
    found = row[0] if isinstance(row[0], list) else json.loads(row[0])
    return _plan_nodes(found[0]["Plan"])


def _whole_scope_scans(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [x for x in nodes if x["Node Type"] == "Seq Scan" and x.get("Relation Name") == "scope"]


def test_a_step_s_scope_chain_is_read_within_its_instance(pg_engine: Engine) -> None:
    pg_engine.deploy(
        Process("many")
        .start("s")
        .user_task("ask", for_each="items", as_="item", collect="answers", output="answer")
        .end("e")
        .sequence("s", "ask", "e")
    )
    ids = [pg_engine.start("many", {"items": list(range(25))}).id for _ in range(60)]
    mine = ids[0]
    with pg_engine.core.tx() as conn:
        conn.execute(text("ANALYZE scope"))
        conn.execute(text("ANALYZE token"))
        total = conn.execute(select(t.scope.c.id)).all()
        assert len(total) == 60 * 26  # a body and 25 inner instances each
        inner = {
            r.id
            for r in conn.execute(
                select(t.scope.c.id).where(
                    t.scope.c.instance_id == mine,
                    t.scope.c.kind == ScopeKind.INNER_INSTANCE.value,
                )
            )
        }
        # what a claim of this instance's steps reads: their scopes and the body around them
        chains = work.scope_chains(conn, inner, {mine})
        assert {s.kind for s in chains.values()} == {
            ScopeKind.INNER_INSTANCE,
            ScopeKind.MULTI_INSTANCE,
        }
        assert len(chains) == 26 and {s.instance_id for s in chains.values()} == {mine}
        claim_read = select(
            work._with_parents(t.scope.c.id.in_(sorted(inner)), t.scope.c.instance_id.in_([mine]))
        )
        assert _whole_scope_scans(_explain(conn, claim_read, {})) == []
        # what a finish of one of its steps reads (one instance: one round trip)
        _, _, finish_read, _ = work._one(None)
        assert _whole_scope_scans(_explain(conn, finish_read, {"key": mine})) == []
