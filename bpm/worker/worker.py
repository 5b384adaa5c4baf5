"""The worker loop: long-poll fetch-and-lock, run handlers in a thread pool, heartbeat, report.

* Fetches only as many tasks as it has free slots (``concurrency``), at most ``max_tasks``.
* While a handler runs, its lock is extended at half the lease (``extendLock``); a
  handler's own longer ``task.extend_lock`` is never shortened by it.
* A handler's return value completes the task; :class:`BpmnError` throws a BPMN error; any
  other exception reports a failure with the traceback in ``errorDetails``.
* complete / failure / bpmnError are retried with backoff on network errors and 5xx: the
  engine makes them idempotent for the worker that sent them.
* SIGTERM / SIGINT: stop fetching, finish the tasks in flight, exit.
* With a tracer (:mod:`bpm.tracing`, e.g. ``bpm.contrib.otel.instrument()``): a span
  ``bpm.worker.fetch`` per fetch that locked tasks' poll, and per task a span
  ``bpm.worker.task`` (a child of the trace the task's instance started in, which the API
  sends as ``bpmTrace``, else of the fetch; current while the handler runs, so the handler's
  own spans are its children); every request carries the current context as W3C ``traceparent`` /
  ``tracestate`` headers, so the REST API's ``bpm.external.fetch`` and
  ``bpm.external.complete`` spans, and the steps the complete makes Ready, join that trace.
* A fetch the engine refuses for good (a wrong key: 401; a key not allowed these topics: 403;
  no REST API at the URL: 404; a request it cannot take: 400) stops the worker with one
  ERROR line saying what to fix, and :meth:`ExternalWorker.run` raises
  :class:`WorkerRefused`: the same request would be refused for ever.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import signal
import socket
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import FrameType
from typing import Any

import httpx

from bpm import tracing
from bpm.errors import BpmError
from bpm.worker.task import BpmnError, Task, typed_variables

log = logging.getLogger("bpm.worker")
# Refusals that repeat for ever: the fetch request is the same every time. 408, 409, 425
# and 429 pass with time, so they are retried like 5xx and network errors.
_RETRIED_CLIENT_ERRORS = frozenset({408, 409, 425, 429})


class WorkerRefused(BpmError):
    """The engine refused this worker's fetch for good (credentials, topics, URL); the
    worker stopped. The message says what to fix."""

    def __init__(self, message: str, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code


Handler = Callable[[Task], Mapping[str, Any] | None]


@dataclass(frozen=True)
class Subscription:
    """A topic this worker handles, and how."""

    topic: str
    handler: Handler
    lock_duration: int = 30_000
    variables: tuple[str, ...] | None = None
    business_key: str | None = None
    process_definition_key: str | None = None
    # None: send no retries, the engine decides (the model's RetryPolicy, else an incident).
    # N: Camunda-client style, N retries in all with ``retry_timeout`` ms between them.
    retries: int | None = None
    retry_timeout: int = 0

    def topic_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "topicName": self.topic,
            "lockDuration": self.lock_duration,
            "deserializeValues": True,
            "includeExtensionProperties": True,
        }
        if self.variables is not None:
            out["variables"] = list(self.variables)
        if self.business_key is not None:
            out["businessKey"] = self.business_key
        if self.process_definition_key is not None:
            out["processDefinitionKey"] = self.process_definition_key
        return out


class _Heartbeats:
    """Extends the lock of every running task at half its lease, from one thread.

    A heartbeat never shortens a lock the handler extended itself (``task.extend_lock``):
    the handler's call goes through :meth:`extend_now`, in turn with the heartbeat's calls
    for the same task (one at a time, so a heartbeat read before it cannot land after it),
    and the heartbeat goes on with the handler's duration."""

    def __init__(self, extend: Callable[[str, int], bool | None]) -> None:
        self._extend = extend
        self._due: dict[str, tuple[float, int]] = {}
        self._calls: dict[str, threading.Lock] = {}  # one extendLock at a time per task
        self._cond = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="bpm-heartbeat", daemon=True)
        self._thread.start()

    def add(self, task_id: str, lease_ms: int) -> None:
        with self._cond:
            self._due[task_id] = (time.monotonic() + lease_ms / 2000, lease_ms)
            self._calls.setdefault(task_id, threading.Lock())
            self._cond.notify()

    def remove(self, task_id: str) -> None:
        with self._cond:
            self._due.pop(task_id, None)
            self._calls.pop(task_id, None)

    def next_beat(self, task_id: str) -> tuple[float, int] | None:
        """(monotonic time, lease in ms) of the task's next heartbeat; None: not beating."""
        with self._cond:
            return self._due.get(task_id)

    def extend_now(self, task_id: str, lease_ms: int) -> bool | None:
        """The handler extends its lock to ``lease_ms`` from now: after any heartbeat of
        the task in flight, and the heartbeat beats with that lease from now on."""
        with self._cond:
            call = self._calls.get(task_id) or threading.Lock()
        with call:
            ok = self._extend(task_id, lease_ms)
            with self._cond:
                if ok and task_id in self._due:
                    self._due[task_id] = (time.monotonic() + lease_ms / 2000, lease_ms)
                    self._cond.notify()
        return ok

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                if self._closed:
                    return
                now = time.monotonic()
                due = [tid for tid, (at, _) in self._due.items() if at <= now]
                if not due:
                    nxt = min((at for at, _ in self._due.values()), default=now + 60)
                    self._cond.wait(max(0.0, nxt - now))
                    continue
            for tid in due:
                self._beat(tid)

    def _beat(self, tid: str) -> None:
        with self._cond:
            call = self._calls.get(tid)
        if call is None:  # the task ended meanwhile
            return
        with call:
            with self._cond:  # read the lease under the call lock: a handler's is final
                entry = self._due.get(tid)
                if entry is None or entry[0] > time.monotonic():
                    return  # ended, or the handler just extended it
                lease = entry[1]
            ok = self._extend(tid, lease)
            with self._cond:
                if tid not in self._due:
                    return  # the task ended meanwhile
                if ok is False:  # refused: the lock is gone; stop trying
                    self._due.pop(tid, None)
                elif ok is None:  # network trouble: try again soon
                    self._due[tid] = (time.monotonic() + min(1.0, lease / 4000), lease)
                else:
                    self._due[tid] = (time.monotonic() + lease / 2000, lease)


