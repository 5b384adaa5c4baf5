"""A trail becomes a test: an instance's inputs exported as a case file, and replayed.

``bpm trail export ID > case.json`` (:func:`export_case`) writes what came into an instance
from outside its model: its start variables, every handler's outcome (the variables it
returned, its failure or its BPMN error), user and external task completions, messages and
timer firings, in the order they happened, with the path it took and how it ended. The
engine must keep variable values in the history for that (``BPM_HISTORY_VALUES=1``,
:attr:`bpm.EngineConfig.history_values`; the kit always does).

:func:`replay` runs the case again on the model deployed now: the handlers answer what they
answered then (``handlers="recorded"``), or the current handlers run and must return what
they returned then (``handlers="current"``). It fails with the first step that differs.
"""

from __future__ import annotations

import json
from collections import Counter, deque
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from bpm.engine import Engine
from bpm.errors import BpmnError, InvalidOperation, MessageCorrelationError
from bpm.handlers import Handler, TaskContext
from bpm.runtime.records import Instance
from bpm.testing.kit import BpmTest, current

__all__ = ["FORMAT", "ReplayMismatch", "export_case", "replay"]

FORMAT = "bpm-case/1"


class ReplayMismatch(AssertionError):
    """The replay went another way than the trail: ``step`` is the 1-based number of the
    first step of the case that differs (0: the start)."""

    def __init__(self, step: int, message: str) -> None:
        super().__init__(message)
        self.step = step


class ReplayedFailure(Exception):
    """A handler failure of the trail, raised again by the replay's double."""


def export_case(engine: Engine, instance_id: str) -> dict[str, Any]:
    """The case file of an instance (JSON-ready); :class:`InvalidOperation` when the
    history holds no variable values."""
    inst = engine.get_instance(instance_id)
    definition = engine.definition_by_id(inst.definition_id)
    events = engine.history(instance_id)
    node_of: dict[str, str] = {}
    pending: dict[str, dict[str, Any]] = {}
    executing: set[str] = set()
    messages: dict[str, dict[str, Any]] = {}
    keys: dict[str, Any] = {}  # the correlation key each message wait opened with
    # A boundary event's message: its variables are written by the token created at the
    # boundary event after the activity's token consumed the message.
    by_node: dict[str, dict[str, Any]] = {}
    steps: list[dict[str, Any]] = []
    start: dict[str, Any] = {}

    def values(payload: Mapping[str, Any]) -> dict[str, Any]:
        if payload.get("names") and "values" not in payload:
            raise InvalidOperation(
                f"the history of instance {instance_id} keeps variable names, not values: "
                "run the engine with BPM_HISTORY_VALUES=1 (EngineConfig.history_values) to "
                "export trails"
            )
        return dict(payload.get("values") or {})

    def step(kind: str, e: Any, **data: Any) -> dict[str, Any]:
        out = {"kind": kind, "node": e.node_id, "at": e.at.isoformat(), **data}
        steps.append(out)
        return out

    for e in events:
        p, tok = e.payload, e.token_id or ""
        if e.type == "instance_started":
            if p.get("variables") and "values" not in p:
                values({"names": p["variables"]})
            start = {
                "variables": dict(p.get("values") or {}),
                "business_key": p.get("business_key"),
                "start_event": p.get("start_event"),
                "at": e.at.isoformat(),
            }
        elif e.type == "token_created" and tok and e.node_id:
            node_of[tok] = e.node_id
            if e.node_id in by_node:
                messages[tok] = by_node.pop(e.node_id)
        elif e.type == "token_executing":
            executing.add(tok)
            pending[tok] = {}
        elif e.type == "variables_updated":
            written = values(p)
            if p.get("by"):
                step("set_variables", e, variables=written)
            elif tok in messages:
                messages[tok]["variables"].update(written)
            elif tok and e.node_id == node_of.get(tok):
                pending.setdefault(tok, {}).update(written)
        elif e.type == "token_completed" and tok in executing:
            executing.discard(tok)
            step("handler", e, outcome="completed", variables=pending.pop(tok, {}))
        elif e.type == "attempt_failed" and "task" in p:
            step("external_failure", e, message=p.get("error"), retries=0)
        elif e.type == "attempt_failed":
            executing.discard(tok)
            pending.pop(tok, None)
            step("handler", e, outcome="failed", error=p.get("error"))
        elif e.type == "external_task_retry" and steps and steps[-1]["kind"] == "external_failure":
            steps[-1]["retries"] = p.get("retries")
        elif e.type == "bpmn_error" and tok in executing:
            executing.discard(tok)
            step(
                "handler",
                e,
                outcome="bpmn_error",
                code=p.get("error_code"),
                message=p.get("message"),
                variables=pending.pop(tok, {}),
            )
        elif e.type == "external_task_bpmn_error":
            step(
                "external_error",
                e,
                code=p.get("error_code"),
                message=p.get("message"),
                variables=pending.pop(tok, {}),
            )
        elif e.type == "external_task_completed":
            step("external_task", e, variables=pending.pop(tok, {}))
        elif e.type == "user_task_completed":
            step("user_task", e, variables=pending.pop(tok, {}))
        elif e.type == "token_waiting" and "message" in p:
            keys[tok] = p.get("correlation_key")
        elif e.type == "subscription_consumed" and e.node_id:
            if "signal" in p:
                got = step("signal", e, name=p["signal"], variables={})
            else:
                got = step(
                    "message",
                    e,
                    name=p.get("message"),
                    correlation_key=keys.get(tok),
                    variables={},
                )
            messages[tok] = by_node[e.node_id] = got
        elif e.type == "timer_fired":
            step("timer", e, due=p.get("due"), timer_kind=p.get("kind"))
        if e.type in ("token_completed", "token_terminated", "token_waiting") and tok in messages:
            done = messages.pop(tok)
            if e.node_id and by_node.get(e.node_id) is done:
                del by_node[e.node_id]  # a catch event: its own token took the variables
    return {
        "format": FORMAT,
        "instance": inst.id,
        "process": inst.definition_key,
        "version": definition.version if definition else None,
        "checksum": definition.checksum if definition else None,
        "start": start,
        "steps": steps,
        "path": [e.node_id for e in events if e.type == "token_completed" and e.node_id],
        "end": {"state": inst.state.value, "variables": inst.variables},
    }


