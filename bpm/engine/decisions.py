"""Decisions in the engine: ``.dmn`` files deployed beside the BPMN, versioned like
processes, evaluated inside a transaction with their history.

**Deploy.** Every ``.dmn`` resource of a deployment is loaded before the transaction
(the other ``.dmn`` files of the deployment are its imports); one that does not load
refuses the whole deployment, naming the file and the element. In the transaction, each
file becomes a decision requirements definition (its ``<definitions>``) and each of its
decisions a decision definition, versioned by id: a file whose checksum equals the
newest version's keeps that version (the rule for processes), another makes version n+1.

**Evaluate.** :func:`evaluate_in` runs on the caller's connection (a business rule task's
step, or :func:`evaluate` for the REST call) and appends one decision instance per
evaluated decision: the one asked for and, pointing to it, each required decision, with
the table inputs, the matched rules and their outputs.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import threading
import uuid
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from bpm import dmn
from bpm.bpmn.xmlread import decode_xml
from bpm.dmn.results import map_result
from bpm.engine.core import EngineCore
from bpm.engine.decision_history import Caller, history_rows
from bpm.errors import DeploymentError, NotFound
from bpm.feel.jsonvalues import to_json
from bpm.runtime.records import (
    DecisionDefinition,
    DecisionInstance,
    DecisionRequirementsDefinition,
    DeploymentRecord,
)
from bpm.runtime.variable_types import Typed
from bpm.store import decisions as store
from bpm.store import deployments as deployment_store
from bpm.store import tables as t

DMN_SUFFIX = ".dmn"


@dataclass(frozen=True)
class DmnFile:
    """A ``.dmn`` resource of a deployment, loaded."""

    name: str
    data: bytes
    model: dmn.DecisionModel

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def is_dmn_resource(name: str) -> bool:
    return name.lower().endswith(DMN_SUFFIX)


def read_dmn_files(files: Sequence[tuple[str, bytes]]) -> list[DmnFile]:
    """Load each ``.dmn`` file (the others are its imports); refuse what cannot run."""
    dmn_files = [(name, data) for name, data in files if is_dmn_resource(name)]
    loaded: list[DmnFile] = []
    owner: dict[str, str] = {}
    for name, data in dmn_files:
        others = [d for n, d in dmn_files if n != name]
        try:
            model = dmn.load(data, imports=others)
        except DeploymentError as exc:
            raise DeploymentError(exc.problems, name) from None
        for element in model.decision_elements:
            if element.id in owner:
                raise DeploymentError(
                    f"decision '{element.id}' is in {owner[element.id]} and {name}: a decision "
                    "id names one decision of a deployment",
                    name,
                )
            owner[element.id] = name
        loaded.append(DmnFile(name, data, model))
    return loaded


def store_decisions(
    conn: Connection, record: DeploymentRecord, files: Sequence[DmnFile], now: dt.datetime
) -> list[DecisionDefinition]:
    """Version the decisions of ``files`` in ``record``'s deployment (same transaction)."""
    stored: list[DecisionDefinition] = []
    for f in files:
        key = f.model.id
        current = store.latest_requirements(conn, key)
        if current is not None and current.checksum == f.checksum:
            stored += store.definitions(conn, store.DefinitionQuery(drd_id=current.id))
            continue
        version = store.next_version(conn, t.decision_requirements_definition, key)
        drd = DecisionRequirementsDefinition(
            id=f"{key}:{version}:{uuid.uuid4()}",
            key=key,
            version=version,
            checksum=f.checksum,
            resource=f.name,
            deployment_id=record.id,
            created_at=now,
            name=_short(f.model.name),
            namespace=_short(f.model.namespace),
            tenant_id=record.tenant_id,
        )
        store.insert_requirements(conn, drd)
        for element in f.model.decision_elements:
            number = store.next_version(conn, t.decision_definition, element.id)
            definition = DecisionDefinition(
                id=f"{element.id}:{number}:{uuid.uuid4()}",
                key=element.id,
                version=number,
                checksum=f.checksum,
                resource=f.name,
                deployment_id=record.id,
                created_at=now,
                name=_short(element.name),
                drd_id=drd.id,
                drd_key=key,
                tenant_id=record.tenant_id,
            )
            store.insert_definition(conn, definition)
            stored.append(definition)
    return stored


def _short(text: str | None, limit: int = 255) -> str | None:
    return text if text is None or len(text) <= limit else text[: limit - 1] + "…"


# --- evaluation ------------------------------------------------------------------------


