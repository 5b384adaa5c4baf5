"""``/external-task/...``: fetch-and-lock (with long polling), complete, failure, BPMN error,
locks, retries and queries, as served by Camunda 7."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from starlette.concurrency import run_in_threadpool

from bpm import tracing
from bpm.api import bodies as b
from bpm.api import traced
from bpm.api.auth import Principal, principal
from bpm.api.batching import CompletionBatcher
from bpm.api.camunda_params import MAX_RESULTS
from bpm.api.errors import ApiError, bad_request
from bpm.api.longpoll import LongPollHub, TooManyPolls
from bpm.api.variables import format_date, from_camunda, to_camunda
from bpm.api.worker_ids import WorkerIds
from bpm.engine import Completion, Engine
from bpm.runtime.external import FetchRequest, TopicRequest
from bpm.runtime.records import ExternalTask
from bpm.tracing import AttributeValue, Span

router = APIRouter()
Who = Annotated[Principal, Depends(principal)]
NO_CONTENT = 204


def _engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


def _ids(request: Request) -> WorkerIds:
    ids: WorkerIds = request.app.state.worker_ids
    return ids


def act_as(request: Request, who: Principal, worker_id: str) -> str:
    """The engine's id of the caller's worker ``worker_id``: namespaced by its key (see
    :mod:`bpm.api.worker_ids`)."""
    return _ids(request).acting(who, worker_id)


def task_json(task: ExternalTask, who: Principal, ids: WorkerIds) -> dict[str, Any]:
    """The fields Camunda's ExternalTaskDto has."""
    # kept after a failure, cleared by an unlock (rows older than 0005: the lock holder)
    worker = task.worker_id if task.worker_id is not None else task.lock_owner
    return {
        "id": task.id,
        "topicName": task.topic,
        "workerId": ids.shown(who, worker),
        "lockExpirationTime": format_date(task.lock_expires_at),
        "createTime": format_date(task.created_at),
        "processInstanceId": task.instance_id,
        "processDefinitionId": task.definition_id,
        "processDefinitionKey": task.definition_key,
        "processDefinitionVersionTag": None,
        "activityId": task.node_id,
        "activityInstanceId": f"{task.node_id}:{task.token_id}",  # as the tree names it
        "executionId": task.token_id,
        "retries": task.retries,
        "errorMessage": task.error_message,
        "suspended": task.suspended,
        "priority": task.priority,
        "businessKey": task.business_key,
        "tenantId": None,
    }


def locked_task_json(
    task: ExternalTask,
    topic: b.TopicBody | None,
    who: Principal,
    ids: WorkerIds,
    trace: dict[str, str] | None = None,
) -> dict[str, Any]:
    out = task_json(task, who, ids)
    out["errorDetails"] = task.error_details
    out["variables"] = to_camunda(task.variables, bool(topic and topic.deserializeValues))
    include = bool(topic and topic.includeExtensionProperties)
    out["extensionProperties"] = dict(task.properties) if include else {}
    if trace:
        out["bpmTrace"] = trace
    return out


def bounded_json(
    tasks: list[ExternalTask],
    by_topic: dict[str, b.TopicBody],
    limit: int,
    who: Principal,
    ids: WorkerIds,
    traces: dict[str, dict[str, str]] | None = None,
) -> tuple[bytes, int]:
    """The JSON array of locked tasks, cut before the one that would take it over ``limit``
    bytes (the first task always goes); returns the body and how many tasks it holds.
    ``traces``: the start trace of each task's instance, sent as its ``bpmTrace``."""
    parts: list[bytes] = []
    size = 2
    for task in tasks:
        trace = traces.get(task.instance_id) if traces else None
        item = json.dumps(
            locked_task_json(task, by_topic.get(task.topic), who, ids, trace),
            ensure_ascii=False,
            allow_nan=False,
            separators=(",", ":"),
        ).encode()
        if parts and size + len(item) + 1 > limit:
            break
        parts.append(item)
        size += len(item) + 1
    return b"[" + b",".join(parts) + b"]", len(parts)


