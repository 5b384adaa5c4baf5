"""Reading and deleting deployments (Camunda's ``/deployment`` and its resources).

Deleting a deployment removes its resources and its definitions. A deployment whose
definitions have instances is refused unless ``cascade``: then its running instances are
terminated first, as an operator's terminate does (what they called ends too; a caller in
another deployment gets an incident at its call activity), and every instance of its
definitions is deleted with its history. When a deleted definition was its key's newest
version, the version before it takes its timer, message and signal start events back.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection

from bpm.engine.core import EngineCore
from bpm.engine.deployments import take_over_starts
from bpm.engine.instances import terminate
from bpm.errors import InvalidOperation, NotFound
from bpm.runtime.records import DeploymentRecord, DeploymentResource, ProcessDefinition
from bpm.store import definitions as definition_store
from bpm.store import deployments as store
from bpm.store import retention as retention_store
from bpm.store.deployments import DeploymentQuery

__all__ = [
    "DeploymentQuery",
    "count_deployments",
    "delete_deployment",
    "deployment",
    "deployment_definitions",
    "deployments",
    "resource",
    "resource_named",
    "resources",
]

#: Rounds of "terminate what runs, then delete" before giving up on a deployment whose
#: definitions keep being started while it is deleted.
DELETE_ROUNDS = 5


def deployments(
    core: EngineCore, q: DeploymentQuery, *, offset: int = 0, limit: int = 100
) -> list[DeploymentRecord]:
    with core.db.connect() as conn:
        return store.list_deployments(conn, q, offset=offset, limit=limit)


def count_deployments(core: EngineCore, q: DeploymentQuery) -> int:
    with core.db.connect() as conn:
        return store.count_deployments(conn, q)


def deployment(core: EngineCore, deployment_id: str) -> DeploymentRecord:
    with core.db.connect() as conn:
        found = store.get(conn, deployment_id)
    if found is None:
        raise NotFound(f"Deployment with id '{deployment_id}' does not exist")
    return found


def deployment_definitions(core: EngineCore, deployment_id: str) -> list[ProcessDefinition]:
    with core.db.connect() as conn:
        return store.definitions_of(conn, deployment_id)


def resources(core: EngineCore, deployment_id: str) -> list[DeploymentResource]:
    """The resources of a deployment (names and checksums, no bytes)."""
    with core.db.connect() as conn:
        if store.get(conn, deployment_id) is None:
            raise NotFound(f"Deployment with id '{deployment_id}' does not exist")
        return store.resources_of(conn, deployment_id)


def resource(core: EngineCore, deployment_id: str, resource_id: str) -> DeploymentResource:
    """One resource with its bytes."""
    with core.db.connect() as conn:
        found = store.resource(conn, deployment_id, resource_id)
    if found is None:
        raise NotFound(
            f"Deployment resource with resource id '{resource_id}' for deployment id "
            f"'{deployment_id}' does not exist."
        )
    return found


def resource_named(core: EngineCore, deployment_id: str, name: str) -> DeploymentResource | None:
    """The resource called ``name`` in a deployment, with its bytes (None: not there)."""
    with core.db.connect() as conn:
        return store.resource_named(conn, deployment_id, name)


def delete_deployment(core: EngineCore, deployment_id: str, *, cascade: bool = False) -> None:
    """Delete a deployment (see the module docstring). Without ``cascade`` a deployment
    whose definitions have instances is refused, and nothing changes."""
    for _ in range(DELETE_ROUNDS):
        with core.tx() as conn:
            if store.get(conn, deployment_id) is None:
                raise NotFound(f"Deployment with id '{deployment_id}' does not exist")
            defs = store.definitions_of(conn, deployment_id)
            ids = [x.id for x in defs]
            running = store.instances_of(conn, ids, running=True)
            ended = store.instances_of(conn, ids, running=False)
            if not cascade:
                _refuse(running, ended)
            if not running:
                retention_store.delete_instances(conn, ended)
                store.delete_deployment(conn, deployment_id, ids)
                _restore_starts(core, conn, defs)
                for x in ids:
                    core._models.pop(x, None)
                return
        for instance_id in running:  # then delete them all in the next round
            try:
                terminate(core, instance_id, reason=f"deployment {deployment_id} deleted")
            except InvalidOperation:
                continue  # it ended meanwhile
    raise InvalidOperation(
        f"deployment {deployment_id} keeps getting new instances while being deleted: "
        "suspend its process definitions first, then delete it"
    )


def _refuse(running: Sequence[str], ended: Sequence[str]) -> None:
    if running:
        raise InvalidOperation(
            "Deletion of process definition without cascading failed. There are "
            f"{len(running)} dependent process instances: delete with cascade=true to "
            "terminate and delete them"
        )
    if ended:
        raise InvalidOperation(
            f"the deployment's definitions have {len(ended)} ended instances whose history "
            "refers to them: delete with cascade=true to delete that history too"
        )


def _restore_starts(core: EngineCore, conn: Connection, defs: Sequence[ProcessDefinition]) -> None:
    """The newest remaining version of each key whose newest version was deleted takes
    its start events back."""
    now = core.now()
    for key in sorted({x.key for x in defs}):
        latest = definition_store.latest(conn, key)
        if latest is None or not any(x.version > latest.version for x in defs if x.key == key):
            continue
        model = core.model(conn, latest.id)
        take_over_starts(conn, model, latest.id, now, paused=latest.suspended)
