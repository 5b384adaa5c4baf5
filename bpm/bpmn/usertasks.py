"""User-task settings in every spelling: ``camunda:``, ``activiti:``/``flowable:``,
``zeebe:`` extension elements, and BPMN ``humanPerformer`` / ``potentialOwner``.

Values stay text in the model. ``${name}`` (and Zeebe's ``=name``) reads a variable when
the task is created; other expressions are not evaluated and deploy with a warning.
"""

from __future__ import annotations

import re
from typing import Any
from xml.etree.ElementTree import Element

from bpm.bpmn.context import Context
from bpm.bpmn.extensions import Extensions
from bpm.bpmn.namespaces import java_engine, local, split
from bpm.errors import ExpressionError
from bpm.expressions import compile_expression, native_feel, to_cel
from bpm.model import nodes as n
from bpm.timeexpr import TimerError, parse_date, parse_duration, variable_name

__all__ = [
    "FORM_DATA_USES",
    "FORM_USES",
    "USES",
    "ZEEBE_FORM_USES",
    "ZEEBE_USES",
    "form_fields",
    "form_settings",
    "user_settings",
]

USES = frozenset(
    {
        "assignee",
        "candidateUsers",
        "candidateGroups",
        "dueDate",
        "followUpDate",
        "priority",
        "formKey",
        "formRef",
        "formRefBinding",
        "formRefVersion",
    }
)
ZEEBE_USES = frozenset(
    {"assignmentDefinition", "taskSchedule", "priorityDefinition", "formDefinition", "userTask"}
)

_FEEL_PATH = re.compile(r"^=\s*(?P<path>[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*)\s*$")
_FEEL_STRING = re.compile(r'^=\s*"(?P<text>[^"\\]*)"\s*$')
_FEEL_LIST = re.compile(r'^=\s*\[(?P<items>\s*"[^"\\]*"\s*(?:,\s*"[^"\\]*"\s*)*)\]\s*$')
_USER = re.compile(r"^user\((?P<name>[^()]*)\)$")
_GROUP = re.compile(r"^group\((?P<name>[^()]*)\)$")


def _value(text: str | None, what: str, el: Element, ctx: Context) -> str | None:
    """A setting as stored: literal text, or ``${name}`` for a variable; None if unusable."""
    if text is None or not text.strip():
        return None
    text = text.strip()
    if text.startswith("="):
        if match := _FEEL_STRING.match(text):
            return match["text"]
        if match := _FEEL_PATH.match(text):
            return f"${{{match['path']}}}"
        try:
            return native_feel(text)  # evaluated when the task is created
        except ExpressionError as exc:
            ctx.report(el, f"{what} of '{el.get('id')}': {exc}")
            return None
    if "${" in text or "#{" in text:
        if variable_name(text) is not None:
            return text
        # Any expression (``${owner.name}``, ``Task ${loopCounter}``): evaluated when the
        # task is created (bpm.runtime.usertasks), each part JUEL read as CEL.
        problems = []
        for part in _EL_PART.finditer(text):
            try:
                compile_expression(to_cel("${" + part.group("body") + "}"))
            except ExpressionError as exc:
                problems.append(str(exc))
        if not problems and _EL_PART.search(text):
            return text
        ctx.warn(
            el,
            el,
            f"{what} '{text}' is an expression this engine cannot evaluate"
            + (f" ({problems[0]})" if problems else "")
            + ": the setting is left empty",
        )
        return None
    return text


_EL_PART = re.compile(r"[$#]\{(?P<body>[^{}]*)\}")


def _expression(value: str) -> bool:
    """Whether a stored setting holds ``${...}`` parts (evaluated when the task is made)."""
    return _EL_PART.search(value) is not None


def _items(text: str | None, what: str, el: Element, ctx: Context) -> list[str]:
    if text is None or not text.strip():
        return []
    if match := _FEEL_LIST.match(text.strip()):
        return re.findall(r'"([^"\\]*)"', match["items"])
    if text.strip().startswith("="):
        single = _value(text, what, el, ctx)
        return [single] if single else []
    out = []
    for part in text.split(","):
        value = _value(part, what, el, ctx)
        if value:
            out.append(value)
    return out


def _formal(el: Element, kind: str) -> list[str]:
    """Texts of ``<kind><resourceAssignmentExpression><formalExpression>``."""
    out = []
    for child in el:
        if local(child) != kind:
            continue
        for expr in child.iter():
            if local(expr) == "formalExpression" and (expr.text or "").strip():
                out.append((expr.text or "").strip())
    return out