def replay(
    case: str | Path | Mapping[str, Any],
    kit: BpmTest | None = None,
    *,
    handlers: Literal["recorded", "current"] = "recorded",
) -> Instance:
    """Run ``case`` (a case file's path, or its data) again on the model of its process
    deployed in ``kit`` (default: the running test's ``bpm`` fixture); returns the new
    instance. Raises :class:`ReplayMismatch` at the first step that differs."""
    data = dict(json.loads(Path(case).read_text()) if isinstance(case, str | Path) else case)
    if data.get("format") != FORMAT:
        raise ValueError(f"not a case file of this version ({FORMAT}): {data.get('format')!r}")
    if handlers not in ("recorded", "current"):
        raise ValueError(f"handlers= is 'recorded' or 'current', not {handlers!r}")
    return _Replay(kit or current(), data, handlers).run()


def _describe(s: Mapping[str, Any]) -> str:
    kind, node = s["kind"], s["node"]
    if kind == "handler":
        detail = {"completed": "returned", "failed": "failed:", "bpmn_error": "threw"}[s["outcome"]]
        what = (
            s.get("variables") if s["outcome"] == "completed" else s.get("error") or s.get("code")
        )
        return f"the handler of '{node}' {detail} {what}"
    if kind == "timer":
        return f"the timer '{node}' fired (due {s['due']})"
    if kind in ("message", "signal"):
        return f"{kind} '{s['name']}' arrived at '{node}'"
    return f"{kind.replace('_', ' ')} at '{node}' with {s.get('variables')}"