def _fetch_request(body: b.FetchBody, worker_id: str) -> FetchRequest:
    sorting = []
    for s in body.sorting or ():
        if s.sortBy != "createTime":
            raise bad_request(f"cannot sort by '{s.sortBy}'; the sortable field is createTime")
        order = (s.sortOrder or "asc").lower()
        if order not in ("asc", "desc"):
            raise bad_request(f"sortOrder must be asc or desc, not '{s.sortOrder}'")
        sorting.append((s.sortBy, order == "asc"))
    topics = tuple(
        TopicRequest(
            topic=tp.topicName,
            lock_duration_ms=tp.lockDuration,
            variables=tuple(tp.variables) if tp.variables is not None else None,
            business_key=tp.businessKey,
            process_definition_key=tp.processDefinitionKey,
            process_definition_id=tp.processDefinitionId,
            process_variables=dict(tp.processVariables or {}),
        )
        for tp in body.topics or ()
    )
    return FetchRequest(
        worker_id=worker_id,
        max_tasks=body.maxTasks,
        topics=topics,
        use_priority=bool(body.usePriority),
        sorting=tuple(sorting),
    )


@router.post("/external-task/fetchAndLock")
async def fetch_and_lock(body: b.FetchBody, request: Request, who: Who) -> Response:
    """Lock free tasks; with ``asyncResponseTimeout`` hold the request until some are free."""
    if tracing.tracer() is None:
        return await _fetch_and_lock(body, request, who, None)
    attributes: dict[str, AttributeValue] = {
        "bpm.worker_id": body.workerId or "",
        "bpm.topics": [tp.topicName for tp in body.topics or ()],
        "bpm.max_tasks": body.maxTasks,
    }
    with traced.request_span(request, traced.FETCH, attributes) as span:
        return await _fetch_and_lock(body, request, who, span)


async def _fetch_and_lock(
    body: b.FetchBody, request: Request, who: Who, span: Span | None
) -> Response:
    who.check_topics(tp.topicName for tp in body.topics or ())
    req = _fetch_request(body, act_as(request, who, body.workerId))
    engine = _engine(request)
    ids = _ids(request)
    by_topic = {tp.topicName: tp for tp in reversed(body.topics or [])}

    limit: int = request.app.state.max_fetch_bytes

    # a traced caller (it sent a traceparent) gets the trace each task's instance started
    # in, so its handler joins the instance's trace rather than only the poll's
    wants_trace = "traceparent" in request.headers

    async def render(tasks: list[ExternalTask]) -> Response:
        traces = None
        if wants_trace and tasks:
            traces = await run_in_threadpool(engine.start_traces, [t.instance_id for t in tasks])
        body, kept = bounded_json(tasks, by_topic, limit, who, ids, traces)
        for extra in tasks[kept:]:  # over the byte budget: give them back at once
            await run_in_threadpool(engine.unlock_external_task, extra.id, record=False)
        if span is not None:
            span.set_attribute("bpm.locked", kept)
            span.set_attribute("bpm.external_task_ids", [t.id for t in tasks[:kept]])
            span.set_attribute("bpm.instance_ids", [t.instance_id for t in tasks[:kept]])
        return Response(body, media_type="application/json")

    timeout_ms = body.asyncResponseTimeout or 0
    if timeout_ms <= 0 or not req.topics or req.max_tasks == 0:
        return await render(await run_in_threadpool(engine.fetch_and_lock, req))
    hub: LongPollHub = request.app.state.longpoll
    loop = asyncio.get_running_loop()
    timeout = timeout_ms / 1000
    # answer [] before the timeout (a client gives up soon after it): at least 100 ms early
    deadline = loop.time() + timeout - min(1.0, max(0.1, timeout * 0.05))
    try:
        waiter = hub.register(frozenset(tp.topic for tp in req.topics), who.name)
    except TooManyPolls as exc:
        raise ApiError(
            429, "RestException", f"{exc}; poll again later", headers={"Retry-After": "1"}
        ) from None
    # the client going away ends the poll at once (the body is read: receive() now only
    # returns when the connection closes)
    gone = asyncio.ensure_future(request.receive())
    waited = False
    try:
        while True:
            waiter.event.clear()  # a NOTIFY during the fetch makes the next wait return
            tasks = await run_in_threadpool(engine.fetch_and_lock, req)
            if tasks:
                if waited and len(tasks) >= req.max_tasks:
                    hub.pass_on(waiter.topics)  # a full batch: more may be free
                if gone.done():  # nobody to hand them to: give them back
                    for t in tasks:
                        await run_in_threadpool(engine.unlock_external_task, t.id, record=False)
                    return Response(status_code=NO_CONTENT)
                return await render(tasks)
            remaining = deadline - loop.time()
            if remaining <= 0 or gone.done():
                return await render([])
            wait = min(remaining, hub.max_wait())
            nxt = await run_in_threadpool(
                engine.next_external_task_free_at, [tp.topic for tp in req.topics]
            )
            if nxt is not None:  # a task comes free by time: the hub wakes one poll then
                # the database's clock decided when it is free: ask the same clock, and
                # wake a little after (this process's reading of that clock may be some
                # milliseconds off; a poll woken early finds nothing and wakes another)
                due = max(0.005, (nxt - engine.core.now()).total_seconds() + 0.05)
                hub.wake_at(waiter.topics, loop.time() + due, nxt.timestamp())
            if wait > 0:
                woken = asyncio.ensure_future(waiter.event.wait())
                waiter.idle = True
                try:
                    await asyncio.wait(
                        {woken, gone}, timeout=wait, return_when=asyncio.FIRST_COMPLETED
                    )
                finally:
                    waiter.idle = False
                    woken.cancel()
                waited = True
    finally:
        hub.unregister(waiter)
        gone.cancel()