class ExternalWorker:
    """Fetches and runs external tasks of the subscribed topics."""

    def __init__(
        self,
        base_url: str,
        *,
        worker_id: str | None = None,
        api_key: str | None = None,
        basic_auth: tuple[str, str] | None = None,
        max_tasks: int = 10,
        concurrency: int = 8,
        long_poll_ms: int = 20_000,
        use_priority: bool = True,
        report_deadline: float = 120.0,
        http_timeout: float = 30.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}"
        self.max_tasks = max(1, max_tasks)
        self.concurrency = max(1, concurrency)
        self.long_poll_ms = long_poll_ms
        self.use_priority = use_priority
        self.report_deadline = report_deadline
        self._subs: dict[str, Subscription] = {}
        headers: dict[str, str] = {}
        auth: httpx.BasicAuth | None = None
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        elif basic_auth:
            auth = httpx.BasicAuth(*basic_auth)
        self._http = httpx.Client(
            base_url=self.base_url, headers=headers, auth=auth, timeout=http_timeout
        )
        self._poll_http = httpx.Client(
            base_url=self.base_url,
            headers=headers,
            auth=auth,
            timeout=httpx.Timeout(long_poll_ms / 1000 + 10, connect=5.0),
        )
        self._stop = threading.Event()
        self._slots = threading.Semaphore(self.concurrency)
        self._pool: ThreadPoolExecutor | None = None
        self._beats: _Heartbeats | None = None
        self._refused: WorkerRefused | None = None
        self.completed = 0
        self.failed = 0

    # -- registration ---------------------------------------------------------------------
    def subscribe(
        self,
        topic: str,
        *,
        lock_duration: int = 30_000,
        variables: list[str] | None = None,
        business_key: str | None = None,
        process_definition_key: str | None = None,
        retries: int | None = None,
        retry_timeout: int = 0,
    ) -> Callable[[Handler], Handler]:
        """Decorator: run the function for every task of ``topic``."""
        if lock_duration <= 0:
            raise ValueError("lock_duration must be > 0 ms")

        def register(fn: Handler) -> Handler:
            self._subs[topic] = Subscription(
                topic,
                fn,
                lock_duration,
                tuple(variables) if variables is not None else None,
                business_key,
                process_definition_key,
                retries,
                retry_timeout,
            )
            return fn

        return register

    # -- running --------------------------------------------------------------------------
    def run(self, *, install_signals: bool = True) -> None:
        """Fetch and run tasks until :meth:`stop` (or SIGTERM / SIGINT).

        Logs one start line (worker id, topics, URL) on ``bpm.worker`` at INFO; when the
        application set up no logging, the worker's lines go to stderr. Raises
        :class:`WorkerRefused` after finishing the tasks in flight when the engine refuses
        the fetch for good (wrong key, topics not allowed, wrong URL).
        """
        if not self._subs:
            raise RuntimeError("no topic subscribed: use @worker.subscribe('topic')")
        _ensure_log_output()
        self._refused = None
        log.info(
            "worker %s fetching topics %s from %s (up to %d tasks at once)",
            self.worker_id,
            ", ".join(self._subs),
            self.base_url,
            self.concurrency,
        )
        if install_signals and threading.current_thread() is threading.main_thread():

            def on_signal(signum: int, _frame: FrameType | None) -> None:
                log.info("signal %d: finishing the tasks in flight, then exiting", signum)
                self.stop()

            signal.signal(signal.SIGTERM, on_signal)
            signal.signal(signal.SIGINT, on_signal)
        self._pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="bpm-task")
        self._beats = _Heartbeats(self._extend_lock)
        fetcher = threading.Thread(target=self._fetch_loop, name="bpm-fetch", daemon=True)
        fetcher.start()
        try:
            while not self._stop.wait(0.2):
                if not fetcher.is_alive():
                    break
        finally:
            self._stop.set()
            fetcher.join(timeout=0.5)  # a pending long poll is abandoned, not awaited
            self._pool.shutdown(wait=True)  # finish in flight
            self._beats.close()
            self._http.close()
        if self._refused is not None:
            raise self._refused
        log.info("worker %s stopped", self.worker_id)

    def start_background(self) -> threading.Thread:
        """Run in a daemon thread (no signal handlers); stop with :meth:`stop`."""
        thread = threading.Thread(
            target=self.run, kwargs={"install_signals": False}, name="bpm-worker", daemon=True
        )
        thread.start()
        return thread

    def stop(self) -> None:
        """Stop fetching; tasks in flight finish and are reported."""
        self._stop.set()

    # -- internals ------------------------------------------------------------------------
    def _fetch_body(self, max_tasks: int) -> dict[str, Any]:
        return {
            "workerId": self.worker_id,
            "maxTasks": max_tasks,
            "usePriority": self.use_priority,
            "asyncResponseTimeout": self.long_poll_ms,
            "topics": [s.topic_json() for s in self._subs.values()],
        }

    def _fetch_loop(self) -> None:
        backoff = 0.5
        while not self._stop.is_set():
            free = 0
            while self._slots.acquire(blocking=free == 0, timeout=0.2 if free == 0 else None):
                free += 1
                if free >= min(self.max_tasks, self.concurrency):
                    break
            if free == 0:
                continue
            fetched: _Fetched | None = None
            try:
                fetched = self._fetch(free)
                tasks = fetched.tasks
                backoff = 0.5
            except (httpx.HTTPError, _Refusal, ValueError) as exc:
                for _ in range(free):
                    self._slots.release()
                if isinstance(exc, _Refusal) and _for_good(exc.response):
                    self._refused = WorkerRefused(
                        _refusal_message(exc.response, self.base_url), exc.response.status_code
                    )
                    log.error("%s; the worker stops", self._refused)
                    self._stop.set()
                    return
                log.warning("fetchAndLock failed (%s); retrying in %.1fs", _describe(exc), backoff)
                self._stop.wait(backoff * (0.5 + random.random()))
                backoff = min(backoff * 2, 30.0)
                continue
            for data in tasks[free:]:  # never more than asked; be safe anyway
                self._unlock(str(data.get("id")))
            tasks = tasks[:free]
            for _ in range(free - len(tasks)):
                self._slots.release()
            for data in tasks:
                if self._stop.is_set():  # stopping: give it back at once
                    self._unlock(str(data.get("id")))
                    self._slots.release()
                    continue
                assert self._pool is not None
                self._pool.submit(self._execute_traced, data, fetched.trace)

    def _fetch(self, free: int) -> _Fetched:
        """One long poll; with a tracer inside a ``bpm.worker.fetch`` span (ended with the
        poll; one that locked nothing is not kept apart: it is the same span, empty)."""
        tracer = tracing.tracer()
        body = self._fetch_body(free)
        if tracer is None:
            return _Fetched(self._post_fetch(body, {}), None)
        attributes = {"bpm.worker_id": self.worker_id, "bpm.topics": sorted(self._subs)}
        with tracing.span("bpm.worker.fetch", attributes) as span:
            tasks = self._post_fetch(body, tracer.inject(tracer.current()))
            if span is not None:
                span.set_attribute("bpm.locked", len(tasks))
            return _Fetched(tasks, tracer.current())

    def _post_fetch(self, body: dict[str, Any], headers: dict[str, str]) -> list[dict[str, Any]]:
        resp = self._poll_http.post("/external-task/fetchAndLock", json=body, headers=headers)
        if resp.status_code != 200:
            raise _Refusal(resp)
        tasks: list[dict[str, Any]] = resp.json()
        return tasks

    def _execute_traced(self, data: dict[str, Any], fetch: tracing.TraceContext | None) -> None:
        """:meth:`_execute` in a ``bpm.worker.task`` span: a child of the trace its
        instance started in when the API sent it (``bpmTrace``), so the handler is part of
        the trace that runs from the request that started the instance; else of the fetch
        that locked it (a pool thread does not inherit the fetching thread's context)."""
        tracer = tracing.tracer()
        if tracer is None or fetch is None:
            self._execute(data)
            return
        started = data.get("bpmTrace")
        if isinstance(started, dict):
            fetch = tracer.extract(started) or fetch
        attributes: dict[str, tracing.AttributeValue] = {
            "bpm.external_task_id": str(data.get("id")),
            "bpm.topic": str(data.get("topicName")),
            "bpm.worker_id": self.worker_id,
        }
        if data.get("processInstanceId"):
            attributes["bpm.instance_id"] = str(data["processInstanceId"])
        with tracer.resume(fetch), tracing.span("bpm.worker.task", attributes):
            self._execute(data)

    def _execute(self, data: dict[str, Any]) -> None:
        task = Task.from_json(data, self.worker_id)
        beats = self._beats
        assert beats is not None
        task._extend = lambda ms: bool(beats.extend_now(task.id, ms))
        sub = self._subs.get(task.topic)
        assert self._beats is not None
        try:
            if sub is None:
                self._unlock(task.id)
                return
            self._beats.add(task.id, sub.lock_duration)
            try:
                result = sub.handler(task)
            except BpmnError as err:
                self._beats.remove(task.id)
                self._report(
                    task.id,
                    "bpmnError",
                    {
                        "workerId": self.worker_id,
                        "errorCode": err.code,
                        "errorMessage": err.message,
                        "variables": typed_variables(err.variables),
                    },
                )
                return
            except Exception as exc:
                self._beats.remove(task.id)
                self._report_failure(task, sub, exc)
                return
            self._beats.remove(task.id)
            if result is not None and not isinstance(result, Mapping):
                self._report_failure(
                    task,
                    sub,
                    TypeError(f"handler returned {type(result).__name__}; return a dict or None"),
                )
                return
            if self._report(
                task.id,
                "complete",
                {
                    "workerId": self.worker_id,
                    "variables": typed_variables(result),
                },
            ):
                self.completed += 1
        finally:
            if self._beats is not None:
                self._beats.remove(task.id)
            self._slots.release()

    def _report_failure(self, task: Task, sub: Subscription, exc: BaseException) -> None:
        details = "".join(traceback.format_exception(exc))
        body: dict[str, Any] = {
            "workerId": self.worker_id,
            "errorMessage": f"{type(exc).__name__}: {exc}"[:4000],
            "errorDetails": details,
        }
        if sub.retries is not None:
            left = task.retries if task.retries is not None else sub.retries
            body["retries"] = max(0, left - 1)
            body["retryTimeout"] = sub.retry_timeout
        self.failed += 1
        self._report(task.id, "failure", body)

    def _report(self, task_id: str, action: str, body: dict[str, Any]) -> bool:
        """POST a result, retrying network errors and 5xx (the engine makes it idempotent)."""
        deadline = time.monotonic() + self.report_deadline
        delay = 0.1
        while True:
            try:
                resp = self._http.post(
                    f"/external-task/{task_id}/{action}", json=body, headers=_trace_headers()
                )
                if resp.status_code == 204:
                    return True
                if resp.status_code < 500 and resp.status_code != 429:
                    log.warning("%s of task %s refused: %s", action, task_id, _describe(resp))
                    return False
                problem = _describe(resp)
            except httpx.HTTPError as exc:
                problem = _describe(exc)
            if time.monotonic() + delay > deadline:
                log.error(
                    "%s of task %s not delivered (%s); giving up, the lock will expire",
                    action,
                    task_id,
                    problem,
                )
                return False
            log.info(
                "%s of task %s failed (%s); retrying in %.1fs", action, task_id, problem, delay
            )
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 5.0)

    def _extend_lock(self, task_id: str, lease_ms: int) -> bool | None:
        """True extended, False refused (lock lost), None network trouble."""
        try:
            resp = self._http.post(
                f"/external-task/{task_id}/extendLock",
                json={"workerId": self.worker_id, "newDuration": lease_ms},
            )
        except httpx.HTTPError as exc:
            log.warning("extendLock of %s failed: %s", task_id, _describe(exc))
            return None
        if resp.status_code == 204:
            return True
        if resp.status_code >= 500:
            return None
        log.warning(
            "extendLock of %s refused: %s; another worker may take the task",
            task_id,
            _describe(resp),
        )
        return False

    def _unlock(self, task_id: str) -> None:
        with contextlib.suppress(httpx.HTTPError):  # else the lock simply expires
            self._http.post(f"/external-task/{task_id}/unlock")


