"""What escalation, link and error definitions name: codes, link names, the variables a
catch event sets. Camunda 7, Zeebe and Activiti/Flowable files write them alike:
``escalationRef`` names a ``<bpmn:escalation escalationCode="...">`` of the definitions."""

from __future__ import annotations

from xml.etree.ElementTree import Element

from bpm.bpmn.context import Context
from bpm.bpmn.namespaces import java_value

__all__ = ["catch_variables", "escalation_code", "link_name"]


def _plain_code(text: str) -> str:
    """Zeebe may write a code as a FEEL string literal (``="CODE"``): its text."""
    body = text[1:].strip() if text.startswith("=") else text
    if len(body) >= 2 and body[0] == body[-1] == '"':
        return body[1:-1]
    return text


def escalation_code(defn: Element, owner: Element, ctx: Context, *, required: bool) -> str | None:
    """The ``escalationCode`` of the ``bpmn:escalation`` that ``defn`` names (None: no
    reference, which catches every escalation; a thrower must name one)."""
    ref = defn.get("escalationRef")
    if not ref:
        if required:
            ctx.report_in(
                owner,
                defn,
                f"escalation event '{owner.get('id')}' needs escalationRef to a "
                'bpmn:escalation: add <bpmn:escalation id="..." escalationCode="...">',
            )
        return None
    escalation = ctx.escalations.get(ref) or ctx.escalations.get(ref.rpartition(":")[2])
    if escalation is None:
        ctx.report_in(
            owner,
            defn,
            f"escalationRef '{ref}' names no bpmn:escalation: add "
            f'<bpmn:escalation id="{ref}" escalationCode="...">',
        )
        return None
    code = (escalation.get("escalationCode") or "").strip()
    if not code:
        if required:
            ctx.report_in(
                owner,
                defn,
                f"bpmn:escalation '{ref}' has no escalationCode: add escalationCode=\"...\"",
            )
        return None
    code = _plain_code(code)
    if code.startswith("="):
        ctx.report_in(
            owner,
            defn,
            f"escalation code '{code}' of '{owner.get('id')}' is an expression: write the code "
            'itself (escalationCode="CODE")',
        )
        return None
    return code


def link_name(defn: Element, owner: Element, ctx: Context) -> str:
    """The name of a ``linkEventDefinition`` (some tools only name the event itself)."""
    name = (defn.get("name") or owner.get("name") or "").strip()
    if not name:
        ctx.report_in(
            owner,
            defn,
            f"link event '{owner.get('id')}' has no link name: write "
            '<bpmn:linkEventDefinition name="..."/>, the same on the throw and the catch',
        )
    return name


def catch_variables(defn: Element) -> tuple[str | None, str | None]:
    """``(code_variable, message_variable)`` of an error or escalation catch
    (``camunda:errorCodeVariable``, ``errorMessageVariable``, ``escalationCodeVariable``;
    Activiti and Flowable spell them alike)."""
    code = java_value(defn, "errorCodeVariable") or java_value(defn, "escalationCodeVariable")
    message = java_value(defn, "errorMessageVariable")
    return code or None, message or None
