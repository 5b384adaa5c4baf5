"""Migration as a batch (Camunda's ``instance-migration`` batch, ``/migration/executeAsync``):
the batch type that migrates one instance per item, each in the chunk's transaction, with
the batch's author and annotation (:mod:`bpm.engine.batch_types`). Every item is an
instance migrated alone by :func:`bpm.engine.migration_ops.execute`: one that cannot
migrate fails with its reason (``engine.batches.failures``) and the others go on. The
batch id is the operation id of every item, so ``engine.migration.undo(batch_id)`` moves
back the instances of the whole batch that did not advance.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from bpm.engine.batch_types import BatchItem, BatchType, register
from bpm.engine.migration_plan import MigrationPlan
from bpm.errors import InvalidOperation

MIGRATION = "instance-migration"


def plan_params(plan: MigrationPlan) -> dict[str, Any]:
    """A plan as a batch keeps it: Camunda's JSON, with the plan's variables (plain JSON)."""
    out = plan.to_camunda()
    try:
        out["variables"] = json.loads(json.dumps(dict(plan.variables)))
    except (TypeError, ValueError):
        raise InvalidOperation("the variables of a migration batch must be JSON") from None
    return {"plan": out}


def _check(params: Mapping[str, Any]) -> Mapping[str, Any]:
    raw = params.get("plan")
    if not isinstance(raw, Mapping):
        raise InvalidOperation("a migration batch needs its plan (Camunda's migration plan JSON)")
    return plan_params(MigrationPlan.from_camunda(raw))


def _migrate(item: BatchItem) -> None:
    item.engine.migration.execute(
        MigrationPlan.from_camunda(item.params["plan"]),
        [item.item],
        by=item.created_by,
        annotation=item.annotation,
        now=item.now,
        operation_id=item.batch_id,
        summary=False,
    )


register(BatchType(MIGRATION, _migrate, "Migrate", check=_check))