def _trace_headers() -> dict[str, str]:
    """The current trace context as W3C headers (none without a tracer)."""
    tracer = tracing.tracer()
    return tracer.inject(tracer.current()) if tracer is not None else {}


@dataclass(frozen=True)
class _Fetched:
    """What one poll locked, and (with a tracer) the context of its span."""

    tasks: list[dict[str, Any]]
    trace: tracing.TraceContext | None


class _Refusal(Exception):
    """A non-200 answer to fetchAndLock, carried to the loop's one error path."""

    def __init__(self, resp: httpx.Response) -> None:
        super().__init__(_describe(resp))
        self.response = resp

    def __str__(self) -> str:
        return _describe(self.response)


def _for_good(resp: httpx.Response) -> bool:
    return 400 <= resp.status_code < 500 and resp.status_code not in _RETRIED_CLIENT_ERRORS


def _refusal_message(resp: httpx.Response, base_url: str) -> str:
    """What a permanent refusal of fetchAndLock means, and what to change."""
    said = _describe(resp)
    if resp.status_code == 401:
        return (
            f"{base_url} refused this worker's credentials ({said}): pass the api_key= "
            "(or basic_auth=) of a key in the server's BPM_API_KEYS"
        )
    if resp.status_code == 403:
        return (
            f"{base_url} refused this worker ({said}): its key may not fetch these topics "
            "(the topic list of its entry in BPM_API_KEYS), or its worker_id belongs to "
            "another key"
        )
    if resp.status_code in (404, 405):
        return (
            f"no Camunda REST API at {base_url} ({said}): the URL ends in /engine-rest, "
            "e.g. http://127.0.0.1:8080/engine-rest"
        )
    return f"{base_url} refused fetchAndLock ({said}): fix the worker's settings"


def _describe(thing: httpx.Response | BaseException) -> str:
    if isinstance(thing, httpx.Response):
        try:
            message = thing.json().get("message")
        except Exception:
            message = thing.text[:200]
        return f"HTTP {thing.status_code}: {message}"
    if isinstance(thing, _Refusal):
        return str(thing)
    if isinstance(thing, httpx.ConnectError):
        return f"cannot connect: {thing}"
    if isinstance(thing, httpx.TimeoutException):
        return f"timed out: {thing}" if str(thing) else "timed out"
    return f"{type(thing).__name__}: {thing}"


def _ensure_log_output() -> None:
    """Give the worker's lines a place to go when the application set up no logging (a
    plain ``python my_worker.py``): stderr, from INFO. Configured logging is left alone."""
    if log.hasHandlers():
        return
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    log.addHandler(handler)
    if log.level == logging.NOTSET:
        log.setLevel(logging.INFO)
