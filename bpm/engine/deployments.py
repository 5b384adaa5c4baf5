"""Creating deployments: every file is kept as a resource, every executable process of the
BPMN files becomes a definition, all or nothing, in one transaction.

A resource is a BPMN file when its name ends in ``.bpmn`` or ``.bpmn20.xml`` (Camunda's
rule), or when it has no suffix or ``.xml`` and is a BPMN 2.0 document; every other file
(``.form``, ``.dmn``, scripts, images) is kept as it was given, for the components that
read it (forms, decisions).

**What counts as unchanged.** A process keeps its version when its model is unchanged
*and* the other resources deployed with it (its forms, its decisions) are too: the
definition's checksum covers both, so a form edited in Camunda Modeler and redeployed with
its diagram makes a new version that sees the new form (``binding="deployment"``). A
request where every process is unchanged stores nothing and answers the deployment that
holds them; a request with no process is unchanged when the newest deployment of the same
name, source and tenant holds exactly the same files.

Camunda's flags: ``duplicate_filtering`` also treats the request as unchanged when each
file equals the newest file of that name among deployments of the same name, source and
tenant; ``changed_only`` leaves out those equal files and deploys the rest.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError

from bpm.bpmn import parse_bpmn_file
from bpm.bpmn.namespaces import BPMN_NS
from bpm.bpmn.xmlread import decode_xml
from bpm.engine.core import EngineCore
from bpm.engine.decisions import DmnFile, read_dmn_files, store_decisions
from bpm.engine.schedules import schedule_rows
from bpm.errors import BpmError, DeploymentError
from bpm.model.process import ProcessModel
from bpm.model.timer_floor import too_frequent
from bpm.model.validate import validate
from bpm.runtime.records import (
    DecisionDefinition,
    DecisionRequirementsDefinition,
    DeploymentRecord,
    DeploymentResource,
    ProcessDefinition,
)
from bpm.runtime.usertasks import expand_text
from bpm.store import decisions as decision_store
from bpm.store import definitions as store
from bpm.store import deployments as deployment_store
from bpm.store import messages as message_store
from bpm.store import schedules as schedule_store
from bpm.store.decisions import DefinitionQuery

__all__ = ["BPMN_SUFFIXES", "Deployment", "create_deployment", "is_bpmn_resource"]

BPMN_SUFFIXES = (".bpmn", ".bpmn20.xml")
MAX_NAME = 255
MAX_TENANT = 64


@dataclass(frozen=True)
class Deployment:
    """What a deployment holds: one definition per executable process (an unchanged
    process keeps its existing version), its resources, and every warning (settings
    understood but not honoured). ``new`` is False when nothing was stored (the request
    was unchanged: ``id`` is then the deployment that holds it)."""

    id: str | None
    name: str | None
    definitions: tuple[ProcessDefinition, ...]
    warnings: tuple[str, ...] = ()
    created_at: datetime | None = None
    source: str | None = None
    tenant_id: str | None = None
    resources: tuple[DeploymentResource, ...] = field(default=(), repr=False)
    new: bool = True
    decisions: tuple[DecisionDefinition, ...] = ()
    """The decision definitions of its ``.dmn`` files (unchanged files: their versions)."""
    requirements: tuple[DecisionRequirementsDefinition, ...] = ()
    """The decision requirements definitions (one per ``.dmn`` file) they belong to."""


@dataclass(frozen=True)
class _Process:
    model: ProcessModel
    text: str
    resource: str | None


@dataclass
class _File:
    """One resource of the request; ``processes`` are its models when it is BPMN."""

    name: str
    data: bytes
    processes: list[_Process]

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def is_bpmn_resource(name: str | None, data: bytes) -> bool:
    """Whether a deployment resource is read as BPMN (see the module docstring)."""
    if name is None:
        return True
    low = name.lower().rsplit("/", 1)[-1]
    if low.endswith(BPMN_SUFFIXES):
        return True
    if "." in low and not low.endswith(".xml"):
        return False
    return BPMN_NS in decode_xml(data)


def _looks_like_path(source: object) -> bool:
    return isinstance(source, Path) or (
        isinstance(source, str)
        and not source.lstrip().startswith("<")
        and len(source) < 4096
        and "\n" not in source
    )


def _bpmn(data: str | bytes, resource: str | None) -> tuple[list[_Process], list[str]]:
    parsed = parse_bpmn_file(data, resource)
    text = data if isinstance(data, str) else decode_xml(data)
    return [_Process(m, text, resource) for m in parsed.models], list(parsed.warnings)


def _read(resource: str | None, source: object) -> tuple[_File | None, list[_Process], list[str]]:
    """One source: a file to keep (None for builders and models) with its processes."""
    if isinstance(source, ProcessModel):
        return None, [_Process(validate(source), "", resource)], []
    to_model = getattr(source, "build", None)
    if callable(to_model):
        model = to_model()
        if not isinstance(model, ProcessModel):
            raise DeploymentError("the builder did not produce a process model")
        return None, [_Process(model, "", resource)], []
    data: bytes
    if _looks_like_path(source):
        path = Path(str(source))
        if not path.is_file():
            raise DeploymentError(
                f"{path} is not a file; pass a path to a .bpmn file, BPMN XML text, or a "
                "builder Process"
            )
        resource = resource or path.name
        data = path.read_bytes()  # decoded as its XML declaration says, like an upload
    elif isinstance(source, bytes):
        data = source
    elif isinstance(source, str):
        data = source.encode()
    else:
        raise DeploymentError(
            f"cannot deploy a {type(source).__name__}; pass a path, XML text or a builder Process"
        )
    if not is_bpmn_resource(resource, data):
        assert resource is not None
        return _File(resource, data, []), [], []
    processes, warnings = _bpmn(source if isinstance(source, str) else data, resource)
    if resource is None:
        resource = f"{processes[0].model.key}.bpmn" if processes else "process.bpmn"
        processes = [replace(p, resource=resource) for p in processes]
    return _File(resource, data, processes), processes, warnings


def _sources(sources: Iterable[Any]) -> list[tuple[str | None, object]]:
    out: list[tuple[str | None, object]] = []
    for item in sources:
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str | None):
            out.append((item[0], item[1]))
        else:
            out.append((None, item))
    return out


def _check_texts(name: str | None, source: str | None, tenant_id: str | None) -> None:
    for what, value, limit in (
        ("the deployment name", name, MAX_NAME),
        ("the deployment source", source, MAX_NAME),
        ("the tenant id", tenant_id, MAX_TENANT),
    ):
        if value is not None and len(value) > limit:
            raise DeploymentError(f"{what} is longer than {limit} characters")


@dataclass(frozen=True)
class _Request:
    files: list[_File]
    loose: list[_Process]  # builders and models: no file
    name: str | None
    source: str | None
    tenant_id: str | None
    duplicate_filtering: bool
    changed_only: bool
    decisions: tuple[DmnFile, ...] = ()

    @property
    def processes(self) -> list[_Process]:
        return [p for f in self.files for p in f.processes] + self.loose


def create_deployment(
    core: EngineCore,
    sources: Iterable[Any],
    *,
    name: str | None = None,
    source: str | None = None,
    tenant_id: str | None = None,
    duplicate_filtering: bool = False,
    changed_only: bool = False,
) -> Deployment:
    """Deploy every resource of ``sources`` in one transaction (nothing is stored when any
    is refused). A source is a path, BPMN XML (str or bytes), a builder ``Process``, a
    ``ProcessModel``, or a ``(resource name, source)`` pair (the name decides how a file
    is read: ``x.form`` is kept as a form)."""
    _check_texts(name, source, tenant_id)
    files: list[_File] = []
    loose: list[_Process] = []
    warnings: list[str] = []
    for resource, item in _sources(sources):
        file, processes, file_warnings = _read(resource, item)
        warnings += file_warnings
        for p in processes:
            warnings += p.model.warnings
        if file is None:
            loose += processes
        else:
            files.append(file)
    if not files and not loose:
        raise DeploymentError("nothing to deploy: pass at least one resource")
    names: set[str] = set()
    for file in files:
        if not file.name.strip() or len(file.name) > MAX_NAME:
            raise DeploymentError(f"a resource name must be 1 to {MAX_NAME} characters")
        if file.name in names:
            raise DeploymentError(
                f"resource '{file.name}' is in the deployment twice: give each file its own name"
            )
        names.add(file.name)
    dmn_files = tuple(read_dmn_files([(f.name, f.data) for f in files]))
    request = _Request(
        files, loose, name, source, tenant_id, duplicate_filtering, changed_only, dmn_files
    )
    _check_processes(core, request.processes)
    for _ in range(5):  # concurrent deploys of one key race on (key, version)
        try:
            with core.tx() as conn:
                deployment = _store(core, conn, request)
            break
        except IntegrityError:
            continue
    else:
        keys = ", ".join(p.model.key for p in request.processes)
        raise DeploymentError(
            f"could not assign a version to {keys}: too many concurrent deploys; try again"
        )
    return replace(deployment, warnings=tuple(dict.fromkeys(warnings)))


def _check_processes(core: EngineCore, processes: Sequence[_Process]) -> None:
    seen: dict[str, str | None] = {}
    for item in processes:
        problems = list(too_frequent(item.model, core.config.min_timer_cycle))
        if problems:
            raise DeploymentError(problems, item.resource)
        if item.model.key in seen:
            raise DeploymentError(
                f"process '{item.model.key}' is in the deployment twice ({seen[item.model.key]} "
                f"and {item.resource}): deploy one of them",
                item.resource,
            )
        seen[item.model.key] = item.resource


def _short(text: str | None, limit: int = 255) -> str | None:
    """Names and labels are kept to the column's length (ids are checked at validation)."""
    return text if text is None or len(text) <= limit else text[: limit - 1] + "…"


