"""Node and flow values of a process definition. Pure data: no I/O, no behaviour.

The graph is flat: a node inside a sub-process names it in ``container`` (None: the
process itself), so every node is found by its id wherever it sits.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

from bpm.retry import RetryPolicy
from bpm.scripts import PYTHON_SCRIPT

SPARSE: Mapping[str, Any] = {"sparse": True}
"""Field metadata: left out of the model's JSON when it holds its default, so models that
do not use the field keep the checksum they had before it existed."""


@dataclass(frozen=True)
class Node:
    """Common fields of every flow node. ``line`` points into the BPMN source, if any.

    Every concrete node class says ``json_name``, its name in the model's JSON (stored
    definitions hold it: never rename one), and ``tag``, the BPMN element it stands for."""

    json_name: ClassVar[str] = ""
    tag: ClassVar[str] = ""
    holds_nodes: ClassVar[bool] = False
    """Whether nodes stand inside it (their ``container``): embedded and event
    sub-processes, drawn expanded, parsed with their members."""
    joins_late: ClassVar[bool] = False
    """Whether it may join tokens decided once the walk has nothing else to move (the
    registry's release hooks): a process holding one needs the walker's scope pass."""
    conditional_fork: ClassVar[bool] = False
    """Whether its outgoing flows may carry conditions its kind evaluates (and checks)."""

    id: str
    name: str | None = None
    line: int | None = field(default=None, compare=False)  # where, not what: not compared
    container: str | None = field(default=None, metadata=SPARSE)
    """The sub-process (embedded or event) this node is drawn in; None: the process."""
    listeners: tuple[Listener, ...] = field(default=(), metadata=SPARSE)
    """Execution listeners, in document order (see :mod:`bpm.engine.listeners`): an
    inline task runs them in its own step; on any other node a worker runs them in a
    step of their own (:mod:`bpm.runtime.listening`)."""

    @property
    def waits(self) -> bool:
        """True when a token arriving here stops until something outside happens."""
        return False

    @property
    def runs_listeners(self) -> bool:
        """Whether the node's own step runs its listeners (an inline task's worker does)."""
        return False

    @property
    def listens_first(self) -> tuple[Listener, ...]:
        """Listeners a worker runs before a token may enter this node (start execution
        listeners, a user task's create listeners), when the node's own work is not run by
        a worker (an inline task runs its listeners itself)."""
        if self.runs_listeners:
            return ()
        return tuple(x for x in self.listeners if x.event in ("start", "create"))

    @property
    def listens_last(self) -> tuple[Listener, ...]:
        """Listeners a worker runs before a token leaves this node (end execution
        listeners), when the node's own work is not run by a worker."""
        if self.runs_listeners:
            return ()
        return tuple(x for x in self.listeners if x.event == "end")

    @property
    def listens_to_task(self) -> tuple[Listener, ...]:
        """A user task's listeners of the task's later events (``assignment``, ``update``,
        ``complete``, ``delete``, ``timeout``, and its ``end`` execution listeners), run on a
        worker while the task is open (:mod:`bpm.engine.task_listeners`)."""
        return ()

    @property
    def host(self) -> str | None:
        """The activity this node is attached to (a boundary event's); None: it stands on
        its own in the flow. The cockpit's layout and the runtime ask this, not the class."""
        return None


@dataclass(frozen=True)
class FormFieldSpec:
    """One field of a generated form (``camunda:formField``, Flowable's
    ``formProperty``): its variable ``id``, ``type`` (``string``, ``long``, ``boolean``,
    ``date``, ``enum``), ``constraints`` as (name, config) pairs (``required``, ``min``,
    ``max``, ``minlength``, ``maxlength``, ``readonly``) and ``values`` (id, name) of an
    enum. Texts as written in the model; ``${name}`` defaults read a variable."""

    id: str
    type: str = "string"
    label: str | None = None
    default: str | None = None
    date_pattern: str | None = None
    constraints: tuple[tuple[str, str | None], ...] = ()
    values: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FormFieldSpec:
        return cls(
            id=data["id"],
            type=data.get("type", "string"),
            label=data.get("label"),
            default=data.get("default"),
            date_pattern=data.get("date_pattern"),
            constraints=tuple((c[0], c[1]) for c in data.get("constraints", ())),
            values=tuple((v[0], v[1]) for v in data.get("values", ())),
        )


@dataclass(frozen=True)
class StartEvent(Node):
    """Where an instance (or a sub-process) starts. A ``timer`` start event of the process
    also starts instances on a schedule (beat); without one it is a none start event.

    In an event sub-process the start event is its trigger: a ``timer``, or an error
    (``error_start``; ``error_code`` None catches every error). ``interrupting`` says
    whether it cancels the rest of the enclosing scope (errors always do)."""

    json_name: ClassVar[str] = "start_event"
    tag: ClassVar[str] = "startEvent"

    timer: TimerSpec | None = None
    error_start: bool = field(default=False, metadata=SPARSE)
    error_code: str | None = field(default=None, metadata=SPARSE)
    interrupting: bool = field(default=True, metadata=SPARSE)
    event: EventRef | None = field(default=None, metadata=SPARSE)
    """A message or signal start: it starts instances (or its event sub-process) when
    the message is correlated or the signal broadcast."""
    escalation_start: bool = field(default=False, metadata=SPARSE)
    """Starts its event sub-process on an escalation (``escalation_code`` None: any)."""
    escalation_code: str | None = field(default=None, metadata=SPARSE)
    code_variable: str | None = field(default=None, metadata=SPARSE)
    """Receives the caught error or escalation code (``camunda:errorCodeVariable``)."""
    message_variable: str | None = field(default=None, metadata=SPARSE)
    """Receives the caught error's message (``camunda:errorMessageVariable``)."""
    compensation_start: bool = field(default=False, metadata=SPARSE)
    """Starts a compensation event sub-process: it runs when its sub-process is
    compensated, instead of compensating the activities inside it."""
    form_key: str | None = field(default=None, metadata=SPARSE)
    """The start form (``camunda:formKey``) of a process's none start event."""
    form_ref: Mapping[str, str] = field(default_factory=dict, metadata=SPARSE)
    """Its Camunda Forms reference: ``key``, ``binding``, ``version``."""
    form_fields: tuple[FormFieldSpec, ...] = field(default=(), metadata=SPARSE)
    """Its generated start form (``camunda:formData``)."""

    @property
    def is_trigger(self) -> bool:
        """Whether an event (not a token arriving) starts here: a timer, error, escalation,
        message, signal or compensation."""
        return (
            self.timer is not None
            or self.error_start
            or self.escalation_start
            or self.event is not None
            or self.compensation_start
        )


class EndKind(StrEnum):
    NONE = "none"
    TERMINATE = "terminate"
    ERROR = "error"
    ESCALATION = "escalation"
    COMPENSATE = "compensate"


@dataclass(frozen=True)
class EndEvent(Node):
    """``activity_ref`` (a compensation end event): the one activity to compensate; None
    compensates every completed activity of the scope."""

    json_name: ClassVar[str] = "end_event"
    tag: ClassVar[str] = "endEvent"

    kind: EndKind = EndKind.NONE
    error_code: str | None = None
    escalation_code: str | None = field(default=None, metadata=SPARSE)
    activity_ref: str | None = field(default=None, metadata=SPARSE)


@dataclass(frozen=True)
class VariableMapping:
    """``target`` receives the value of the CEL expression ``source``."""

    target: str
    source: str


@dataclass(frozen=True)
class Listener:
    """An execution listener (``kind="execution"``: events ``start``, ``end``) or a task listener
    (``kind="task"``: ``create``, ``assignment``, ``update``, ``complete``, ``delete``,
    ``timeout``) of an activity: the inline handler ``handler`` (``camunda:class``,
    ``expression``, ``delegateExpression``, Zeebe's job ``type``), or a sandboxed Python ``script``
    (``camunda:script scriptFormat="python"``). It runs on the worker, in the step's attempt: start
    listeners before the activity's work, end listeners after it; a user task's task listeners in
    a step of their own (:mod:`bpm.engine.task_listeners`). ``timer``: when a ``timeout`` task
    listener fires, counted from the task's creation; ``retries``: the attempts of its step
    (Zeebe's ``retries``; None: the default policy)."""

    event: str
    handler: str | None = None
    script: str | None = None
    kind: str = "execution"
    timer: TimerSpec | None = None
    retries: int | None = None

    @property
    def label(self) -> str:
        """How the trail and errors name it: ``start listener 'audit'``."""
        what = f"'{self.handler}'" if self.handler else "(Python script)"
        return f"{self.event} listener {what}"

    def to_dict(self) -> dict[str, Any]:
        """Its JSON in a stored model: the fields added later only when set, so models
        stored before keep their checksum."""
        out: dict[str, Any] = {
            "event": self.event,
            "handler": self.handler,
            "script": self.script,
            "kind": self.kind,
        }
        if self.timer is not None:
            out["timer"] = {"kind": self.timer.kind.value, "expression": self.timer.expression}
        if self.retries is not None:
            out["retries"] = self.retries
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Listener:
        timer = data.get("timer")
        return cls(
            data["event"],
            data.get("handler"),
            data.get("script"),
            data.get("kind", "execution"),
            TimerSpec(TimerKind(timer["kind"]), timer["expression"]) if timer else None,
            data.get("retries"),
        )


@dataclass(frozen=True)
class MultiInstance:
    """A multi-instance marker: run the activity once per item (or ``cardinality`` times).

    Every expression is CEL over the variables the activity sees. Each inner instance has
    the local variables ``loopCounter`` (0-based) and ``element`` (the item); the body has
    ``nrOfInstances``, ``nrOfCompletedInstances``, ``nrOfActiveInstances`` and, when
    ``output_collection`` is set, that list: one entry per item, in input order, the value
    of ``output_element`` (or, without one, the inner instance's local variables).
    """

    parallel: bool = True
    cardinality: str | None = None
    collection: str | None = None
    element: str | None = None
    output_collection: str | None = None
    output_element: str | None = None
    completion: str | None = None


@dataclass(frozen=True)
class StandardLoop(MultiInstance):
    """A standard loop marker (``standardLoopCharacteristics``, BPMN 2.0.2 10.3.8): run
    the activity again and again, one iteration at a time, while ``condition`` (CEL over
    the variables, with ``loopCounter`` the iterations done so far) holds, tested before
    each iteration (``test_before``) or after it, at most ``maximum`` times.

    It runs in the scopes a sequential multi-instance activity has (a body, one inner
    instance per iteration with the local ``loopCounter``), hence the base class; the
    multi-instance fields are unused (``bpm.kinds.standard_loop``)."""

    parallel: bool = False
    condition: str | None = None
    test_before: bool = False
    maximum: int | None = None


@dataclass(frozen=True)
class Activity(Node):
    """What every activity may carry: a multi-instance marker and variable mappings
    (``inputs`` become local variables of the activity; ``outputs`` are written to the
    enclosing scope when it completes)."""

    loop: MultiInstance | None = field(default=None, metadata=SPARSE)
    """A multi-instance marker, or a :class:`StandardLoop`."""
    inputs: tuple[VariableMapping, ...] = field(default=(), metadata=SPARSE)
    outputs: tuple[VariableMapping, ...] = field(default=(), metadata=SPARSE)
    for_compensation: bool = field(default=False, metadata=SPARSE)
    """A compensation handler (``isForCompensation``): run only by compensation, never
    reached by a sequence flow."""
    default_flow: str | None = field(default=None, metadata=SPARSE)
    """The outgoing flow taken when the activity completes and none of its conditional
    flows is true (BPMN ``default``); see :attr:`ProcessModel.branching`."""

    @property
    def has_mappings(self) -> bool:
        return bool(self.inputs or self.outputs)


@dataclass(frozen=True)
class ServiceTask(Activity):
    """Inline (``handler``) or external (``topic``) work. Exactly one of the two is set."""

    json_name: ClassVar[str] = "service_task"
    tag: ClassVar[str] = "serviceTask"

    handler: str | None = None
    topic: str | None = None
    retry: RetryPolicy | None = None
    priority: int = 0
    properties: Mapping[str, str] = field(default_factory=dict)
    lease_seconds: float | None = None

    @property
    def is_external(self) -> bool:
        return self.topic is not None

    @property
    def runs_listeners(self) -> bool:
        return not self.is_external  # an inline task runs them in its own step

    @property
    def waits(self) -> bool:
        return True


@dataclass(frozen=True)
class ScriptTask(ServiceTask):
    """A script task. ``cel`` scripts (and ``feel`` ones, Zeebe's ``=...``) are evaluated
    by the engine (``result_variable`` receives the value); ``python`` ones (handler
    ``bpm:python``) run sandboxed on a worker (:mod:`bpm.scripts`); any other language runs
    as the inline handler ``handler`` (the task id), which finds the script text on
    ``ctx.script``.
    """

    json_name: ClassVar[str] = "script_task"
    tag: ClassVar[str] = "scriptTask"

    script: str | None = None
    script_format: str | None = None
    result_variable: str | None = None

    @property
    def is_cel(self) -> bool:
        """Evaluated by the engine: CEL, or Zeebe's ``=FEEL`` (``zeebe:script``)."""
        kind = (self.script_format or "").strip().lower()
        return kind == "cel" or (kind == "feel" and (self.script or "").startswith("="))

    @property
    def is_python(self) -> bool:
        """Run in the sandbox by a worker (:mod:`bpm.scripts`)."""
        return self.handler == PYTHON_SCRIPT

    @property
    def runs_listeners(self) -> bool:
        return not self.is_cel and super().runs_listeners  # CEL: evaluated by the engine

    @property
    def waits(self) -> bool:
        return not self.is_cel


@dataclass(frozen=True)
class UserTask(Activity):
    """A task for a person. Every setting is text as written in the model; ``${name}``
    reads a variable when the task is created (see :mod:`bpm.runtime.usertasks`)."""

    json_name: ClassVar[str] = "user_task"
    tag: ClassVar[str] = "userTask"

    assignee: str | None = None
    candidate_groups: tuple[str, ...] = ()
    properties: Mapping[str, str] = field(default_factory=dict)
    candidate_users: tuple[str, ...] = ()
    due_date: str | None = None
    follow_up_date: str | None = None
    priority: str | None = None
    form_key: str | None = None
    form_ref: Mapping[str, str] = field(default_factory=dict)  # key, binding, version
    form_fields: tuple[FormFieldSpec, ...] = field(default=(), metadata=SPARSE)
    """A generated form (``camunda:formData``): the fields, types and constraints."""

    @property
    def waits(self) -> bool:
        return True

    @property
    def listens_last(self) -> tuple[Listener, ...]:
        return ()  # its end listeners run with the task's complete (listens_to_task)

    @property
    def listens_to_task(self) -> tuple[Listener, ...]:
        return tuple(x for x in self.listeners if x.kind == "task" and x.event != "create") + tuple(
            x for x in self.listeners if x.kind == "execution" and x.event == "end"
        )


@dataclass(frozen=True)
class ExclusiveGateway(Node):
    json_name: ClassVar[str] = "exclusive_gateway"
    tag: ClassVar[str] = "exclusiveGateway"
    default_flow: str | None = None


@dataclass(frozen=True)
class ParallelGateway(Node):
    json_name: ClassVar[str] = "parallel_gateway"
    tag: ClassVar[str] = "parallelGateway"


@dataclass(frozen=True)
class InclusiveGateway(Node):
    """Forks along every outgoing flow whose condition is true (the default when none is);
    joins when no token that could still arrive is left upstream in its scope."""

    json_name: ClassVar[str] = "inclusive_gateway"
    tag: ClassVar[str] = "inclusiveGateway"
    joins_late: ClassVar[bool] = True
    conditional_fork: ClassVar[bool] = True

    default_flow: str | None = None


@dataclass(frozen=True)
class ComplexGateway(Node):
    """Forks as an inclusive gateway does; joins when ``activation_condition`` (CEL, over
    the variables and ``activationCount``) holds, then consumes the round's late tokens
    without firing again (BPMN 2.0.2, 13.3.5; ``bpm.kinds.complex``)."""

    json_name: ClassVar[str] = "complex_gateway"
    tag: ClassVar[str] = "complexGateway"
    joins_late: ClassVar[bool] = True
    conditional_fork: ClassVar[bool] = True

    default_flow: str | None = None
    activation_condition: str | None = None


@dataclass(frozen=True)
class SubProcess(Activity):
    """An embedded sub-process: its nodes name it as their ``container``."""

    json_name: ClassVar[str] = "sub_process"
    holds_nodes: ClassVar[bool] = True
    tag: ClassVar[str] = "subProcess"

    @property
    def waits(self) -> bool:
        return True


@dataclass(frozen=True)
class Transaction(SubProcess):
    """A transaction sub-process (BPMN 2.0.2, 10.3.4): a sub-process whose cancel end
    event undoes it. Completing normally it is a sub-process; a cancel end event inside
    it ends what else runs inside, compensates the activities it completed (newest
    first), then takes its cancel boundary event's flow (``bpm.kinds.transaction``)."""

    json_name: ClassVar[str] = "transaction"
    tag: ClassVar[str] = "transaction"


@dataclass(frozen=True)
class AdHocSubProcess(SubProcess):
    """An ad-hoc sub-process (BPMN 2.0.2, 10.3.6): no start event; entering it starts the
    activities ``active_elements`` names (an expression giving a list of ids, Camunda 8's
    ``activeElementsCollection``), else every inner activity without incoming flows (as
    SpiffWorkflow readies them): all at once, or one after the other (``sequential``).
    After an inner element completes ``completion_condition`` is evaluated; when true the
    rest is cancelled (``cancel_remaining``) or left to finish, and no other starts
    (``bpm.kinds.ad_hoc``)."""

    json_name: ClassVar[str] = "ad_hoc_sub_process"
    tag: ClassVar[str] = "adHocSubProcess"
    joins_late: ClassVar[bool] = True  # decided once the walk has nothing else to move

    completion_condition: str | None = None
    sequential: bool = False
    cancel_remaining: bool = True
    active_elements: str | None = None


@dataclass(frozen=True)
class EventSubProcess(Activity):
    """An event sub-process (``triggeredByEvent``): no flows in or out; its start event
    (timer or error) starts it inside the enclosing scope. Its ``inputs`` become its local
    variables, its ``outputs`` are written to the enclosing scope when it completes (it
    has no multi-instance marker)."""

    json_name: ClassVar[str] = "event_sub_process"
    holds_nodes: ClassVar[bool] = True
    tag: ClassVar[str] = "subProcess"


class CallBinding(StrEnum):
    """Which version of the called process a call activity starts."""

    LATEST = "latest"
    DEPLOYMENT = "deployment"  # the version deployed together with the caller
    VERSION = "version"
    VERSION_TAG = "versionTag"


@dataclass(frozen=True)
class CallActivity(Activity):
    """Starts an instance of ``called_element`` (a key, or ``${var}``) and waits for it.

    ``call_inputs`` become the child's variables (all of the caller's with ``all_in``);
    ``call_outputs`` are copied back when it completes (all of the child's with
    ``all_out``). ``business_key``: CEL for the child's business key; ``inherit_key``
    passes the caller's own. Camunda's ``local="true"``: ``all_in_local`` and the targets in
    ``local_inputs`` read only the call activity's own variables (its input parameters),
    ``all_out_local`` and the targets in ``local_outputs`` are written into them (read by
    its output parameters, gone when it ends)."""

    json_name: ClassVar[str] = "call_activity"
    tag: ClassVar[str] = "callActivity"

    called_element: str = ""
    binding: CallBinding = CallBinding.LATEST
    version: str | None = None
    call_inputs: tuple[VariableMapping, ...] = ()
    call_outputs: tuple[VariableMapping, ...] = ()
    all_in: bool = False
    all_out: bool = False
    business_key: str | None = None
    inherit_key: bool = False
    all_in_local: bool = field(default=False, metadata=SPARSE)
    all_out_local: bool = field(default=False, metadata=SPARSE)
    local_inputs: tuple[str, ...] = field(default=(), metadata=SPARSE)
    local_outputs: tuple[str, ...] = field(default=(), metadata=SPARSE)

    @property
    def waits(self) -> bool:
        return True


MAP_RESULTS = ("singleEntry", "singleResult", "collectEntries", "resultList", "value")
"""How a decision task maps its result onto ``result_variable``: Camunda 7's four
``mapDecisionResult`` values, and ``value`` (Zeebe: the decision's value as it is)."""


@dataclass(frozen=True)
class DecisionTask(Activity):
    """A business rule task that evaluates a deployed DMN decision in the step's own
    transaction (``camunda:decisionRef``, ``zeebe:calledDecision``): no worker runs it.

    ``decision`` is the decision id (``${var}``: the variable holding it); ``binding``
    and ``version`` pick its version as a call activity's do (``version`` holds the
    number, or the tag for ``versionTag``); ``result_variable`` receives the result,
    mapped by ``map_result`` (one of :data:`MAP_RESULTS`); without one nothing is written.
    """

    json_name: ClassVar[str] = "decision_task"
    tag: ClassVar[str] = "businessRuleTask"

    decision: str = ""
    binding: CallBinding = CallBinding.LATEST
    version: str | None = None
    result_variable: str | None = None
    map_result: str = "resultList"


@dataclass(frozen=True)
class PassThrough(Activity):
    """``task``, ``manualTask`` and a none ``intermediateThrowEvent``: the token moves on
    at once (BPMN gives them no behaviour an engine performs). ``element`` is the BPMN
    local name, for messages and the trail."""

    json_name: ClassVar[str] = "pass_through"
    tag: ClassVar[str] = "task"

    element: str = "task"


class TimerKind(StrEnum):
    DURATION = "duration"
    DATE = "date"
    CYCLE = "cycle"


@dataclass(frozen=True)
class TimerSpec:
    """An ISO 8601 duration, date or cycle; ``expression`` may be ``${var}``."""

    kind: TimerKind
    expression: str


@dataclass(frozen=True)
class TimerCatchEvent(Node):
    json_name: ClassVar[str] = "timer_catch_event"
    tag: ClassVar[str] = "intermediateCatchEvent"
    timer: TimerSpec | None = None

    @property
    def waits(self) -> bool:
        return True


@dataclass(frozen=True)
class CompensationThrowEvent(Node):
    """An intermediate compensation throw event: compensates ``activity_ref`` (None: every
    completed activity of its scope), waits until that is done, then moves on."""

    json_name: ClassVar[str] = "compensation_throw_event"
    tag: ClassVar[str] = "intermediateThrowEvent"

    activity_ref: str | None = None


@dataclass(frozen=True)
class EscalationThrowEvent(Node):
    """An intermediate throw event with an escalation: the nearest catcher of
    ``escalation_code`` around it is triggered, then the token moves on (unless an
    interrupting catcher ended it)."""

    json_name: ClassVar[str] = "escalation_throw_event"
    tag: ClassVar[str] = "intermediateThrowEvent"

    escalation_code: str = ""


@dataclass(frozen=True)
class LinkThrowEvent(Node):
    """An intermediate throw event with a link: the token jumps to the link catch event of
    the same ``link`` name in the same (sub-)process (resolved and checked at deploy)."""

    json_name: ClassVar[str] = "link_throw_event"
    tag: ClassVar[str] = "intermediateThrowEvent"

    link: str = ""


@dataclass(frozen=True)
class LinkCatchEvent(Node):
    """An intermediate catch event with a link: where link throws of ``link`` continue."""

    json_name: ClassVar[str] = "link_catch_event"
    tag: ClassVar[str] = "intermediateCatchEvent"

    link: str = ""


@dataclass(frozen=True)
class BoundaryEvent(Node):
    """A timer, error, escalation, message, signal or compensation event attached to an
    activity. A compensation boundary event names its activity's compensation handler
    (``compensate_with``)."""

    json_name: ClassVar[str] = "boundary_event"
    tag: ClassVar[str] = "boundaryEvent"

    attached_to: str = ""
    cancel_activity: bool = True
    timer: TimerSpec | None = None
    error_code: str | None = None  # None on an error boundary catches every error
    escalation: bool = field(default=False, metadata=SPARSE)
    escalation_code: str | None = field(default=None, metadata=SPARSE)  # None: every one
    code_variable: str | None = field(default=None, metadata=SPARSE)
    """Receives the caught error or escalation code (``camunda:errorCodeVariable``)."""
    message_variable: str | None = field(default=None, metadata=SPARSE)
    """Receives the caught error's message (``camunda:errorMessageVariable``)."""
    compensate_with: str | None = field(default=None, metadata=SPARSE)

    event: EventRef | None = field(default=None, metadata=SPARSE)

    @property
    def host(self) -> str | None:
        return self.attached_to

    @property
    def is_error(self) -> bool:
        return (
            self.timer is None
            and not self.escalation
            and self.event is None
            and self.compensate_with is None
        )

    @property
    def is_compensation(self) -> bool:
        return self.compensate_with is not None


@dataclass(frozen=True)
class CancelBoundaryEvent(BoundaryEvent):
    """A cancel boundary event of a transaction: taken when a cancel end event inside it
    was reached, once the transaction's completed activities were compensated. Always
    interrupting; nothing arms it."""

    json_name: ClassVar[str] = "cancel_boundary_event"

    @property
    def is_error(self) -> bool:
        return False  # it catches a cancellation, never an error


@dataclass(frozen=True)
class CancelEndEvent(Node):
    """A cancel end event (in a transaction only): cancels its transaction."""

    json_name: ClassVar[str] = "cancel_end_event"
    tag: ClassVar[str] = "endEvent"


class EventKind(StrEnum):
    """What an event waits for or throws besides timers and errors (each a trigger kind
    of :mod:`bpm.kinds` whose waits are subscriptions)."""

    MESSAGE = "message"
    SIGNAL = "signal"
    CONDITIONAL = "conditional"


@dataclass(frozen=True)
class EventRef:
    """A message or signal an event waits for (or throws), by ``name``.

    ``correlation_key``: for a message, CEL over the variables evaluated when the wait
    opens (Zeebe's ``zeebe:subscription correlationKey``); the message must carry the same
    value to be correlated. Signals are broadcast and have none.

    A conditional event (``bpm.kinds.conditional``) fires when ``condition`` (CEL) holds,
    evaluated when its wait opens and on each variable change its scope sees; ``name`` is
    the one variable whose changes count (``camunda:variableName``; "" for any) and
    ``variable_events`` the changes that count (``create``, ``update``, ``delete``; empty
    for all). Both are left out of the model's JSON when unset."""

    kind: EventKind
    name: str
    correlation_key: str | None = None
    condition: str | None = field(default=None, metadata=SPARSE)
    variable_events: tuple[str, ...] = field(default=(), metadata=SPARSE)


@dataclass(frozen=True)
class CatchEvent(Node):
    """An intermediate catch event waiting for a message or a signal."""

    json_name: ClassVar[str] = "catch_event"
    tag: ClassVar[str] = "intermediateCatchEvent"

    event: EventRef = EventRef(EventKind.MESSAGE, "")

    @property
    def waits(self) -> bool:
        return True


@dataclass(frozen=True)
class ReceiveTask(Activity):
    """A receive task: an activity that waits for a message (it may carry boundaries)."""

    json_name: ClassVar[str] = "receive_task"
    tag: ClassVar[str] = "receiveTask"

    event: EventRef = EventRef(EventKind.MESSAGE, "")

    @property
    def waits(self) -> bool:
        return True


@dataclass(frozen=True)
class EventBasedGateway(Node):
    """Its token waits for the first of the events right after it (message, signal or
    timer catch events, receive tasks); that one wins, the others are cancelled."""

    json_name: ClassVar[str] = "event_based_gateway"
    tag: ClassVar[str] = "eventBasedGateway"

    @property
    def waits(self) -> bool:
        return True


@dataclass(frozen=True)
class SignalThrow(Node):
    """An intermediate throw or end event with a signal: broadcast ``signal`` to every
    instance waiting for it (after this transaction commits), then move on."""

    json_name: ClassVar[str] = "signal_throw"
    tag: ClassVar[str] = "intermediateThrowEvent"

    signal: str = ""


def inline_task(node: Node | None) -> ServiceTask | None:
    """``node`` when it is a service (or script) task run by an inline handler, the work
    the engine's own workers claim; None for anything else (external tasks too)."""
    return node if isinstance(node, ServiceTask) and not node.is_external else None


def timer_of(node: Node | None) -> TimerSpec | None:
    """The timer a start, boundary or intermediate catch event waits for (None: none)."""
    if isinstance(node, StartEvent | BoundaryEvent | TimerCatchEvent):
        return node.timer
    return None


@dataclass(frozen=True)
class Flow:
    """A sequence flow. ``condition`` is CEL source, already unwrapped from ``${...}``."""

    id: str
    source: str
    target: str
    condition: str | None = None
    name: str | None = None
    line: int | None = field(default=None, compare=False)
    listeners: tuple[Listener, ...] = ()
    """Its ``take`` execution listeners, run when a token follows it (left out of the
    model's JSON when empty: see :meth:`ProcessModel.to_dict`)."""
