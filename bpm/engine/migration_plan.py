"""Migration plans (issue 22, item 3): which activity of a process definition becomes which
activity of another version of it, Camunda 7's ``MigrationPlan``.

A plan names a source and a target definition (two versions of one process key) and a list
of instructions, each mapping one source activity to one target activity
(``updateEventTrigger``: a timer is planned again from the target's definition, a message
or signal wait takes the target's name). :func:`generate` maps every activity that has the
same id, the same kind and the same place (its sub-process mapped to the target's) in both
versions; :func:`check_plan` reports what is wrong with a plan in Camunda's report shape:
one report per instruction with its failures, and one per plan variable.

The plan alone says nothing of instances: :mod:`bpm.engine.migration` applies it to each
instance (every activity a token stands at must be mapped) and can try it first (the dry
run).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bpm.errors import BpmError, InvalidOperation
from bpm.kinds import KINDS
from bpm.model import nodes as n
from bpm.model.process import ProcessModel
from bpm.runtime.work import check_variables

#: Instructions of one plan (the REST body is bounded by the same number).
MAX_INSTRUCTIONS = 2000


class MigrationPlanError(InvalidOperation):
    """The plan cannot be used (Camunda's ``MigrationPlanValidationException``): its
    :attr:`report` names each instruction's and variable's failures; nothing changed."""

    def __init__(self, message: str, report: PlanReport) -> None:
        super().__init__(message)
        self.report = report


@dataclass(frozen=True)
class MigrationInstruction:
    """Map ``source`` (an activity of the source definition) to ``target``."""

    source: str
    target: str
    update_event_trigger: bool = False

    def to_camunda(self) -> dict[str, Any]:
        """Camunda's ``MigrationInstructionDto``."""
        return {
            "sourceActivityIds": [self.source],
            "targetActivityIds": [self.target],
            "updateEventTrigger": self.update_event_trigger,
        }


@dataclass(frozen=True)
class MigrationPlan:
    """Camunda's ``MigrationPlan``: source and target definition ids, the instructions,
    and ``variables`` set on every migrated instance (plain JSON, or typed values)."""

    source_definition_id: str
    target_definition_id: str
    instructions: tuple[MigrationInstruction, ...] = ()
    variables: Mapping[str, Any] = field(default_factory=dict)

    def to_camunda(self) -> dict[str, Any]:
        """Camunda's ``MigrationPlanDto`` (variables by name: their values are the caller's)."""
        return {
            "sourceProcessDefinitionId": self.source_definition_id,
            "targetProcessDefinitionId": self.target_definition_id,
            "instructions": [i.to_camunda() for i in self.instructions],
        }

    def inverted(self) -> MigrationPlan:
        """The plan that moves instances back (undo): every instruction the other way."""
        return MigrationPlan(
            self.target_definition_id,
            self.source_definition_id,
            tuple(
                MigrationInstruction(i.target, i.source, i.update_event_trigger)
                for i in self.instructions
            ),
        )

    @classmethod
    def from_camunda(cls, data: Mapping[str, Any]) -> MigrationPlan:
        """A plan from Camunda's JSON (a ``bpm migrate`` plan file); an instruction with
        several source or target ids is kept as given and reported by :func:`check_plan`."""
        out = []
        for raw in data.get("instructions") or ():
            sources = list(raw.get("sourceActivityIds") or [])
            targets = list(raw.get("targetActivityIds") or [])
            if len(sources) != 1 or len(targets) != 1:
                raise InvalidOperation(
                    "each instruction maps exactly one source activity to one target activity "
                    f"(sourceActivityIds {sources}, targetActivityIds {targets})"
                )
            out.append(
                MigrationInstruction(
                    str(sources[0]), str(targets[0]), bool(raw.get("updateEventTrigger"))
                )
            )
        return cls(
            str(data.get("sourceProcessDefinitionId") or ""),
            str(data.get("targetProcessDefinitionId") or ""),
            tuple(out),
            dict(data.get("variables") or {}),
        )


@dataclass(frozen=True)
class InstructionReport:
    """The failures of one instruction (Camunda's ``MigrationInstructionValidationReportDto``)."""

    instruction: MigrationInstruction
    failures: tuple[str, ...]


@dataclass(frozen=True)
class VariableReport:
    """The failures of one plan variable (Camunda's ``MigrationVariableValidationReportDto``)."""

    name: str
    value: Any
    failures: tuple[str, ...]


@dataclass(frozen=True)
class PlanReport:
    """What is wrong with a plan (empty: nothing); Camunda's ``MigrationPlanReportDto``."""

    instruction_reports: tuple[InstructionReport, ...] = ()
    variable_reports: tuple[VariableReport, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.instruction_reports and not self.variable_reports

    def summary(self) -> str:
        parts = [
            f"instruction {r.instruction.source} -> {r.instruction.target}: {'; '.join(r.failures)}"
            for r in self.instruction_reports
        ]
        parts += [f"variable {r.name}: {'; '.join(r.failures)}" for r in self.variable_reports]
        return "; ".join(parts)


def kind_of(node: n.Node) -> str:
    """What must be equal for two activities to map: the element kind and its trigger."""
    trigger = KINDS.trigger_of(node)
    return f"{KINDS.of(node).name}/{trigger.name if trigger is not None else ''}"


def loop_of(node: n.Node) -> str:
    """``parallel``, ``sequential`` or '' (no multi-instance marker)."""
    loop = getattr(node, "loop", None)
    if loop is None:
        return ""
    return "parallel" if loop.parallel else "sequential"


def has_trigger(node: n.Node) -> bool:
    """Whether ``updateEventTrigger`` means something for ``node``: a timer, message or
    signal it waits for."""
    return n.timer_of(node) is not None or isinstance(getattr(node, "event", None), n.EventRef)


def _mappable(node: n.Node) -> bool:
    """Activities that a token can stand at, or that own a wait (not the process's start
    events: a token never rests there)."""
    return not (KINDS.of(node).name == "start_event" and node.container is None)


def generate(
    source: ProcessModel,
    target: ProcessModel,
    source_id: str,
    target_id: str,
    *,
    update_event_triggers: bool = False,
    variables: Mapping[str, Any] | None = None,
) -> MigrationPlan:
    """Map every activity with the same id, kind and multi-instance marker in both
    versions whose container (sub-process) is mapped to the target one's container,
    outermost first. ``update_event_triggers``: set ``updateEventTrigger`` on every
    instruction of an event with a timer, message or signal."""
    mapped: set[str] = set()
    out: list[MigrationInstruction] = []
    for node in sorted(source.nodes.values(), key=lambda x: source.depth(x.id)):
        other = target.nodes.get(node.id)
        if other is None or not _mappable(node):
            continue
        if kind_of(node) != kind_of(other) or loop_of(node) != loop_of(other):
            continue
        if node.container != other.container or (
            node.container is not None and node.container not in mapped
        ):
            continue
        if node.host is not None and (node.host != other.host or node.host not in mapped):
            continue
        mapped.add(node.id)
        update = update_event_triggers and has_trigger(node) and has_trigger(other)
        out.append(MigrationInstruction(node.id, other.id, update))
    return MigrationPlan(source_id, target_id, tuple(out), dict(variables or {}))


def check_plan(plan: MigrationPlan, source: ProcessModel, target: ProcessModel) -> PlanReport:
    """Every failure of the plan's instructions and variables, in Camunda's words where it
    has them (pure: the definitions are given)."""
    by_source: dict[str, list[MigrationInstruction]] = {}
    by_target: dict[str, list[MigrationInstruction]] = {}
    for ins in plan.instructions:
        by_source.setdefault(ins.source, []).append(ins)
        by_target.setdefault(ins.target, []).append(ins)
    reports = []
    for ins in plan.instructions:
        failures = _instruction_failures(ins, source, target, by_source, by_target)
        if failures:
            reports.append(InstructionReport(ins, tuple(failures)))
    variables = []
    for name, value in plan.variables.items():
        try:
            check_variables({name: value})
        except BpmError as exc:
            variables.append(VariableReport(name, value, (str(exc),)))
    return PlanReport(tuple(reports), tuple(variables))


def _instruction_failures(
    ins: MigrationInstruction,
    source: ProcessModel,
    target: ProcessModel,
    by_source: Mapping[str, Sequence[MigrationInstruction]],
    by_target: Mapping[str, Sequence[MigrationInstruction]],
) -> list[str]:
    failures: list[str] = []
    src = source.nodes.get(ins.source)
    tgt = target.nodes.get(ins.target)
    if src is None:
        failures.append(f"Source activity '{ins.source}' does not exist")
    if tgt is None:
        failures.append(f"Target activity '{ins.target}' does not exist")
    if len(by_source.get(ins.source, ())) > 1:
        failures.append(f"There are multiple mappings for source activity id '{ins.source}'")
    if len(by_target.get(ins.target, ())) > 1:
        failures.append(f"There are multiple mappings for target activity id '{ins.target}'")
    if src is None or tgt is None:
        return failures
    if kind_of(src) != kind_of(tgt):
        failures.append(
            f"Activities have incompatible types ({KINDS.activity_type(src)} is not "
            f"compatible with {KINDS.activity_type(tgt)})"
        )
    if loop_of(src) != loop_of(tgt):
        failures.append(
            "Activities have incompatible multi-instance markers "
            f"('{loop_of(src) or 'none'}' and '{loop_of(tgt) or 'none'}')"
        )
    if ins.update_event_trigger and not (has_trigger(src) and has_trigger(tgt)):
        failures.append("Cannot update event trigger: the activities have no event trigger")
    # The hierarchy is kept: the container (sub-process) of the source must be mapped to
    # the container of the target (Camunda's "parent activity must be migrated").
    if src.container != _mapped_container(src.container, by_source, tgt.container):
        failures.append(
            f"The closest mapped ancestor '{src.container}' is mapped to scope "
            f"'{_target_of(src.container, by_source)}' which is not an ancestor of target "
            f"scope '{tgt.container}'"
            if src.container is not None
            else f"Target activity '{tgt.id}' is inside '{tgt.container}', but source "
            f"activity '{src.id}' is not inside a sub-process"
        )
    if src.host is not None or tgt.host is not None:
        if src.host is None or tgt.host is None:
            failures.append("A boundary event maps only to a boundary event")
        elif _target_of(src.host, by_source) != tgt.host:
            failures.append(
                f"The boundary event's activity '{src.host}' is not mapped to the activity "
                f"'{tgt.host}' the target boundary event is attached to"
            )
    return failures


def _target_of(
    source_id: str | None, by_source: Mapping[str, Sequence[MigrationInstruction]]
) -> str | None:
    found = by_source.get(source_id or "", ())
    return found[0].target if found else None


def _mapped_container(
    container: str | None,
    by_source: Mapping[str, Sequence[MigrationInstruction]],
    target_container: str | None,
) -> str | None:
    """``container`` when it is mapped to ``target_container`` (or both are the process),
    else something that differs from it."""
    if container is None:
        return None if target_container is None else "\0"
    return container if _target_of(container, by_source) == target_container else "\0"
