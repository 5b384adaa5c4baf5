"""Who may start a process from the task list: Camunda's candidate starters.

A process names them with ``camunda:candidateStarterUsers`` and
``camunda:candidateStarterGroups`` (comma-separated) and hides itself from the task list
with ``camunda:isStartableInTasklist="false"``. Administrators start anything (also with
``POST /process-definition/{id}/start``); a user who is no admin starts only a process
startable in the task list that names them or one of their groups, and only through its
start form (``submit-form``, checked on the server), or, with ``BPM_TASK_AUTHORIZATION=off``,
any process startable in the task list. The attributes are read from the deployed XML
(builder models have none: administrators only).
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request
from starlette.concurrency import run_in_threadpool

from bpm.api.auth import Principal, forbidden
from bpm.api.errors import ApiError
from bpm.api.task_access import check_task_caller
from bpm.bpmn.namespaces import BPMN_NS, JAVA_ENGINE_NS
from bpm.bpmn.xmlread import read_xml
from bpm.engine import Engine
from bpm.errors import DeploymentError
from bpm.runtime.records import ProcessDefinition


@dataclass(frozen=True)
class Starters:
    """What a process says of who may start it from the task list."""

    users: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()
    startable: bool = True


def _names(value: str | None) -> frozenset[str]:
    return frozenset(x.strip() for x in (value or "").split(",") if x.strip())


def starters_of(xml: str | None, key: str) -> Starters:
    """The candidate starters of process ``key`` in its BPMN XML (none for no XML)."""
    if not xml:
        return Starters()
    try:
        doc = read_xml(xml)
    except DeploymentError:
        return Starters()
    for el in doc.root.iter(f"{{{BPMN_NS}}}process"):
        if el.get("id") != key:
            continue
        users: frozenset[str] = frozenset()
        groups: frozenset[str] = frozenset()
        startable = True
        for ns in JAVA_ENGINE_NS:
            users |= _names(el.get(f"{{{ns}}}candidateStarterUsers"))
            groups |= _names(el.get(f"{{{ns}}}candidateStarterGroups"))
            if (el.get(f"{{{ns}}}isStartableInTasklist") or "").strip().lower() == "false":
                startable = False
        return Starters(users, groups, startable)
    return Starters()


def _enforced(request: Request) -> bool:
    return bool(getattr(request.app.state, "task_authorization", True))


def may_start_sync(engine: Engine, request: Request, who: Principal, d: ProcessDefinition) -> bool:
    """Whether ``who`` may start ``d`` from the task list (reads the XML: off the loop).
    A process not startable in the task list is listed to nobody."""
    check_task_caller(who)
    found = starters_of(engine.definition_source(d.id), d.key)
    if not found.startable:
        return False
    person = who.person
    if person is None or who.admin:
        return True  # keys: as for every process endpoint (the auth gate decides writes)
    if not _enforced(request):
        return True
    return person.id in found.users or bool(person.groups & found.groups)


async def check_start(
    request: Request, who: Principal, definition_id: str, what: str = "start instances"
) -> None:
    """403 unless ``who`` may start the definition from its start form (404 for a user
    asking of one that does not exist). Keys and administrators: as every process
    endpoint (:meth:`Principal.check_unrestricted`)."""
    if who.person is None or who.admin:
        who.check_unrestricted(what)
        return
    engine: Engine = request.app.state.engine
    d = await run_in_threadpool(engine.definition_by_id, definition_id)
    if d is None:
        raise ApiError(
            404, "InvalidRequestException", f"No matching definition with id {definition_id}"
        )
    ok = await run_in_threadpool(may_start_sync, engine, request, who, d)
    if not ok:
        raise forbidden(
            f"'{who.name}' may not start process '{d.key}': it does not name them or one of "
            "their groups as a candidate starter (camunda:candidateStarterUsers, "
            "camunda:candidateStarterGroups), or is not startable in the task list"
        )