@router.post("/external-task/{task_id}/complete", status_code=NO_CONTENT)
async def complete(task_id: str, body: b.CompleteBody, request: Request, who: Who) -> Response:
    worker = act_as(request, who, body.workerId)
    variables = from_camunda(body.variables)
    local = from_camunda(body.localVariables, "localVariables")
    batcher: CompletionBatcher = request.app.state.completions
    tracer = tracing.tracer()
    if tracer is None:
        await batcher.complete(Completion(task_id, worker, variables, local, who.topics))
        return Response(status_code=NO_CONTENT)
    attributes = {"bpm.external_task_id": task_id, "bpm.worker_id": worker}
    with traced.request_span(request, traced.COMPLETE, attributes):
        # committed in a batch, from another thread: the steps it makes Ready are
        # published with this span's context
        done = Completion(task_id, worker, variables, local, who.topics, tracer.current())
        await batcher.complete(done)
    return Response(status_code=NO_CONTENT)


@router.post("/external-task/{task_id}/failure", status_code=NO_CONTENT)
async def failure(task_id: str, body: b.FailureBody, request: Request, who: Who) -> Response:
    worker = act_as(request, who, body.workerId)

    def call() -> None:
        _engine(request).fail_external_task(
            task_id,
            worker,
            body.errorMessage,
            body.errorDetails,
            retries=body.retries,
            retry_timeout_ms=body.retryTimeout,
            topics=who.topics,
        )

    await run_in_threadpool(call)
    return Response(status_code=NO_CONTENT)


@router.post("/external-task/{task_id}/bpmnError", status_code=NO_CONTENT)
async def bpmn_error(task_id: str, body: b.BpmnErrorBody, request: Request, who: Who) -> Response:
    worker = act_as(request, who, body.workerId)
    variables = from_camunda(body.variables)
    await run_in_threadpool(
        lambda: _engine(request).external_task_bpmn_error(
            task_id,
            worker,
            body.errorCode,
            body.errorMessage,
            variables,
            topics=who.topics,
        )
    )
    return Response(status_code=NO_CONTENT)


@router.post("/external-task/{task_id}/extendLock", status_code=NO_CONTENT)
async def extend_lock(task_id: str, body: b.ExtendLockBody, request: Request, who: Who) -> Response:
    worker = act_as(request, who, body.workerId)
    await run_in_threadpool(
        lambda: _engine(request).extend_external_task_lock(
            task_id, worker, body.newDuration, topics=who.topics
        )
    )
    return Response(status_code=NO_CONTENT)


@router.post("/external-task/{task_id}/lock", status_code=NO_CONTENT)
async def lock(task_id: str, body: b.LockBody, request: Request, who: Who) -> Response:
    worker = act_as(request, who, body.workerId)
    await run_in_threadpool(
        lambda: _engine(request).lock_external_task(
            task_id, worker, body.lockDuration, topics=who.topics
        )
    )
    return Response(status_code=NO_CONTENT)


