"""Deploying process definitions: parse, validate, version by key."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy.exc import IntegrityError

from bpm.engine.core import EngineCore
from bpm.errors import DeploymentError, NotFound
from bpm.model.process import ProcessModel
from bpm.runtime.records import ProcessDefinition
from bpm.store import definitions as store

if TYPE_CHECKING:
    pass


def _to_model(source: object, resource: str | None) -> tuple[ProcessModel, str, str | None]:
    """(model, stored source text, resource name) for a path, XML, builder or model."""
    if isinstance(source, ProcessModel):
        from bpm.model.validate import validate

        return validate(source), "", resource
    to_model = getattr(source, "build", None)
    if callable(to_model):
        model = to_model()
        if not isinstance(model, ProcessModel):
            raise DeploymentError("the builder did not produce a process model")
        return model, "", resource
    from bpm.bpmn import parse_bpmn  # the XML stack is needed only for BPMN sources

    if isinstance(source, Path) or (
        isinstance(source, str)
        and not source.lstrip().startswith("<")
        and len(source) < 4096
        and "\n" not in source
    ):
        path = Path(source)
        if not path.is_file():
            raise DeploymentError(
                f"{path} is not a file; pass a path to a .bpmn file, BPMN XML text, or a "
                "builder Process"
            )
        text = path.read_text(encoding="utf-8")
        return parse_bpmn(text, resource or path.name), text, resource or path.name
    if isinstance(source, bytes):
        text = source.decode("utf-8", errors="replace")
        return parse_bpmn(source, resource), text, resource
    if isinstance(source, str):
        return parse_bpmn(source, resource), source, resource
    raise DeploymentError(
        f"cannot deploy a {type(source).__name__}; pass a path, XML text or a builder Process"
    )


def deploy(
    core: EngineCore,
    source: object,
    *,
    name: str | None = None,
    resource: str | None = None,
    deployment_id: str | None = None,
) -> ProcessDefinition:
    """Deploy one process. Same key and same content returns the existing version."""
    model, text, resource = _to_model(source, resource)
    checksum = model.checksum()
    for _ in range(5):  # concurrent deploys of one key race on (key, version)
        try:
            with core.tx() as conn:
                current = store.latest(conn, model.key)
                if current is not None and current.checksum == checksum:
                    return current
                version = store.next_version(conn, model.key)
                dep_id = deployment_id or str(uuid.uuid4())
                now = core.now()
                if deployment_id is None:
                    store.insert_deployment(conn, dep_id, name, resource, now)
                def_id = f"{model.key}:{version}:{uuid.uuid4()}"
                store.insert_definition(
                    conn,
                    id=def_id,
                    key=model.key,
                    version=version,
                    name=model.name,
                    version_tag=model.version_tag,
                    checksum=checksum,
                    resource=resource,
                    deployment_id=dep_id,
                    source=text,
                    model=model.to_dict(),
                    created_at=now,
                )
                core._models[def_id] = model
                found = store.by_id(conn, def_id)
                assert found is not None
                return found
        except IntegrityError:
            continue
    raise DeploymentError(
        f"could not assign a version to '{model.key}': too many concurrent deploys; try again"
    )


def latest(core: EngineCore, key: str) -> ProcessDefinition:
    with core.db.connect() as conn:
        found = store.latest(conn, key)
    if found is None:
        raise NotFound(f"no process definition with key '{key}' is deployed")
    return found


def definitions(core: EngineCore, key: str | None = None) -> list[ProcessDefinition]:
    with core.db.connect() as conn:
        return store.list_all(conn, key)


def model_of(core: EngineCore, definition_id: str) -> ProcessModel:
    with core.db.connect() as conn:
        return core.model(conn, definition_id)
