"""The batch versions of the operations people run on many instances (issue 22, item 5):
modify, delete (terminate), suspend and activate, set variables, retry failed steps, set
the retries of external tasks. Each is a :class:`~bpm.engine.batch_types.BatchType`
registered here under Camunda's batch type name, and a method of ``engine.batches``
(:class:`OperationBatches`). Every item goes through the engine's own operation, so it
is checked, recorded in the trail and in the operation log (with the batch's author and
id) exactly as one call would be.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from bpm.engine.batch_types import BatchItem, BatchType, register
from bpm.engine.batches import Batch, Batches
from bpm.engine.modification import (
    MAX_INSTRUCTIONS,
    Cancel,
    Instruction,
    StartAfter,
    StartBefore,
    StartTransition,
)
from bpm.errors import InvalidOperation
from bpm.runtime.variable_types import Typed, split

MODIFICATION = "instance-modification"
DELETION = "instance-deletion"
SUSPENSION = "instance-update-suspension-state"
SET_VARIABLES = "set-variables"
JOB_RETRIES = "set-job-retries"
EXTERNAL_TASK_RETRIES = "set-external-task-retries"


# -- modification ------------------------------------------------------------------------
def _plain(value: Any, what: str) -> Any:
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        raise InvalidOperation(f"{what} of a batch must be JSON values") from None


def encode_variables(variables: Mapping[str, Any], what: str) -> dict[str, Any]:
    """Variables as a batch keeps them in its JSON: the values, and the Camunda type of
    those written with one (:class:`~bpm.runtime.variable_types.Typed`: ``Date``, ``Long``)."""
    values, types = split(variables)
    return {"values": _plain(values, what), "types": types}


def decode_variables(kept: Mapping[str, Any] | None) -> dict[str, Any]:
    """Back from :func:`encode_variables`."""
    if not kept:
        return {}
    types = dict(kept.get("types") or {})
    return {
        name: Typed(value, types[name]) if name in types else value
        for name, value in dict(kept.get("values") or {}).items()
    }


def instruction_json(ins: Instruction) -> dict[str, Any]:
    """An instruction as a batch keeps it (Camunda's instruction JSON, plain variables)."""
    if isinstance(ins, Cancel):
        return {
            "type": "cancel",
            "activityId": ins.activity_id,
            "activityInstanceId": ins.activity_instance_id,
            "transitionInstanceId": ins.transition_instance_id,
            "cancelCurrentActiveActivityInstances": ins.current_only,
        }
    if isinstance(ins, StartTransition):
        out: dict[str, Any] = {"type": "startTransition", "transitionId": ins.transition_id}
    elif isinstance(ins, StartAfter):
        out = {"type": "startAfterActivity", "activityId": ins.activity_id}
    elif isinstance(ins, StartBefore):
        out = {"type": "startBeforeActivity", "activityId": ins.activity_id}
    else:
        raise InvalidOperation(f"{type(ins).__name__} is not a modification instruction")
    out["ancestorActivityInstanceId"] = ins.ancestor
    out["variables"] = encode_variables(dict(ins.variables or {}), "variables")
    out["localVariables"] = encode_variables(dict(ins.local_variables or {}), "local variables")
    return out


def instruction_of(data: Mapping[str, Any]) -> Instruction:
    """Back from :func:`instruction_json`."""
    kind = data.get("type")
    if kind == "cancel":
        return Cancel(
            activity_id=data.get("activityId"),
            activity_instance_id=data.get("activityInstanceId"),
            transition_instance_id=data.get("transitionInstanceId"),
            current_only=bool(data.get("cancelCurrentActiveActivityInstances")),
        )
    shared = decode_variables(data.get("variables")) or None
    local = decode_variables(data.get("localVariables")) or None
    ancestor = data.get("ancestorActivityInstanceId")
    if kind == "startTransition":
        return StartTransition(str(data["transitionId"]), shared, local, ancestor)
    if kind == "startAfterActivity":
        return StartAfter(str(data["activityId"]), shared, local, ancestor)
    if kind == "startBeforeActivity":
        return StartBefore(str(data["activityId"]), shared, local, ancestor)
    raise InvalidOperation(f"unknown instruction type {kind!r}")


def _check_modification(params: Mapping[str, Any]) -> Mapping[str, Any]:
    given = params.get("instructions")
    if not isinstance(given, list) or not given:
        raise InvalidOperation("give at least one instruction")
    if len(given) > MAX_INSTRUCTIONS:
        raise InvalidOperation(f"give at most {MAX_INSTRUCTIONS} instructions")
    for index, data in enumerate(given):
        if not isinstance(data, Mapping):
            raise InvalidOperation(f"instruction {index} is not an object")
        try:
            instruction_of(data)
        except KeyError as exc:
            raise InvalidOperation(f"instruction {index}: {exc.args[0]} is required") from None
    return {"instructions": given, "skipIoMappings": bool(params.get("skipIoMappings"))}


def _modify(item: BatchItem) -> None:
    item.engine.modify(
        item.item,
        [instruction_of(d) for d in item.params["instructions"]],
        skip_io_mappings=bool(item.params.get("skipIoMappings")),
        annotation=item.annotation,
        by=item.created_by,
        now=item.now,
    )


# -- deletion, suspension, variables -------------------------------------------------------
def _check_deletion(params: Mapping[str, Any]) -> Mapping[str, Any]:
    reason = params.get("deleteReason")
    if reason is not None and (not isinstance(reason, str) or len(reason) > 4000):
        raise InvalidOperation("deleteReason must be a text of at most 4000 characters")
    return {"deleteReason": reason}


def _delete(item: BatchItem) -> None:
    item.engine.terminate(
        item.item,
        reason=item.params.get("deleteReason") or "deleted by batch",
        by=item.created_by,
        annotation=item.annotation,
        now=item.now,
    )


def _check_suspension(params: Mapping[str, Any]) -> Mapping[str, Any]:
    suspended = params.get("suspended")
    if not isinstance(suspended, bool):
        raise InvalidOperation("suspended must be true or false")
    return {"suspended": suspended}


def _suspend(item: BatchItem) -> None:
    engine = item.engine
    if item.params["suspended"]:
        engine.suspend(item.item, by=item.created_by, annotation=item.annotation, now=item.now)
    else:
        engine.resume(item.item, by=item.created_by, annotation=item.annotation, now=item.now)


def _check_variables(params: Mapping[str, Any]) -> Mapping[str, Any]:
    variables = params.get("variables")
    if not isinstance(variables, Mapping) or not variables:
        raise InvalidOperation("give at least one variable to set, as a JSON object")
    return {"variables": encode_variables(variables, "variables")}


def _set_variables(item: BatchItem) -> None:
    item.engine.set_variables(
        item.item, decode_variables(item.params["variables"]), by=item.created_by, now=item.now
    )


# -- retries -------------------------------------------------------------------------------
def _check_retries(params: Mapping[str, Any]) -> Mapping[str, Any]:
    retries = params.get("retries")
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise InvalidOperation("retries must be an integer >= 0")
    return {"retries": retries}


def _check_job_retries(params: Mapping[str, Any]) -> Mapping[str, Any]:
    checked = _check_retries(params)
    if checked["retries"] < 1:
        raise InvalidOperation(
            "retries must be at least 1: a failed step is retried with a fresh set of attempts"
        )
    return checked


def _retry_job(item: BatchItem) -> None:
    item.engine.retry_incident(item.item, by=item.created_by, now=item.now)


def _set_external_retries(item: BatchItem) -> None:
    item.engine.set_external_task_retries(
        item.item, int(item.params["retries"]), by=item.created_by, now=item.now
    )


register(BatchType(MODIFICATION, _modify, "ModifyProcessInstance", check=_check_modification))
register(BatchType(DELETION, _delete, "Delete", check=_check_deletion))
register(BatchType(SUSPENSION, _suspend, "Suspend", check=_check_suspension))
register(BatchType(SET_VARIABLES, _set_variables, "SetVariables", check=_check_variables))
register(BatchType(JOB_RETRIES, _retry_job, "SetJobRetries", "Job", check=_check_job_retries))
register(
    BatchType(
        EXTERNAL_TASK_RETRIES,
        _set_external_retries,
        "SetExternalTaskRetries",
        "ExternalTask",
        check=_check_retries,
    )
)


class OperationBatches(Batches):
    """``engine.batches``: :class:`~bpm.engine.batches.Batches` with a method per batch
    operation. Each returns the created batch; nothing is applied before a worker (or the
    embedded loop) runs its chunks."""

    def modify(
        self,
        instance_ids: Sequence[str],
        instructions: Sequence[Instruction],
        *,
        skip_io_mappings: bool = False,
        annotation: str | None = None,
        by: str | None = None,
        chunk_size: int | None = None,
        now: datetime | None = None,
    ) -> Batch:
        """The same modification of every instance (``engine.modify`` on each)."""
        params = {
            "instructions": [instruction_json(i) for i in instructions],
            "skipIoMappings": skip_io_mappings,
        }
        return self.create(
            MODIFICATION,
            instance_ids,
            params,
            chunk_size=chunk_size,
            by=by,
            annotation=annotation,
            now=now,
        )

    def modify_now(
        self,
        instance_ids: Sequence[str],
        instructions: Sequence[Instruction],
        *,
        skip_io_mappings: bool = False,
        annotation: str | None = None,
        by: str | None = None,
        now: datetime | None = None,
    ) -> int:
        """The same modification of every instance in ONE transaction, no batch: the
        first instance it cannot be applied to raises (naming it) and nothing changes."""
        params = {
            "instructions": [instruction_json(i) for i in instructions],
            "skipIoMappings": skip_io_mappings,
        }
        return self.apply_now(
            MODIFICATION, instance_ids, params, by=by, annotation=annotation, now=now
        )

    def delete_instances(
        self,
        instance_ids: Sequence[str],
        *,
        reason: str | None = None,
        annotation: str | None = None,
        by: str | None = None,
        chunk_size: int | None = None,
        now: datetime | None = None,
    ) -> Batch:
        """Terminate every instance (Camunda's ``/process-instance/delete``)."""
        return self.create(
            DELETION,
            instance_ids,
            {"deleteReason": reason},
            chunk_size=chunk_size,
            by=by,
            annotation=annotation,
            now=now,
        )

    def suspend_instances(
        self,
        instance_ids: Sequence[str],
        *,
        suspended: bool = True,
        annotation: str | None = None,
        by: str | None = None,
        chunk_size: int | None = None,
        now: datetime | None = None,
    ) -> Batch:
        """Suspend (or with ``suspended=False`` activate) every instance."""
        return self.create(
            SUSPENSION,
            instance_ids,
            {"suspended": suspended},
            chunk_size=chunk_size,
            by=by,
            annotation=annotation,
            now=now,
        )

    def set_variables(
        self,
        instance_ids: Sequence[str],
        variables: Mapping[str, Any],
        *,
        annotation: str | None = None,
        by: str | None = None,
        chunk_size: int | None = None,
        now: datetime | None = None,
    ) -> Batch:
        """Merge ``variables`` into every instance."""
        return self.create(
            SET_VARIABLES,
            instance_ids,
            {"variables": dict(variables)},
            chunk_size=chunk_size,
            by=by,
            annotation=annotation,
            now=now,
        )

    def retry_jobs(
        self,
        incident_ids: Sequence[str],
        *,
        retries: int = 1,
        annotation: str | None = None,
        by: str | None = None,
        chunk_size: int | None = None,
        now: datetime | None = None,
    ) -> Batch:
        """Retry the failed step of every incident (Camunda's ``/job/retries``)."""
        return self.create(
            JOB_RETRIES,
            incident_ids,
            {"retries": retries},
            chunk_size=chunk_size,
            by=by,
            annotation=annotation,
            now=now,
        )

    def set_external_task_retries(
        self,
        task_ids: Sequence[str],
        retries: int,
        *,
        annotation: str | None = None,
        by: str | None = None,
        chunk_size: int | None = None,
        now: datetime | None = None,
    ) -> Batch:
        """Set the retries of every external task (``/external-task/retries-async``)."""
        return self.create(
            EXTERNAL_TASK_RETRIES,
            task_ids,
            {"retries": retries},
            chunk_size=chunk_size,
            by=by,
            annotation=annotation,
            now=now,
        )