class _Models:
    """Loaded models by decision requirements definition id (a definition never changes)."""

    def __init__(self, size: int = 128) -> None:
        self._size = size
        self._cache: OrderedDict[str, dmn.DecisionModel] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, conn: Connection, definition: DecisionDefinition) -> dmn.DecisionModel:
        key = definition.drd_id or definition.id
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        resources = deployment_store.resources_of(conn, definition.deployment_id)
        dmn_names = [r.name for r in resources if is_dmn_resource(r.name)]
        data = {}
        for name in dmn_names:
            found = deployment_store.resource_named(conn, definition.deployment_id, name)
            if found is not None and found.data is not None:
                data[name] = found.data
        main = data[definition.resource]
        model = dmn.load(main, imports=[d for n, d in data.items() if n != definition.resource])
        with self._lock:
            self._cache[key] = model
            while len(self._cache) > self._size:
                self._cache.popitem(last=False)
        return model


MODELS = _Models()


@dataclass(frozen=True)
class DecisionResult:
    """An evaluated decision: its definition, its rule results (one dict per matched rule,
    FEEL values) and its value; ``instance_id`` is the history's root decision instance."""

    definition: DecisionDefinition
    rules: list[dict[str, Any]]
    value: Any
    instance_id: str


def find_definition(
    conn: Connection,
    *,
    key: str | None = None,
    definition_id: str | None = None,
    version: int | None = None,
    deployment_id: str | None = None,
    version_tag: str | None = None,
) -> DecisionDefinition:
    """The decision definition asked for: by id, or the latest (or a ``version``, or the
    one of a ``deployment_id``, or of a ``version_tag``) of a key."""
    if definition_id is not None:
        found = store.definitions(conn, store.DefinitionQuery(id=definition_id))
        if not found:
            raise NotFound(f"no decision definition with id {definition_id!r}")
        return found[0]
    if key is None:
        raise NotFound("name a decision definition by key or id")
    query = store.DefinitionQuery(key=key, version=version, deployment_id=deployment_id)
    candidates = store.definitions(conn, query)
    if version_tag is not None:
        candidates = [c for c in candidates if c.version_tag == version_tag]
    if not candidates:
        what = f" version {version}" if version is not None else ""
        where = f" in deployment {deployment_id}" if deployment_id else ""
        raise NotFound(f"no decision definition with key {key!r}{what}{where}")
    return max(candidates, key=lambda d: d.version)


def feel_inputs(variables: Mapping[str, Any]) -> dict[str, Any]:
    """Process or REST variables as DMN inputs (a Camunda ``Date`` becomes a date-time)."""
    out: dict[str, Any] = {}
    for name, value in variables.items():
        if isinstance(value, Typed):
            value = _camunda_date(value.value) if value.type == "Date" else value.value
        out[name] = value
    return out