@router.post("/external-task/{task_id}/unlock", status_code=NO_CONTENT)
async def unlock(task_id: str, request: Request, who: Who) -> Response:
    """A live lock only by a worker of the caller's key, or an operator (403 otherwise)."""
    may_release = _ids(request).may_release(who)
    await run_in_threadpool(
        lambda: _engine(request).unlock_external_task(
            task_id, topics=who.topics, may_release=may_release, by=who.name
        )
    )
    return Response(status_code=NO_CONTENT)


@router.put("/external-task/{task_id}/retries", status_code=NO_CONTENT)
async def set_retries(task_id: str, body: b.RetriesBody, request: Request, who: Who) -> Response:
    """Of a live lock only by a worker of the caller's key, or an operator (403 otherwise)."""
    may_release = _ids(request).may_release(who)
    await run_in_threadpool(
        lambda: _engine(request).set_external_task_retries(
            task_id, body.retries, topics=who.topics, may_release=may_release, by=who.name
        )
    )
    return Response(status_code=NO_CONTENT)


def _filters(
    ids: WorkerIds,
    who: Principal,
    topic: str | None,
    worker: str | None,
    instance: str | None,
    locked: bool | None,
    not_locked: bool | None,
    with_retries: bool | None,
    no_retries: bool | None,
) -> dict[str, Any]:
    if topic is not None:
        who.check_topics([topic])
    else:
        who.check_unrestricted("list tasks of every topic (pass topicName)")
    lock_state = True if locked else (False if not_locked else None)
    retries = True if with_retries else (False if no_retries else None)
    return {
        "topic": topic,
        "worker_id": ids.filtered(who, worker) if worker is not None else None,
        "instance_id": instance,
        "locked": lock_state,
        "retries_left": retries,
    }


Id = Annotated[str | None, Query(max_length=300)]


@router.get("/external-task")
async def list_tasks(
    request: Request,
    who: Who,
    topicName: Id = None,
    workerId: Id = None,
    processInstanceId: Id = None,
    locked: bool | None = None,
    notLocked: bool | None = None,
    withRetriesLeft: bool | None = None,
    noRetriesLeft: bool | None = None,
    firstResult: Annotated[int, Query(ge=0, le=2**31)] = 0,
    maxResults: Annotated[int | None, Query(ge=0, le=MAX_RESULTS)] = None,
) -> Response:
    """Open external tasks (ready, locked, or out of retries); at most ``MAX_RESULTS`` a
    page (also without ``maxResults``: page with ``firstResult``)."""
    f = _filters(
        _ids(request),
        who,
        topicName,
        workerId,
        processInstanceId,
        locked,
        notLocked,
        withRetriesLeft,
        noRetriesLeft,
    )
    tasks = await run_in_threadpool(
        lambda: _engine(request).external_tasks(
            **f, offset=firstResult, limit=MAX_RESULTS if maxResults is None else maxResults
        )
    )
    ids = _ids(request)
    return JSONResponse([task_json(t, who, ids) for t in tasks])


@router.get("/external-task/count")
async def count_tasks(
    request: Request,
    who: Who,
    topicName: Id = None,
    workerId: Id = None,
    processInstanceId: Id = None,
    locked: bool | None = None,
    notLocked: bool | None = None,
    withRetriesLeft: bool | None = None,
    noRetriesLeft: bool | None = None,
) -> Response:
    f = _filters(
        _ids(request),
        who,
        topicName,
        workerId,
        processInstanceId,
        locked,
        notLocked,
        withRetriesLeft,
        noRetriesLeft,
    )
    n = await run_in_threadpool(lambda: _engine(request).count_external_tasks(**f))
    return JSONResponse({"count": n})


@router.get("/external-task/{task_id}")
async def get_task(task_id: str, request: Request, who: Who) -> Response:
    task = await run_in_threadpool(_engine(request).external_task, task_id)
    who.check_topics([task.topic])
    return JSONResponse(task_json(task, who, _ids(request)))


@router.get("/external-task/{task_id}/errorDetails")
async def error_details(task_id: str, request: Request, who: Who) -> Response:
    task = await run_in_threadpool(_engine(request).external_task, task_id)
    who.check_topics([task.topic])
    return PlainTextResponse(task.error_details or "", media_type="text/plain")