class _Replay:
    def __init__(self, kit: BpmTest, data: Mapping[str, Any], handlers: str) -> None:
        self.kit = kit
        self.data = data
        self.handlers = handlers
        self.steps: list[dict[str, Any]] = list(data["steps"])
        self.outcomes: dict[str, deque[int]] = {}
        for i, s in enumerate(self.steps, 1):
            if s["kind"] == "handler":
                self.outcomes.setdefault(s["node"], deque()).append(i)
        self.mismatch: ReplayMismatch | None = None
        self.instance_id: str | None = None
        self.recorded_start = datetime.fromisoformat(data["start"]["at"])
        self.replay_start = kit.clock.now

    def fail(self, step: int, what: str) -> ReplayMismatch:
        where = self.kit.describe(self.instance_id) if self.instance_id else ""
        return ReplayMismatch(step, f"step {step}: {what}\n\n{where}".rstrip())

    def check(self) -> None:
        if self.mismatch is not None:
            raise self.mismatch

    def run(self) -> Instance:
        key = self.data["process"]
        try:
            model = self.kit.engine.model(self.kit.engine.definition(key).id)
        except Exception as exc:
            raise ValueError(
                f"process '{key}' is not deployed: deploy its current model first "
                f"(bpm.deploy(...)) ({exc})"
            ) from None
        for name in model.handler_names():
            self.kit.handler(name, self._double(name))
        start = self.data["start"]
        inst = self.kit.engine.start(
            key,
            dict(start.get("variables") or {}),
            business_key=start.get("business_key"),
            start_event=start.get("start_event"),
        )
        self.instance_id = inst.id
        self.kit.run()
        self.check()
        for i, s in enumerate(self.steps, 1):
            if s["kind"] != "handler":
                self.apply(i, s)
                self.check()
        for left in self.outcomes.values():
            if left:
                n = left[0]
                raise self.fail(n, f"{_describe(self.steps[n - 1])}; the replay never ran it")
        self.compare_path()
        return self.kit.instance(inst.id)

    def _double(self, name: str) -> Handler:
        real = self.kit.registry.find(name) if self.handlers == "current" else None

        def answer(ctx: TaskContext) -> Mapping[str, Any] | None:
            left = self.outcomes.get(ctx.node_id)
            if not left:
                if self.mismatch is None:
                    self.mismatch = self.fail(
                        len(self.steps) + 1,
                        f"the replay ran the handler of '{ctx.node_id}' (attempt "
                        f"{ctx.attempt}), which the trail had no more runs of",
                    )
                raise ReplayedFailure("not in the trail")
            n = left.popleft()
            s = self.steps[n - 1]
            if real is not None:
                return self._compare(n, s, real.fn, ctx)
            if s["outcome"] == "failed":
                raise ReplayedFailure(s.get("error") or "failed")
            if s["outcome"] == "bpmn_error":
                raise BpmnError(s["code"], s.get("message"), s.get("variables") or {})
            return dict(s.get("variables") or {})

        return answer

    def _compare(
        self, n: int, s: Mapping[str, Any], fn: Handler, ctx: TaskContext
    ) -> Mapping[str, Any] | None:
        try:
            got = fn(ctx)
        except BpmnError as exc:
            if s["outcome"] != "bpmn_error" or exc.code != s.get("code"):
                self._note(n, f"{_describe(s)}; now it threw BPMN error {exc.code!r}")
            raise
        except Exception as exc:
            if s["outcome"] != "failed":
                self._note(n, f"{_describe(s)}; now it failed: {type(exc).__name__}: {exc}")
            raise
        if s["outcome"] != "completed" or dict(got or {}) != dict(s.get("variables") or {}):
            self._note(n, f"{_describe(s)}; now it returned {dict(got or {})}")
        return got

    def _note(self, n: int, what: str) -> None:
        if self.mismatch is None:
            self.mismatch = self.fail(n, what)

    def apply(self, i: int, s: Mapping[str, Any]) -> None:
        kit, iid, node = self.kit, self.instance_id or "", s["node"]
        kind = s["kind"]
        if kind == "set_variables":
            kit.engine.set_variables(iid, dict(s["variables"]), by="replay")
            kit.run()
            return
        if kind == "timer":
            pending = [t for t in kit.engine.timers(iid) if t.node_id == node]
            if not pending:
                raise self.fail(i, f"{_describe(s)}; the replay has no timer waiting there")
            due = datetime.fromisoformat(s["due"])
            target = max(self.replay_start + (due - self.recorded_start), kit.clock.now)
            kit.advance_to(target)
            return
        variables = dict(s.get("variables") or {})
        if kind == "signal":  # a broadcast: the path tells whether it was caught
            kit.signal(s["name"], variables)
            return
        if kind == "message":  # at a catch event, a receive task or a boundary event
            try:
                kit.correlate(
                    s["name"], variables, correlation_key=s.get("correlation_key"), instance=iid
                )
            except MessageCorrelationError as exc:
                raise self.fail(i, f"{_describe(s)}; the replay did not take it: {exc}") from None
            return
        if node not in kit.waiting_at(iid):
            where = ", ".join(kit.waiting_at(iid)) or "nowhere (it ended)"
            raise self.fail(i, f"{_describe(s)}; the replay waits at {where}")
        if kind in ("user_task", "external_task"):
            kit.complete(iid, node, variables)
        elif kind == "external_error":
            kit.throw_error(iid, node, s["code"], s.get("message"), variables)
        elif kind == "external_failure":
            kit.fail(iid, node, s.get("message") or "failed", retries=s.get("retries"))
        else:
            raise ValueError(f"step {i}: unknown kind {kind!r} in the case file")

    def compare_path(self) -> None:
        assert self.instance_id is not None
        events = self.kit.engine.history(self.instance_id)
        now = Counter(e.node_id for e in events if e.type == "token_completed" and e.node_id)
        then_path = list(self.data["path"])
        then = Counter(then_path)
        # Counted, not ordered: parallel branches may finish in another order.
        for node in [*then_path, *now]:
            if then[node] != now[node]:
                raise self.fail(
                    len(self.steps) + 1,
                    f"the trail passed '{node}' {then[node]} times, the replay {now[node]} "
                    f"(then: {' -> '.join(then_path)})",
                )
        state = self.kit.instance(self.instance_id).state.value
        if state != self.data["end"]["state"]:
            raise self.fail(
                len(self.steps) + 1,
                f"the trail ended {self.data['end']['state']}, the replay is {state}",
            )
