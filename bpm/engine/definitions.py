"""Reading and suspending process definitions; deploying one file (``deploy``).

Deployments themselves (every resource of every file, all or nothing) are
:mod:`bpm.engine.deployments`.
"""

from __future__ import annotations

from bpm.engine.core import EngineCore
from bpm.engine.deployments import Deployment, create_deployment
from bpm.errors import DeploymentError, NotFound
from bpm.model.process import ProcessModel
from bpm.runtime.records import ProcessDefinition
from bpm.store import definitions as store
from bpm.store import schedules as schedule_store

__all__ = ["Deployment", "create_deployment", "deploy"]


def deploy(
    core: EngineCore,
    source: object,
    *,
    name: str | None = None,
    resource: str | None = None,
) -> ProcessDefinition:
    """Deploy one file (or builder, or model); returns the definition of its first
    executable process. Same key and same content returns the existing version."""
    found = create_deployment(core, [(resource, source)], name=name).definitions
    if not found:
        raise DeploymentError(
            f"{resource or 'the source'} holds no executable process: deploy a .bpmn file, "
            "or use create_deployment for forms and other files"
        )
    return found[0]


def latest(core: EngineCore, key: str) -> ProcessDefinition:
    with core.db.connect() as conn:
        found = store.latest(conn, key)
    if found is None:
        raise NotFound(f"no process definition with key '{key}' is deployed")
    return found


def by_id(core: EngineCore, definition_id: str) -> ProcessDefinition | None:
    with core.db.connect() as conn:
        return store.by_id(conn, definition_id)


def source_of(core: EngineCore, definition_id: str) -> str | None:
    """The BPMN XML a definition was deployed from ('' for builder models)."""
    with core.db.connect() as conn:
        return store.source(conn, definition_id)


def definitions(core: EngineCore, key: str | None = None) -> list[ProcessDefinition]:
    with core.db.connect() as conn:
        return store.list_all(conn, key)


def model_of(core: EngineCore, definition_id: str) -> ProcessModel:
    with core.db.connect() as conn:
        return core.model(conn, definition_id)


def set_suspended(core: EngineCore, key: str, suspended: bool) -> list[ProcessDefinition]:
    """Suspend (no new instances, timer starts paused) or activate every version of
    ``key``; returns its definitions."""
    now = core.now()
    with core.tx() as conn:
        if store.set_suspended(conn, key, suspended) == 0:
            raise NotFound(f"no process definition with key '{key}' is deployed")
        if suspended:
            schedule_store.set_state_for_key(
                conn, key, schedule_store.ACTIVE, schedule_store.PAUSED, now
            )
        else:
            schedule_store.set_state_for_key(
                conn, key, schedule_store.PAUSED, schedule_store.ACTIVE, now
            )
        return store.list_all(conn, key)