def content_checksum(model: ProcessModel, companions: Sequence[tuple[str, str]]) -> str:
    """A definition's checksum: its model's, and the (name, checksum) of the other
    resources deployed with it (none: the model's alone, as before resources were kept)."""
    base = model.checksum()
    if not companions:
        return base
    lines = [base, *(f"{n}\0{c}" for n, c in sorted(companions))]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def _unchanged_existing(conn: Connection, req: _Request) -> Deployment | None:
    """The deployment to answer when Camunda's duplicate filter finds nothing new."""
    previous = deployment_store.latest_deployment(
        conn, name=req.name, source=req.source, tenant_id=req.tenant_id
    )
    if previous is None:
        return None
    return _answer(conn, previous, req, new=False)


def _answer(conn: Connection, record: DeploymentRecord, req: _Request, *, new: bool) -> Deployment:
    """A deployment and the current definition of every process of the request."""
    defs: list[ProcessDefinition] = []
    for p in req.processes:
        found = store.in_deployment(conn, p.model.key, record.id) or store.latest(conn, p.model.key)
        if found is not None:
            defs.append(found)
    return Deployment(
        record.id,
        record.name,
        tuple(defs),
        (),
        record.created_at,
        record.source,
        record.tenant_id,
        tuple(deployment_store.resources_of(conn, record.id)),
        new,
        *_decisions_of(conn, record.id),
    )