def _check_date(value: str | None, what: str, el: Element, ctx: Context) -> str | None:
    if (
        value is None
        or variable_name(value) is not None
        or value.startswith("=")
        or _expression(value)
    ):
        return value
    try:
        parse_date(value)
    except TimerError:
        try:
            parse_duration(value)
        except TimerError:
            ctx.report(
                el,
                f"{what} '{value}' is neither an ISO 8601 date (2026-12-01T09:00:00Z) nor a "
                "duration (P2D, from the task's creation), nor ${variable}",
            )
            return None
    return value


#: The form settings a none start event honours (Camunda's start forms).
FORM_USES = frozenset({"formKey", "formRef", "formRefBinding", "formRefVersion"})
ZEEBE_FORM_USES = frozenset({"formDefinition"})
#: Extension elements of generated forms (Camunda's formData, Activiti/Flowable's
#: formProperty).
FORM_DATA_USES = frozenset({"formData", "formProperty"})
FIELD_TYPES = frozenset({"string", "long", "boolean", "date", "enum"})
CONSTRAINTS = frozenset({"required", "min", "max", "minlength", "maxlength", "readonly"})


def _name(el: Element) -> str:
    """The local name of an extension element, whatever its namespace."""
    return split(el.tag)[1]


def _field_type(kind: str | None, el: Element, ctx: Context, field_id: str) -> str:
    kind = (kind or "string").strip() or "string"
    if kind == "int" or kind == "integer" or kind == "double" or kind == "number":
        return "long" if kind in ("int", "integer") else "double"
    if kind not in FIELD_TYPES and kind != "double":
        ctx.warn(
            el,
            el,
            f"form field '{field_id}' has type '{kind}', which this engine reads as a string "
            f"(types: {', '.join(sorted(FIELD_TYPES))})",
        )
        return "string"
    return kind


def _camunda_fields(form: Element, el: Element, ctx: Context) -> list[n.FormFieldSpec]:
    out = []
    for item in form:
        if _name(item) != "formField":
            continue
        fid = (item.get("id") or "").strip()
        if not fid:
            ctx.report(el, "a camunda:formField needs an id (the variable it fills)")
            continue
        constraints: list[tuple[str, str | None]] = []
        values: list[tuple[str, str]] = []
        for child in item:
            if _name(child) == "validation":
                for c in child:
                    name = (c.get("name") or "").strip()
                    if _name(c) != "constraint" or not name:
                        continue
                    if name not in CONSTRAINTS:
                        ctx.warn(el, el, f"form field '{fid}': constraint '{name}' is not checked")
                        continue
                    constraints.append((name, c.get("config")))
            elif _name(child) == "value" and child.get("id"):
                values.append((str(child.get("id")), str(child.get("name") or child.get("id"))))
        out.append(
            n.FormFieldSpec(
                id=fid,
                type=_field_type(item.get("type"), el, ctx, fid),
                label=item.get("label"),
                default=item.get("defaultValue"),
                date_pattern=item.get("datePattern"),
                constraints=tuple(constraints),
                values=tuple(values),
            )
        )
    return out


def _flowable_fields(props: list[Element], el: Element, ctx: Context) -> list[n.FormFieldSpec]:
    out = []
    for item in props:
        fid = (item.get("id") or "").strip()
        if not fid:
            ctx.report(el, "a formProperty needs an id (the variable it fills)")
            continue
        constraints: list[tuple[str, str | None]] = []
        if (item.get("required") or "").strip().lower() == "true":
            constraints.append(("required", None))
        if (item.get("writable") or "").strip().lower() == "false":
            constraints.append(("readonly", None))
        values = [
            (str(v.get("id")), str(v.get("name") or v.get("id")))
            for v in item
            if _name(v) == "value" and v.get("id")
        ]
        out.append(
            n.FormFieldSpec(
                id=item.get("variable") or fid,
                type=_field_type(item.get("type"), el, ctx, fid),
                label=item.get("name"),
                default=item.get("default"),
                date_pattern=item.get("datePattern"),
                constraints=tuple(constraints),
                values=tuple(values),
            )
        )
    return out


