"""Build a process in Python: explicit nodes, explicit flows, the same model as BPMN.

>>> from bpm.builder import Process
>>> model = (
...     Process("order", name="Order")
...     .start("start")
...     .service_task("validate", handler="validate-order")
...     .exclusive("amount_check")
...     .parallel("fork")
...     .service_task("reserve", handler="reserve-stock")
...     .service_task("charge", handler="charge-payment")
...     .parallel("join")
...     .service_task("ship", handler="ship-order")
...     .end("end")
...     .sequence("start", "validate", "amount_check")
...     .flow("amount_check", "fork", condition="amount > 100", id="big")
...     .flow("amount_check", "ship", id="small", default=True)
...     .flow("fork", "reserve").flow("fork", "charge")
...     .flow("reserve", "join").flow("charge", "join")
...     .sequence("join", "ship", "end")
...     .build()
... )

Every method returns the builder. Mistakes (a duplicate id, a timer with two specs, a
flow to a missing node...) are collected and raised together by :meth:`Process.build`
as one :class:`~bpm.errors.DeploymentError`, exactly like a rejected BPMN file.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any, Self

import isodate

from bpm.bpmn.retryspec import RetrySpecError, parse_retry
from bpm.builder_compensation import CompensationMethods
from bpm.builder_events import EventMethods
from bpm.builder_messages import MessageMethods
from bpm.builder_scopes import Mappings, in_container
from bpm.errors import DeploymentError, ExpressionError, Problem
from bpm.expressions import to_cel
from bpm.handlers import CELERY_TASK, RESULT_VARIABLE
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from bpm.model.validate import check_model
from bpm.retry import RetryPolicy
from bpm.scripts import PYTHON_SCRIPT, is_python
from bpm.scripts.conditions import PYTHON_CONDITION
from bpm.timeexpr import TimerError, parse_duration

__all__ = ["Process"]

Duration = str | timedelta | float
"""An ISO 8601 duration (``"PT5M"``), a ``timedelta`` or seconds; ``"${var}"`` for timers."""


def _duration_text(value: Duration) -> str:
    if isinstance(value, str):
        return value
    delta = value if isinstance(value, timedelta) else timedelta(seconds=value)
    return str(isodate.duration_isoformat(delta))


def _date_text(value: str | datetime) -> str:
    return value if isinstance(value, str) else value.isoformat()


class Process(MessageMethods, EventMethods, CompensationMethods):
    """A fluent builder of a :class:`ProcessModel` with key ``key``."""

    def __init__(self, key: str, *, name: str | None = None, version_tag: str | None = None):
        self.key = key
        self.name = name
        self.version_tag = version_tag
        self._nodes: dict[str, n.Node] = {}
        self._flows: list[n.Flow] = []
        self._defaults: dict[str, str] = {}  # gateway/activity id -> flow id, flow(default=True)
        self._problems: list[Problem] = []
        self._containers: list[str] = []  # the sub-processes being built, innermost last
        self._origins: dict[str, str] = {}  # element id -> the call that made it, for problems
        self._listens: list[tuple[str, str, str]] = []  # (element id, event, handler): listen()

    # -- nodes ---------------------------------------------------------------------------

    def _add(self, node: n.Node) -> Self:
        node = in_container(node, self._containers)
        if not node.id:
            self._problems.append(Problem("a node needs a non-empty id"))
        elif node.id in self._nodes or any(f.id == node.id for f in self._flows):
            self._problems.append(Problem(f"id '{node.id}' is used twice: rename one", node.id))
        else:
            self._nodes[node.id] = node
            self._origins[node.id] = f".{_verb()}({node.id!r})"
        return self

    def start(
        self,
        id: str,
        *,
        name: str | None = None,
        duration: Duration | None = None,
        date: str | datetime | None = None,
        cycle: str | None = None,
        error: bool | str | None = None,
        interrupting: bool = True,
        escalation: bool | str | None = None,
        code_variable: str | None = None,
        message_variable: str | None = None,
    ) -> Self:
        """A start event: none; with a timer (``duration``, ``date`` or ``cycle``: the
        process then also starts on that schedule, an event sub-process when it is due);
        or, starting an event sub-process, ``error`` or ``escalation`` (True: every one,
        or a code; ``code_variable`` / ``message_variable`` receive what was caught).
        ``interrupting=False``: an event sub-process that runs beside its scope."""
        event = self._start_event(
            id,
            name,
            duration=duration,
            date=date,
            cycle=cycle,
            error=error,
            interrupting=interrupting,
        )
        if escalation is not None and escalation is not False:
            if event.is_trigger:
                self._problems.append(Problem("a start event has one trigger: keep one", id))
            code = None if escalation is True else str(escalation)
            event = dataclasses.replace(event, escalation_start=True, escalation_code=code)
        return self._add(
            dataclasses.replace(
                event, code_variable=code_variable, message_variable=message_variable
            )
        )

    def end(
        self,
        id: str,
        *,
        terminate: bool = False,
        error_code: str | None = None,
        name: str | None = None,
        escalation_code: str | None = None,
    ) -> Self:
        """An end event; ``terminate`` ends the whole instance, ``error_code`` throws an
        error, ``escalation_code`` an escalation."""
        if sum((terminate, error_code is not None, escalation_code is not None)) > 1:
            self._problems.append(
                Problem("an end event does one thing: terminate, an error or an escalation", id)
            )
        kind = n.EndKind.TERMINATE if terminate else n.EndKind.NONE
        if error_code is not None:
            kind = n.EndKind.ERROR
        elif escalation_code is not None:
            kind = n.EndKind.ESCALATION
        return self._add(
            n.EndEvent(id, name, kind=kind, error_code=error_code, escalation_code=escalation_code)
        )

    def service_task(
        self,
        id: str,
        *,
        handler: str | None = None,
        topic: str | None = None,
        task: Any = None,
        result: str | None = None,
        retry: RetryPolicy | str | None = None,
        priority: int = 0,
        lease: Duration | None = None,
        properties: Mapping[str, str] | None = None,
        name: str | None = None,
        for_each: str | None = None,
        as_: str | None = None,
        parallel: bool = True,
        collect: str | None = None,
        output: str | None = None,
        times: int | str | None = None,
        until: str | None = None,
        inputs: Mappings | None = None,
        outputs: Mappings | None = None,
        compensate_with: str | None = None,
        compensate_topic: str | None = None,
        compensate_retry: RetryPolicy | None = None,
        for_compensation: bool = False,
        listeners: Iterable[tuple[str, str]] = (),
        **loop: Any,
    ) -> Self:
        """Inline work (``handler``, run by a Celery worker) or external work (``topic``).

        ``listeners``: execution listeners, ``[("start", "audit"), ("end", "notify")]``:
        the handlers run by the worker before and after this task's own (inline tasks
        only; ``bpm.engine.listeners``).

        ``compensate_with`` names the inline handler that undoes it (``compensate_topic``:
        an external one; ``compensate_retry``: its policy): compensation runs it when the
        task has completed (see ``docs/compensation.md``). ``for_compensation=True``
        makes this task a compensation handler, named by :meth:`boundary_compensation`.

        ``task``: a Celery task (or its name) run inline as the handler, its arguments
        read from the variables of their names, its retry settings the step's policy
        (``docs/celery.md``); ``result``: the variable a result that is not a mapping goes
        to (default: the task id).

        ``retry`` is a :class:`RetryPolicy` or its text form (``"fixed(3, PT2S)"``);
        ``lease`` is how long a worker may hold the task before it is given to another.
        ``for_each`` ... ``until`` make it multi-instance and ``inputs`` / ``outputs``
        map variables (see :meth:`ScopeMethods._activity`): ``for_each="items",
        as_="item", parallel=True, collect="results"`` runs it once per item;
        ``loop_while``, ``test_before``, ``loop_maximum`` (``**loop``) make it a standard
        loop.
        """
        policy: RetryPolicy | None = None
        if isinstance(retry, str):
            try:
                policy = parse_retry(retry)
            except RetrySpecError as exc:
                self._problems.append(Problem(str(exc), id))
        else:
            policy = retry
        lease_seconds: float | None = None
        if lease is not None:
            try:
                lease_seconds = parse_duration(_duration_text(lease)).total_seconds()
            except TimerError as exc:
                self._problems.append(Problem(f"lease: {exc}", id))
        props = dict(properties or {})
        if task is not None:
            task_name = task if isinstance(task, str) else getattr(task, "name", None)
            if not task_name or not isinstance(task_name, str):
                self._problems.append(Problem("task= takes a Celery task or its name", id))
            elif handler is not None or topic is not None:
                self._problems.append(Problem("give one of handler=, topic= and task=", id))
            else:
                handler = CELERY_TASK + task_name
        if result is not None:
            props[RESULT_VARIABLE] = result
        node = n.ServiceTask(
            id,
            name,
            handler=handler,
            topic=topic,
            retry=policy,
            priority=priority,
            properties=props,
            lease_seconds=lease_seconds,
            for_compensation=for_compensation,
            listeners=self._listeners(id, listeners, inline=topic is None),
            **self._activity(
                id,
                for_each=for_each,
                as_=as_,
                parallel=parallel,
                collect=collect,
                output=output,
                times=times,
                until=until,
                inputs=inputs,
                outputs=outputs,
                **loop,
            ),
        )
        self._add(node)
        self._compensate_with(id, compensate_with, compensate_topic, compensate_retry)
        return self

    def user_task(
        self,
        id: str,
        *,
        assignee: str | None = None,
        candidate_groups: Iterable[str] = (),
        properties: Mapping[str, str] | None = None,
        name: str | None = None,
        for_compensation: bool = False,
        **options: Any,
    ) -> Self:
        """A task for a person: it waits until completed through the API. Takes the
        multi-instance and mapping options of :meth:`service_task`;
        ``for_compensation=True`` makes it a compensation handler."""
        task = n.UserTask(
            id,
            name,
            assignee=assignee,
            candidate_groups=tuple(candidate_groups),
            properties=dict(properties or {}),
            for_compensation=for_compensation,
            **self._activity(id, **options),
        )
        return self._add(task)

    def business_rule_task(
        self,
        id: str,
        *,
        decision: str,
        result_variable: str | None = None,
        map_result: str = "resultList",
        binding: str = "latest",
        version: int | str | None = None,
        name: str | None = None,
        **options: Any,
    ) -> Self:
        """Evaluate the deployed DMN decision ``decision`` (its id, or ``${var}``) in the
        step's own transaction and write the result to ``result_variable``, mapped by
        ``map_result``: ``singleEntry``, ``singleResult``, ``collectEntries``,
        ``resultList`` (Camunda 7's) or ``value`` (the decision's value, as Zeebe does).

        ``binding`` picks the version: ``latest``, ``deployment`` (the one deployed with
        this process), ``version`` (``version=2``) or ``versionTag`` (``version="v1"``).
        Takes the multi-instance and mapping options of :meth:`service_task`."""
        found = next((b for b in n.CallBinding if b.value == binding), None)
        if found is None:
            self._problems.append(
                Problem(
                    f"binding '{binding}' of '{id}' is not one of latest, deployment, "
                    "version, versionTag",
                    id,
                )
            )
            found = n.CallBinding.LATEST
        if version is not None and found not in (n.CallBinding.VERSION, n.CallBinding.VERSION_TAG):
            self._problems.append(
                Problem(f"version= on '{id}' needs binding='version' or 'versionTag'", id)
            )
        task = n.DecisionTask(
            id,
            name,
            decision=decision,
            binding=found,
            version=None if version is None else str(version),
            result_variable=result_variable,
            map_result=map_result,
            **self._activity(id, **options),
        )
        return self._add(task)

    def _listeners(
        self, id: str, listeners: Iterable[tuple[str, str]], *, inline: bool
    ) -> tuple[n.Listener, ...]:
        out = []
        for event, handler in listeners:
            if event not in ("start", "end"):
                self._problems.append(
                    Problem(f"listener event '{event}' is not run: use 'start' or 'end'", id)
                )
            else:  # an inline task's step runs them; an external task's, a step of their own
                out.append(n.Listener(event, handler=handler))
        return tuple(out)

    def script_task(
        self,
        id: str,
        script: str,
        *,
        language: str = "cel",
        result: str | None = None,
        name: str | None = None,
        listeners: Iterable[tuple[str, str]] = (),
        **options: Any,
    ) -> Self:
        """A script task. ``language="cel"`` is evaluated by the engine, its value stored
        in ``result`` (if given); ``language="python"`` runs sandboxed on a worker
        (:mod:`bpm.scripts`: the variables are names, what it assigns is set, ``result``
        gets its last expression's value); any other language runs as the inline handler
        named by the task id, which finds the script text on ``ctx.script``. Takes the
        multi-instance and mapping options of :meth:`service_task`."""
        cel = language.strip().lower() == "cel"
        python = is_python(language)
        if result is not None and not (cel or python):
            self._problems.append(
                Problem(f"result= is for CEL and Python scripts: return {{'{result}': value}}", id)
            )
        handler = None if cel else PYTHON_SCRIPT if python else id
        node = n.ScriptTask(
            id,
            name,
            handler=handler,
            script=script,
            script_format=language,
            result_variable=result if cel or python else None,
            properties={RESULT_VARIABLE: result} if python and result else {},
            listeners=self._listeners(id, listeners, inline=not cel),
            **self._activity(id, **options),
        )
        return self._add(node)

    def task(self, id: str, *, name: str | None = None, **options: Any) -> Self:
        """A task with nothing for the engine to do (``bpmn:task``); takes the
        multi-instance and mapping options of :meth:`service_task`."""
        return self._add(n.PassThrough(id, name, **self._activity(id, **options)))

    def exclusive(self, id: str, *, default: str | None = None, name: str | None = None) -> Self:
        """An exclusive gateway; ``default`` is the id of the flow taken when none matches."""
        return self._add(n.ExclusiveGateway(id, name, default_flow=default))

    def parallel(self, id: str, *, name: str | None = None) -> Self:
        """A parallel gateway: forks to every outgoing flow, joins all incoming ones."""
        return self._add(n.ParallelGateway(id, name))

    def _timer_spec(
        self,
        id: str,
        duration: Duration | None,
        date: str | datetime | None,
        cycle: str | None = None,
    ) -> n.TimerSpec | None:
        given = [
            (kind, text)
            for kind, text in (
                (n.TimerKind.DURATION, None if duration is None else _duration_text(duration)),
                (n.TimerKind.DATE, None if date is None else _date_text(date)),
                (n.TimerKind.CYCLE, cycle),
            )
            if text is not None
        ]
        if len(given) != 1:
            self._problems.append(
                Problem(f"timer '{id}' needs exactly one of duration, date or cycle", id)
            )
            return None
        return n.TimerSpec(*given[0])

    def timer(
        self,
        id: str,
        *,
        duration: Duration | None = None,
        date: str | datetime | None = None,
        name: str | None = None,
    ) -> Self:
        """An intermediate timer catch event: wait ``duration``, or until ``date``."""
        return self._add(n.TimerCatchEvent(id, name, timer=self._timer_spec(id, duration, date)))

    def wait_until(self, id: str, deadline_variable: str, *, name: str | None = None) -> Self:
        """A timer that waits until the date held by variable ``deadline_variable``."""
        spec = n.TimerSpec(n.TimerKind.DATE, f"${{{deadline_variable}}}")
        return self._add(n.TimerCatchEvent(id, name, timer=spec))

    def boundary_timer(
        self,
        id: str,
        attached_to: str,
        *,
        duration: Duration | None = None,
        date: str | datetime | None = None,
        cycle: str | None = None,
        interrupting: bool = True,
        name: str | None = None,
    ) -> Self:
        """A timer on task ``attached_to``; interrupting timers cancel the task."""
        spec = self._timer_spec(id, duration, date, cycle)
        if spec is None:
            return self
        event = n.BoundaryEvent(
            id, name, attached_to=attached_to, cancel_activity=interrupting, timer=spec
        )
        return self._add(event)

    def boundary_error(
        self,
        id: str,
        attached_to: str,
        *,
        error_code: str | None = None,
        name: str | None = None,
        error_code_variable: str | None = None,
        error_message_variable: str | None = None,
    ) -> Self:
        """Catch errors of task ``attached_to``: one ``error_code``, or every error.
        ``error_code_variable`` / ``error_message_variable`` receive the caught code and
        message (besides ``error_code`` and ``error_message``, always set)."""
        return self._add(
            n.BoundaryEvent(
                id,
                name,
                attached_to=attached_to,
                error_code=error_code,
                code_variable=error_code_variable,
                message_variable=error_message_variable,
            )
        )

    # -- flows ---------------------------------------------------------------------------

    def flow(
        self,
        source: str,
        target: str,
        condition: str | None = None,
        *,
        id: str | None = None,
        default: bool = False,
        name: str | None = None,
        language: str | None = None,
    ) -> Self:
        """A sequence flow; ``condition`` is CEL (or ``${JUEL}`` / ``=FEEL``, translated),
        or Python with ``language="python"`` (evaluated in the script sandbox).

        Without ``id`` the flow is named ``Flow_<source>_<target>``. ``default=True``
        makes it the default flow of its source (an exclusive or inclusive gateway, or an
        activity: taken when none of its conditional flows is true).
        """
        flow_id = id or self._free_id(f"Flow_{source}_{target}")
        if flow_id in self._nodes or any(f.id == flow_id for f in self._flows):
            self._problems.append(Problem(f"id '{flow_id}' is used twice: rename one", flow_id))
            return self
        text: str | None = None
        if condition is not None and condition.strip() and is_python(language):
            text = PYTHON_CONDITION + condition.strip()  # compiled by check_model
        elif condition is not None and condition.strip():
            try:
                text = to_cel(condition)  # CEL, ${JUEL} or =FEEL, as in BPMN files
            except ExpressionError as exc:
                self._problems.append(Problem(f"flow '{flow_id}': {exc}", flow_id))
        self._flows.append(n.Flow(flow_id, source, target, text or None, name))
        self._origins[flow_id] = f".flow({source!r}, {target!r})"
        if _verb(past="flow") == "sequence":
            self._origins[flow_id] += " of .sequence(...)"
        if default:
            if source in self._defaults:
                self._problems.append(Problem(f"'{source}' has two default flows", flow_id))
            self._defaults[source] = flow_id
        return self

    def sequence(self, *ids: str) -> Self:
        """Flows between consecutive ids: ``sequence("a", "b", "c")`` is a -> b -> c."""
        for source, target in pairwise(ids):
            self.flow(source, target)
        return self

    def _free_id(self, base: str) -> str:
        taken = set(self._nodes) | {f.id for f in self._flows}
        candidate, i = base, 2
        while candidate in taken:
            candidate, i = f"{base}_{i}", i + 1
        return candidate

    # -- result --------------------------------------------------------------------------

    def listen(self, id: str, event: str, handler: str) -> Self:
        """An execution listener: the inline handler ``handler`` runs on ``event`` of the
        element ``id`` (``start``, ``end``), of the flow ``id`` (``take``) or, with the
        process's key, of the process (``start``, ``end``); see ``bpm.engine.listeners``.
        Calls add up, in order, after those given to a verb's ``listeners=``."""
        self._listens.append((id, event, handler))
        return self

    def _apply_listens(
        self, nodes: dict[str, n.Node], problems: list[Problem]
    ) -> tuple[tuple[n.Flow, ...], tuple[n.Listener, ...]]:
        flows = {f.id: f for f in self._flows}
        own: list[n.Listener] = []
        for id, event, handler in self._listens:
            at_flow = id in flows and id not in nodes
            wanted = ("take",) if at_flow else ("start", "end")
            if event not in wanted:
                what = "a flow" if at_flow else "an element or the process"
                problems.append(
                    Problem(f"listener event '{event}' of {what} is not run: use {wanted}", id)
                )
            elif id in nodes:
                node = nodes[id]
                nodes[id] = dataclasses.replace(
                    node, listeners=(*node.listeners, n.Listener(event, handler=handler))
                )
            elif at_flow:
                flow = flows[id]
                flows[id] = dataclasses.replace(
                    flow, listeners=(*flow.listeners, n.Listener(event, handler=handler))
                )
            elif id == self.key:
                own.append(n.Listener(event, handler=handler))
            else:
                problems.append(Problem(f"listen('{id}', ...) names no element or flow", id))
        return tuple(flows[f.id] for f in self._flows), tuple(own)

    def build(self) -> ProcessModel:
        """The validated :class:`ProcessModel`, or a :class:`DeploymentError` listing all."""
        problems = list(self._problems)
        nodes = dict(self._nodes)
        flows, listeners = self._apply_listens(nodes, problems)
        for gateway_id, flow_id in self._defaults.items():
            node = nodes.get(gateway_id)
            # Whatever kind of node has a default flow (gateways that choose, activities)
            if node is None or "default_flow" not in {f.name for f in dataclasses.fields(node)}:
                problems.append(
                    Problem(
                        f"flow '{flow_id}' is marked default but '{gateway_id}' is not an "
                        "exclusive or inclusive gateway or an activity",
                        flow_id,
                    )
                )
            elif getattr(node, "default_flow", None) not in (None, flow_id):
                problems.append(
                    Problem(f"gateway '{gateway_id}' has two default flows", gateway_id)
                )
            else:
                marked: dict[str, Any] = {"default_flow": flow_id}
                nodes[gateway_id] = dataclasses.replace(node, **marked)
        model = ProcessModel(
            key=self.key,
            nodes=nodes,
            flows=flows,
            name=self.name,
            version_tag=self.version_tag,
            listeners=listeners,
        )
        found, warnings = check_model(model)
        problems += found
        if not self.key:
            problems.insert(0, Problem("the process needs a non-empty key"))
        if problems:
            raise DeploymentError(
                [self._in_builder_terms(p) for p in problems], f"process '{self.key}'"
            )
        return dataclasses.replace(model, warnings=tuple(warnings))

    to_model = build
    """Alias of :meth:`build`."""

    def _in_builder_terms(self, problem: Problem) -> Problem:
        """The problem named by the builder call that made its element, and its advice
        in the builder's words where the validator speaks of XML."""
        message = problem.message
        for xml, words in _XML_ADVICE:
            message = xml.sub(words, message)
        origin = self._origins.get(problem.element_id or "")
        return dataclasses.replace(problem, message=message, origin=origin)


# What the model validator advises in BPMN XML terms, said in the builder's (patterns).
_XML_ADVICE = tuple(
    (re.compile(pattern), words)
    for pattern, words in (
        (
            r"fix the targetRef or add the missing element",
            "fix the flow's target or add that node (e.g. .service_task(id, handler=...))",
        ),
        (r"fix the sourceRef or add the missing element", "fix the flow's source or add that node"),
        (
            r"set attachedToRef to a task, sub-process or call activity",
            "pass attached_to= the id of a task, sub-process or call activity",
        ),
        (
            r'set bpm:handler="name" or camunda:type="external" camunda:topic="topic"',
            'pass handler="name" (run inline) or topic="topic" (an external worker)',
        ),
        (r"has no start event: add a startEvent", "has no start event: add .start(id)"),
        (r"add timeDuration, timeDate or timeCycle", "pass duration=, date= or cycle="),
        (r"has activityRef '([^']*)'", r"has activity='\1'"),
        (r"or remove activityRef to compensate", "or leave activity= out to compensate"),
        (
            r"set camunda:decisionRef \(or zeebe:calledDecision decisionId\) to the id",
            "pass decision= the id",
        ),
        (r" \(camunda:mapDecisionResult\)", " (map_result=)"),
        (
            r"the version binding needs camunda:decisionRefVersion, a whole number",
            'binding="version" needs version= a whole number',
        ),
        (r"set camunda:decisionRefVersionTag", "pass version= the tag"),
        (
            r'add an intermediate catch event with <linkEventDefinition name="([^"]*)"/> there',
            r'add .link_catch(id, "\1") there',
        ),
        (r'reference a <bpmn:(\w+) name="\.\.\."> with a name', r"give the \1 a name"),
    )
)


def _verb(past: str | None = None) -> str:
    """The public builder method being called (the first one up the stack, ``past`` that
    one: flow() called by sequence())."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_name
        if name in _VERBS and name != past:
            return name
        frame = frame.f_back  # type: ignore[assignment]
    return "add"


_VERBS = frozenset(
    name for name in dir(Process) if not name.startswith("_") and name not in ("build", "to_model")
)