def _decisions_of(
    conn: Connection, deployment_id: str
) -> tuple[tuple[DecisionDefinition, ...], tuple[DecisionRequirementsDefinition, ...]]:
    found = decision_store.definitions(conn, DefinitionQuery(deployment_id=deployment_id))
    return tuple(found), _requirements_of(conn, found)


def _requirements_of(
    conn: Connection, decisions: Sequence[DecisionDefinition]
) -> tuple[DecisionRequirementsDefinition, ...]:
    ids = tuple(dict.fromkeys(d.drd_id for d in decisions if d.drd_id))
    return tuple(decision_store.requirements(conn, DefinitionQuery(ids=ids))) if ids else ()


def _store(core: EngineCore, conn: Connection, req: _Request) -> Deployment:
    now = core.now()
    files = req.files
    if req.duplicate_filtering or req.changed_only:
        latest = deployment_store.latest_checksums(
            conn,
            [f.name for f in files],
            deployment_name=req.name,
            source=req.source,
            tenant_id=req.tenant_id,
        )
        changed = [f for f in files if latest.get(f.name) != f.checksum]
        if not changed and not req.loose and files:
            existing = _unchanged_existing(conn, req)
            if existing is not None:
                return existing
        if req.changed_only:
            files = changed
    companions = [(f.name, f.checksum) for f in files if not f.processes]
    processes = [p for f in files for p in f.processes] + req.loose
    plans: list[tuple[_Process, str, ProcessDefinition | None]] = []
    for p in processes:
        checksum = content_checksum(p.model, companions)
        current = store.latest(conn, p.model.key)
        plans.append((p, checksum, current))
    if not processes:
        # only forms, decisions and other files: unchanged when the newest deployment of
        # this name holds exactly these
        previous = deployment_store.latest_deployment(
            conn, name=req.name, source=req.source, tenant_id=req.tenant_id
        )
        if previous is not None:
            held = {(x.name, x.checksum) for x in deployment_store.resources_of(conn, previous.id)}
            if held == set(companions):
                return _answer(conn, previous, req, new=False)
    elif all(current is not None and current.checksum == c for _, c, current in plans):
        first = plans[0][2]
        assert first is not None and first.deployment_id is not None
        record = deployment_store.get(conn, first.deployment_id)
        assert record is not None
        return _answer(conn, record, req, new=False)
    record = DeploymentRecord(
        id=str(uuid.uuid4()),
        created_at=now,
        name=_short(req.name),
        source=req.source,
        tenant_id=req.tenant_id,
    )
    deployment_store.insert_deployment(conn, record)
    deployment_store.insert_resources(
        conn,
        [
            DeploymentResource(str(uuid.uuid4()), record.id, f.name, f.checksum, f.data)
            for f in files
        ],
    )
    stored_names = {f.name for f in files}
    decisions = store_decisions(
        conn, record, [d for d in req.decisions if d.name in stored_names], now
    )
    defs: list[ProcessDefinition] = []
    for p, checksum, current in plans:
        if current is not None and current.checksum == checksum:
            defs.append(current)
            continue
        defs.append(_new_version(core, conn, p, checksum, current, record, now))
    kept = {id(p) for p in processes}
    for p in req.processes:  # left out as unchanged (changed_only): their current version
        if id(p) not in kept:
            found = store.latest(conn, p.model.key)
            if found is not None:
                defs.append(found)
    return Deployment(
        record.id,
        record.name,
        tuple(defs),
        (),
        now,
        record.source,
        record.tenant_id,
        tuple(deployment_store.resources_of(conn, record.id)),
        True,
        tuple(decisions),
        _requirements_of(conn, decisions),
    )


