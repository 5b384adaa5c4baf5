"""The cockpit's decision reads (``/api/decisions``): recent evaluations, and one evaluation
with the DMN XML and the rules it matched, for the dmn-js viewer to draw and highlight."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from bpm.api.cockpit_auth import Caller, cockpit_caller
from bpm.api.errors import ApiError, bad_request
from bpm.api.variables import format_date
from bpm.engine import Engine
from bpm.errors import NotFound
from bpm.runtime.records import DecisionInstance
from bpm.store.decisions import DefinitionQuery, InstanceQuery

router = APIRouter()
Reader = Annotated[Caller, Depends(cockpit_caller)]
MAX_PAGE = 200


# dmn-js reads DMN 1.3: a 1.1, 1.2, 1.4 or 1.5 file is shown through the 1.3 namespaces
# (what the viewer draws, tables and expressions, is the same in all of them).
_VIEWER_NAMESPACES = {
    "http://www.omg.org/spec/DMN/20151101/dmn.xsd": "https://www.omg.org/spec/DMN/20191111/MODEL/",
    "http://www.omg.org/spec/DMN/20180521/MODEL/": "https://www.omg.org/spec/DMN/20191111/MODEL/",
    "https://www.omg.org/spec/DMN/20211108/MODEL/": "https://www.omg.org/spec/DMN/20191111/MODEL/",
    "https://www.omg.org/spec/DMN/20230324/MODEL/": "https://www.omg.org/spec/DMN/20191111/MODEL/",
    "http://www.omg.org/spec/DMN/20180521/DMNDI/": "https://www.omg.org/spec/DMN/20191111/DMNDI/",
    "https://www.omg.org/spec/DMN/20230324/DMNDI/": "https://www.omg.org/spec/DMN/20191111/DMNDI/",
}


def for_viewer(xml: str) -> str:
    """The DMN XML as the dmn-js viewer reads it (DMN 1.3 namespaces)."""
    for old, new in _VIEWER_NAMESPACES.items():
        xml = xml.replace(f'"{old}"', f'"{new}"')
    return xml


def _engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


def _summary(row: DecisionInstance) -> dict[str, Any]:
    matched = {o.get("rule_id") for o in row.outputs if o.get("rule_id")}
    return {
        "id": row.id,
        "key": row.definition_key,
        "name": row.definition_name,
        "definitionId": row.definition_id,
        "drdKey": row.drd_key,
        "evaluatedAt": format_date(row.evaluated_at),
        "processInstanceId": row.process_instance_id,
        "activityId": row.activity_id,
        "rootId": row.root_id,
        "matchedRules": len(matched),
    }


@router.get("/decisions")
async def decisions(
    request: Request,
    caller: Reader,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
    processInstanceId: Annotated[str | None, Query(max_length=64)] = None,
) -> Response:
    """The newest evaluations (decisions asked for, not the ones they required)."""
    query = InstanceQuery(
        roots_only=processInstanceId is None,
        process_instance_id=processInstanceId,
        sorting=(("evaluationTime", False),),
        limit=limit,
    )
    decisions = _engine(request).decisions

    def read() -> dict[str, Any]:
        return {
            "items": [_summary(r) for r in decisions.history(query)],
            "total": decisions.count_history(InstanceQuery(roots_only=True)),
            "definitions": decisions.count(DefinitionQuery(latest=True)),
        }

    return JSONResponse(await run_in_threadpool(read))


@router.get("/decisions/{instance_id}")
async def decision(instance_id: str, request: Request, caller: Reader) -> Response:
    """One evaluation: its inputs, its matched rules and outputs, and the DMN to draw."""
    if not instance_id or len(instance_id) > 64:
        raise bad_request("decision instance id must be 1 to 64 characters")
    decisions = _engine(request).decisions

    def read() -> dict[str, Any]:
        found = decisions.history(InstanceQuery(id=instance_id))
        if not found:
            raise NotFound(instance_id)
        row = found[0]
        drds = decisions.requirements(DefinitionQuery(id=row.drd_id)) if row.drd_id else []
        xml = decisions.xml(drds[0].deployment_id, drds[0].resource) if drds else None
        xml = for_viewer(xml) if xml else None
        required = decisions.history(InstanceQuery(root_id=row.id))
        return {
            **_summary(row),
            "version": drds[0].version if drds else None,
            "inputs": list(row.inputs),
            "outputs": list(row.outputs),
            "collectResult": row.collect_result,
            "matchedRuleIds": list(
                dict.fromkeys(o["rule_id"] for o in row.outputs if o.get("rule_id"))
            ),
            "required": [_summary(r) for r in required],
            "xml": xml,
        }

    try:
        return JSONResponse(await run_in_threadpool(read))
    except NotFound:
        raise ApiError(404, "NotFound", f"no decision instance {instance_id}") from None