def form_fields(el: Element, ctx: Context, ext: Extensions) -> tuple[n.FormFieldSpec, ...]:
    """The fields of a generated form: ``camunda:formData`` (or Activiti/Flowable
    ``formProperty`` elements)."""
    fields: list[n.FormFieldSpec] = []
    if "formData" in ext.java:
        fields += _camunda_fields(ext.java["formData"], el, ctx)
    fields += _flowable_fields(ext.java_all.get("formProperty", []), el, ctx)
    seen: set[str] = set()
    for f in fields:
        if f.id in seen:
            ctx.report(el, f"form field '{f.id}' appears twice: give each field its own id")
        seen.add(f.id)
    return tuple(fields)


def form_settings(el: Element, ctx: Context, ext: Extensions) -> tuple[str | None, dict[str, str]]:
    """The form of a user task or start event: ``camunda:formKey`` (or Zeebe's
    ``formKey`` / ``externalReference``) and the Camunda Forms reference
    (``camunda:formRef`` with its binding and version, or Zeebe's ``formId``)."""

    def java(name: str) -> str | None:
        found = java_engine(el, name)
        return found[1] if found else None

    form = ext.zeebe.get("formDefinition")
    form_key = _value(java("formKey"), "formKey", el, ctx)
    form_ref: dict[str, str] = {}
    if java("formRef"):
        form_ref = {"key": java("formRef") or "", "binding": java("formRefBinding") or "latest"}
        if java("formRefVersion"):
            form_ref["version"] = java("formRefVersion") or ""
    if form is not None:
        form_key = form_key or _value(
            form.get("formKey") or form.get("externalReference"), "formKey", el, ctx
        )
        if form.get("formId"):
            form_ref = {"key": form.get("formId", ""), "binding": form.get("bindingType", "latest")}
            if form.get("versionTag"):
                form_ref["version"] = form.get("versionTag", "")
    return form_key, form_ref


def user_settings(el: Element, ctx: Context, ext: Extensions) -> dict[str, Any]:
    """Keyword arguments for :class:`bpm.model.nodes.UserTask` beyond id, name and line."""

    def java(name: str) -> str | None:
        found = java_engine(el, name)
        return found[1] if found else None

    zeebe = {name: item for name, item in ext.zeebe.items()}
    assign = zeebe.get("assignmentDefinition")
    schedule = zeebe.get("taskSchedule")
    performers = _formal(el, "humanPerformer") + _formal(el, "performer")
    assignee = _value(
        java("assignee")
        or (assign.get("assignee") if assign is not None else None)
        or (performers[0] if performers else None),
        "assignee",
        el,
        ctx,
    )
    users = _items(java("candidateUsers"), "candidateUsers", el, ctx)
    groups = _items(java("candidateGroups"), "candidateGroups", el, ctx)
    if assign is not None:
        users += _items(assign.get("candidateUsers"), "candidateUsers", el, ctx)
        groups += _items(assign.get("candidateGroups"), "candidateGroups", el, ctx)
    for text in _formal(el, "potentialOwner"):
        for part in (p.strip() for p in text.split(",")):
            if match := _USER.match(part):
                users.append(match["name"].strip())
            elif match := _GROUP.match(part):
                groups.append(match["name"].strip())
            elif part:
                groups.append(part)  # Camunda reads a bare name as a group
    due = java("dueDate") or (schedule.get("dueDate") if schedule is not None else None)
    follow = java("followUpDate") or (
        schedule.get("followUpDate") if schedule is not None else None
    )
    priority = java("priority")
    if priority is None and "priorityDefinition" in zeebe:
        priority = zeebe["priorityDefinition"].get("priority")
    priority = _value(priority, "priority", el, ctx)
    if (
        priority is not None
        and variable_name(priority) is None
        and not priority.startswith("=")  # FEEL, evaluated when the task is created
        and not _expression(priority)
        and not priority.lstrip("-").isdigit()
    ):
        ctx.report(el, f"priority '{priority}' must be a whole number or ${{variable}}")
        priority = None
    form_key, form_ref = form_settings(el, ctx, ext)
    return {
        "assignee": assignee,
        "candidate_users": tuple(dict.fromkeys(users)),
        "candidate_groups": tuple(dict.fromkeys(groups)),
        "due_date": _check_date(_value(due, "dueDate", el, ctx), "dueDate", el, ctx),
        "follow_up_date": _check_date(
            _value(follow, "followUpDate", el, ctx), "followUpDate", el, ctx
        ),
        "priority": priority,
        "form_key": form_key,
        "form_ref": form_ref,
        "form_fields": form_fields(el, ctx, ext),
    }