def _new_version(
    core: EngineCore,
    conn: Connection,
    p: _Process,
    checksum: str,
    current: ProcessDefinition | None,
    record: DeploymentRecord,
    now: datetime,
) -> ProcessDefinition:
    model = p.model
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
        resource=_short(p.resource),
        deployment_id=record.id,
        source=p.text,
        model=model.to_dict(),
        created_at=now,
        suspended=current.suspended if current is not None else False,
        tenant_id=record.tenant_id,
    )
    take_over_starts(conn, model, def_id, now, paused=current is not None and current.suspended)
    core._models[def_id] = model
    found = store.by_id(conn, def_id)
    assert found is not None
    return found


def take_over_starts(
    conn: Connection, model: ProcessModel, definition_id: str, now: datetime, *, paused: bool
) -> None:
    """``definition_id`` becomes the version of its key whose timer, message and signal
    start events are armed (Camunda does the same when a new version is deployed, and
    when the newest version is deleted)."""
    schedule_store.replace_for_key(conn, model.key, now)
    schedule_store.insert_schedules(conn, schedule_rows(model, definition_id, now, paused=paused))
    message_store.replace_starts(
        conn,
        model.key,
        definition_id,
        [
            (x.id, x.event.kind.value, _start_name(x.event.name))
            for x in model.event_starts
            if x.event
        ],
        now,
    )


def _start_name(name: str) -> str:
    """A start event's message or signal name; one with an expression that reads no
    variable (``alert-${'foo'}``) is evaluated now, as Camunda does at deploy (there is no
    instance to read one from)."""
    try:
        return expand_text(name, {})
    except BpmError:
        return name
