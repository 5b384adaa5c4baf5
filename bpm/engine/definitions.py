"""Deploying process definitions: parse, validate, version by key, schedule timer starts.

A deployment holds every executable process of every source it is given, all or nothing,
in one transaction. ``Engine.deploy`` keeps returning one definition (the first executable
process of the file, in document order) so existing callers are unchanged;
``Engine.create_deployment`` returns them all, with the warnings.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError

from bpm.engine.core import EngineCore
from bpm.engine.schedules import schedule_rows
from bpm.errors import DeploymentError, NotFound
from bpm.model.process import ProcessModel
from bpm.model.timer_floor import too_frequent

# The node kinds of models from other modelers register their behaviours on import.
from bpm.runtime.records import ProcessDefinition
from bpm.store import definitions as store
from bpm.store import messages as message_store
from bpm.store import schedules as schedule_store

__all__ = ["Deployment", "create_deployment", "deploy"]


@dataclass(frozen=True)
class Deployment:
    """What a deployment stored: one definition per executable process (an unchanged
    process keeps its existing version), and every warning (settings understood but not
    honoured)."""

    id: str | None
    name: str | None
    definitions: tuple[ProcessDefinition, ...]
    warnings: tuple[str, ...] = ()
    created_at: datetime | None = None


@dataclass(frozen=True)
class _Parsed:
    model: ProcessModel
    text: str
    resource: str | None


def _looks_like_path(source: object) -> bool:
    return isinstance(source, Path) or (
        isinstance(source, str)
        and not source.lstrip().startswith("<")
        and len(source) < 4096
        and "\n" not in source
    )


def _parse(source: object, resource: str | None) -> tuple[list[_Parsed], list[str]]:
    """The models of one source (a path, XML, builder or model) and its file warnings."""
    if isinstance(source, ProcessModel):
        from bpm.model.validate import validate

        return [_Parsed(validate(source), "", resource)], []
    to_model = getattr(source, "build", None)
    if callable(to_model):
        model = to_model()
        if not isinstance(model, ProcessModel):
            raise DeploymentError("the builder did not produce a process model")
        return [_Parsed(model, "", resource)], []
    from bpm.bpmn import parse_bpmn_file  # the XML stack is needed only for BPMN sources
    from bpm.bpmn.xmlread import decode_xml

    data: str | bytes
    if _looks_like_path(source):
        path = Path(str(source))
        if not path.is_file():
            raise DeploymentError(
                f"{path} is not a file; pass a path to a .bpmn file, BPMN XML text, or a "
                "builder Process"
            )
        resource = resource or path.name
        data = path.read_bytes()  # decoded as its XML declaration says, like an upload
    elif isinstance(source, bytes | str):
        data = source
    else:
        raise DeploymentError(
            f"cannot deploy a {type(source).__name__}; pass a path, XML text or a builder Process"
        )
    parsed = parse_bpmn_file(data, resource)
    text = data if isinstance(data, str) else decode_xml(data)
    return [_Parsed(m, text, resource) for m in parsed.models], list(parsed.warnings)


def _sources(sources: Iterable[Any]) -> list[tuple[str | None, object]]:
    out: list[tuple[str | None, object]] = []
    for item in sources:
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str | None):
            out.append((item[0], item[1]))
        else:
            out.append((None, item))
    return out


def create_deployment(
    core: EngineCore, sources: Iterable[Any], *, name: str | None = None
) -> Deployment:
    """Deploy every executable process of every source, in one transaction.

    A source is a path, BPMN XML (str or bytes), a builder ``Process``, a ``ProcessModel``,
    or a ``(resource name, source)`` pair. Nothing is stored when any source is refused.
    """
    parsed: list[_Parsed] = []
    warnings: list[str] = []
    for resource, source in _sources(sources):
        models, file_warnings = _parse(source, resource)
        parsed += models
        warnings += file_warnings
        for item in models:
            warnings += item.model.warnings
    if not parsed:
        raise DeploymentError("nothing to deploy: pass at least one source")
    for item in parsed:
        problems = list(too_frequent(item.model, core.config.min_timer_cycle))
        if problems:
            raise DeploymentError(problems, item.resource)
    seen: dict[str, str | None] = {}
    for item in parsed:
        if item.model.key in seen:
            raise DeploymentError(
                f"process '{item.model.key}' is in the deployment twice ({seen[item.model.key]} "
                f"and {item.resource}): deploy one of them",
                item.resource,
            )
        seen[item.model.key] = item.resource
    for _ in range(5):  # concurrent deploys of one key race on (key, version)
        try:
            with core.tx() as conn:
                deployment = _store(core, conn, parsed, name)
            break
        except IntegrityError:
            continue
    else:
        keys = ", ".join(seen)
        raise DeploymentError(
            f"could not assign a version to {keys}: too many concurrent deploys; try again"
        )
    for item, definition in zip(parsed, deployment.definitions, strict=True):
        core._models[definition.id] = item.model
    return Deployment(
        deployment.id,
        name,
        deployment.definitions,
        tuple(dict.fromkeys(warnings)),
        deployment.created_at,
    )


def _short(text: str | None, limit: int = 255) -> str | None:
    """Names and labels are kept to the column's length (ids are checked at validation)."""
    return text if text is None or len(text) <= limit else text[: limit - 1] + "…"


def _store(
    core: EngineCore, conn: Connection, parsed: list[_Parsed], name: str | None
) -> Deployment:
    now = core.now()
    dep_id: str | None = None
    out: list[ProcessDefinition] = []
    for item in parsed:
        model = item.model
        checksum = model.checksum()
        current = store.latest(conn, model.key)
        if current is not None and current.checksum == checksum:
            out.append(current)
            continue
        if dep_id is None:
            dep_id = str(uuid.uuid4())
            store.insert_deployment(conn, dep_id, _short(name), _short(item.resource), now)
        version = store.next_version(conn, model.key)
        def_id = f"{model.key}:{version}:{uuid.uuid4()}"
        store.insert_definition(
            conn,
            id=def_id,
            key=model.key,
            version=version,
            name=_short(model.name),
            version_tag=_short(model.version_tag),
            checksum=checksum,
            resource=_short(item.resource),
            deployment_id=dep_id,
            source=item.text,
            model=model.to_dict(),
            created_at=now,
            suspended=current.suspended if current is not None else False,
        )
        # A new version replaces the key's timer start schedules (Camunda does the same).
        schedule_store.replace_for_key(conn, model.key, now)
        schedule_store.insert_schedules(
            conn,
            schedule_rows(model, def_id, now, paused=current is not None and current.suspended),
        )
        # ...and its message and signal start events.
        message_store.replace_starts(
            conn,
            model.key,
            def_id,
            [(x.id, x.event.kind.value, x.event.name) for x in model.event_starts if x.event],
            now,
        )
        found = store.by_id(conn, def_id)
        assert found is not None
        out.append(found)
    first_id = dep_id or (out[0].deployment_id if out else None)
    return Deployment(first_id, name, tuple(out), (), now)


def deploy(
    core: EngineCore,
    source: object,
    *,
    name: str | None = None,
    resource: str | None = None,
) -> ProcessDefinition:
    """Deploy one file (or builder, or model); returns the definition of its first
    executable process. Same key and same content returns the existing version."""
    return create_deployment(core, [(resource, source)], name=name).definitions[0]


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