def _camunda_date(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%f%z")
    except ValueError:
        try:
            return dt.datetime.fromisoformat(text)
        except ValueError:
            return text


@dataclass(frozen=True)
class Evaluated:
    """An evaluation whose history is not written yet (``rows``: root first)."""

    definition: DecisionDefinition
    rules: list[dict[str, Any]]
    value: Any
    rows: tuple[DecisionInstance, ...]


def _evaluate(
    conn: Connection,
    definition: DecisionDefinition,
    variables: Mapping[str, Any],
    now: dt.datetime,
    caller: Caller,
) -> Evaluated:
    model = MODELS.get(conn, definition)
    evaluation = model.evaluate_detailed(
        definition.key, feel_inputs(variables), trace=True, now=now, open_scope=True
    )
    rules = model.rules_of(definition.key, evaluation)
    rows = history_rows(model, definition, evaluation, rules, now, caller)
    return Evaluated(definition, rules, evaluation.value, tuple(rows))


def evaluate_in(
    conn: Connection,
    definition: DecisionDefinition,
    variables: Mapping[str, Any],
    now: dt.datetime,
    caller: Caller | None = None,
) -> DecisionResult:
    """Evaluate on ``conn`` and append the history; FEEL errors raise (nothing written)."""
    done = _evaluate(conn, definition, variables, now, caller or Caller())
    store.insert_instances(conn, list(done.rows))
    return DecisionResult(definition, done.rules, done.value, done.rows[0].id)


def evaluate(
    core: EngineCore,
    *,
    key: str | None = None,
    definition_id: str | None = None,
    version: int | None = None,
    variables: Mapping[str, Any] | None = None,
) -> DecisionResult:
    """Evaluate a deployed decision (one transaction: the history is written with it)."""
    with core.tx() as conn:
        definition = find_definition(conn, key=key, definition_id=definition_id, version=version)
        return evaluate_in(conn, definition, variables or {}, core.now())


class Decisions:
    """Deployed decisions behind ``engine.decisions``: reads, evaluation, history."""

    def __init__(self, core: EngineCore) -> None:
        self.core = core

    def definitions(self, query: store.DefinitionQuery | None = None) -> list[DecisionDefinition]:
        with self.core.tx() as conn:
            return store.definitions(conn, query or store.DefinitionQuery())

    def count(self, query: store.DefinitionQuery | None = None) -> int:
        with self.core.tx() as conn:
            return store.count_definitions(conn, query or store.DefinitionQuery())

    def definition(
        self,
        *,
        key: str | None = None,
        definition_id: str | None = None,
        version: int | None = None,
    ) -> DecisionDefinition:
        """One decision definition (the latest of a key unless ``version``); NotFound."""
        with self.core.tx() as conn:
            return find_definition(conn, key=key, definition_id=definition_id, version=version)

    def requirements(
        self, query: store.DefinitionQuery | None = None
    ) -> list[DecisionRequirementsDefinition]:
        with self.core.tx() as conn:
            return store.requirements(conn, query or store.DefinitionQuery())

    def count_requirements(self, query: store.DefinitionQuery | None = None) -> int:
        with self.core.tx() as conn:
            return store.count_requirements(conn, query or store.DefinitionQuery())

    def xml(self, deployment_id: str, resource: str) -> str:
        """The DMN XML of a deployed resource."""
        with self.core.tx() as conn:
            found = deployment_store.resource_named(conn, deployment_id, resource)
        if found is None or found.data is None:
            raise NotFound(f"deployment {deployment_id} has no resource {resource!r}")
        return decode_xml(found.data)

    def evaluate(
        self,
        *,
        key: str | None = None,
        definition_id: str | None = None,
        version: int | None = None,
        variables: Mapping[str, Any] | None = None,
    ) -> DecisionResult:
        """Evaluate a deployed decision; the history is written in the same transaction."""
        return evaluate(
            self.core, key=key, definition_id=definition_id, version=version, variables=variables
        )

    def history(self, query: store.InstanceQuery | None = None) -> list[DecisionInstance]:
        """The decision history (on the read replica when one is configured)."""
        with self.core.read() as conn:
            return store.instances(conn, query or store.InstanceQuery())

    def count_history(self, query: store.InstanceQuery | None = None) -> int:
        with self.core.read() as conn:
            return store.count_instances(conn, query or store.InstanceQuery())


# --- the business rule task's call --------------------------------------------------------

BINDINGS = ("latest", "deployment", "version", "versionTag")


@dataclass(frozen=True)
class DecisionCall:
    """What a business rule task asks: ``camunda:decisionRef`` with its binding and result
    mapping, or Zeebe's ``calledDecision`` (``map_result="value"``: the decision's value)."""

    decision_ref: str
    binding: str = "latest"
    version: int | None = None
    version_tag: str | None = None
    result_variable: str | None = None
    map_result: str = "resultList"


def prepare_call(
    conn: Connection,
    call: DecisionCall,
    variables: Mapping[str, Any],
    now: dt.datetime,
    caller: Caller,
    deployment_id: str | None = None,
) -> tuple[dict[str, Any], Evaluated]:
    """Evaluate ``call`` and map its result: (the variables to write, as JSON; the
    evaluation, whose history the caller writes once the variables are). Raises
    :class:`NotFound`, :class:`~bpm.errors.ExpressionError` (FEEL) or
    :class:`~bpm.dmn.results.DecisionResultError` (a result that does not fit)."""
    if call.binding not in BINDINGS:
        raise NotFound(f"decision binding {call.binding!r} is not one of {', '.join(BINDINGS)}")
    if call.binding == "deployment" and deployment_id is None:
        raise NotFound(
            f"decision '{call.decision_ref}' is bound to the caller's deployment, and the "
            "caller has none: deploy the process and the decision together"
        )
    definition = find_definition(
        conn,
        key=call.decision_ref,
        version=call.version if call.binding == "version" else None,
        deployment_id=deployment_id if call.binding == "deployment" else None,
        version_tag=call.version_tag if call.binding == "versionTag" else None,
    )
    done = _evaluate(conn, definition, variables, now, caller)
    if call.result_variable is None:
        return {}, done
    if call.map_result == "value":
        return {call.result_variable: to_json(done.value)}, done
    return {call.result_variable: to_json(map_result(done.rules, call.map_result))}, done


def record_call(conn: Connection, done: Evaluated) -> None:
    """Write the decision history of a :func:`prepare_call` (same transaction)."""
    store.insert_instances(conn, list(done.rows))


def call_decision(
    conn: Connection,
    call: DecisionCall,
    variables: Mapping[str, Any],
    now: dt.datetime,
    caller: Caller,
    deployment_id: str | None = None,
) -> dict[str, Any]:
    """Evaluate ``call`` inside the caller's transaction and write its history; the
    variables to write (JSON). Nothing is written when it raises."""
    updates, done = prepare_call(conn, call, variables, now, caller, deployment_id)
    record_call(conn, done)
    return updates
