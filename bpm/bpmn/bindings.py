"""What runs a service, send, business-rule or script task, however the modeler wrote it.

In order of precedence, one binding per task:

* ``zeebe:taskDefinition type="T" retries="3"`` -> external task on topic T, 3 attempts,
  with the ``zeebe:taskHeaders`` as extension properties (``type="=..."``: FEEL giving the
  topic when the task is reached);
* ``bpm:handler="name"`` -> the inline handler ``name``;
* ``bpm:celeryTask="shop.tasks.charge"`` -> that Celery task, run inline as the handler
  ``celery:shop.tasks.charge`` (:mod:`bpm.contrib.celery.handlers`); ``bpm:resultVariable``
  names the variable a result that is not a mapping goes to (default: the task id);
* ``camunda:type="external" camunda:topic="T"`` (or ``flowable:type="external-worker"``)
  -> external task on topic T;
* ``camunda:class``, ``camunda:expression``, ``camunda:delegateExpression``, and the same
  attributes in the ``activiti:`` and ``flowable:`` namespaces -> the inline handler
  registered under that name: the class name as written (``com.acme.Charge``), or the
  expression without ``${}`` and without its argument list (``${charge}`` -> ``charge``,
  ``${billing.charge(execution)}`` -> ``billing.charge``);
* ``camunda:type="mail"`` (any other type), a Camunda connector's ``connectorId`` -> the
  inline handler of that name;
* nothing at all -> the inline handler named by the task id.

``bpm:retry`` (or ``camunda:failedJobRetryTimeCycle``) sets the retry policy and
``bpm:onFailure`` what happens when its attempts are used up: ``incident`` (the default),
``fail``, ``continue`` or ``compensate`` (the saga, see ``docs/compensation.md``).

So a model drawn for a Java engine runs once Python handlers are registered under the same
names; ``bpm lint --handlers MODULE`` lists the names that are still missing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from xml.etree.ElementTree import Element

from bpm.bpmn.context import Context
from bpm.bpmn.extensions import Extensions
from bpm.bpmn.namespaces import camunda, java_engine, ours
from bpm.bpmn.retryspec import RetrySpecError, parse_retry, parse_retry_cycle
from bpm.errors import ExpressionError
from bpm.expressions import native_feel, unwrap
from bpm.handlers import CELERY_TASK, RESULT_VARIABLE
from bpm.retry import FailureAction, RetryPolicy

__all__ = ["USES", "ZEEBE_USES", "Binding", "bind"]

USES = frozenset(
    {
        "class", "expression", "delegateExpression", "type", "topic", "taskPriority",
        "failedJobRetryTimeCycle", "onFailure",
    }
)  # fmt: skip
"""Engine attributes a task binding reads."""
ZEEBE_USES = frozenset({"taskDefinition", "taskHeaders", "connector"})
"""Extension elements a task binding reads (``connector`` is Camunda 7's)."""

_PATH = re.compile(r"^[A-Za-z_$][\w$]*(?:\s*\.\s*[A-Za-z_$][\w$]*)*$")
_FEEL_STRING = re.compile(r'^=\s*"(?P<text>[^"\\]*)"\s*$')


@dataclass
class Binding:
    """The task's handler or topic, and what the binding adds (retries, properties)."""

    handler: str | None = None
    topic: str | None = None
    retry: RetryPolicy | None = None
    properties: dict[str, str] = field(default_factory=dict)


def handler_name(expression: str) -> str | None:
    """``${charge}`` -> ``charge``; ``${billing.charge(execution)}`` -> ``billing.charge``."""
    body = unwrap(expression)
    head = body.split("(", 1)[0].strip()
    if not _PATH.match(head):
        return None
    return re.sub(r"\s+", "", head)


def _static(text: str, what: str, el: Element, ctx: Context) -> str | None:
    """Zeebe text that may be FEEL: ``="x"`` is x; any other ``=...`` is refused."""
    if not text.startswith("="):
        return text.strip() or None
    match = _FEEL_STRING.match(text)
    if match:
        return match["text"]
    ctx.report(el, f"{what} '{text}' is an expression: write the fixed text it stands for")
    return None


def _job_type(kind: str, el: Element, ctx: Context) -> str | None:
    """A job type: text, ``="text"``, or any other ``=FEEL`` (kept: evaluated when the task
    is reached, the topic of that task)."""
    if not kind.startswith("=") or _FEEL_STRING.match(kind):
        return _static(kind, "zeebe:taskDefinition type", el, ctx)
    try:
        return native_feel(kind)
    except ExpressionError as exc:
        ctx.report(el, f"zeebe:taskDefinition type of '{el.get('id')}': {exc}")
        return None


def _zeebe(el: Element, ctx: Context, ext: Extensions, out: Binding) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    definition = ext.zeebe.get("taskDefinition")
    if definition is not None:
        kind = definition.get("type", "").strip()
        topic = _job_type(kind, el, ctx)
        if topic is None and not kind.startswith("="):
            ctx.report(el, 'zeebe:taskDefinition needs type="...": name the job type')
        if topic is not None:
            found.append(("zeebe:taskDefinition type", f"topic {topic}"))
            out.topic = topic
        retries = (definition.get("retries") or "").strip()
        if retries:
            if retries.isdigit():
                out.retry = RetryPolicy(max_attempts=max(int(retries), 1))
            else:
                ctx.report(el, f"zeebe:taskDefinition retries '{retries}' must be a number")
    headers = ext.zeebe.get("taskHeaders")
    if headers is not None:
        for header in headers:
            if header.get("key"):
                out.properties[header.get("key", "")] = header.get("value", "")
    return found


def _java(el: Element, ctx: Context, ext: Extensions, out: Binding) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    kind = java_engine(el, "type")
    topic = java_engine(el, "topic")
    if kind is not None and kind[1].strip() in ("external", "external-worker"):
        if topic is None or not topic[1].strip():
            ctx.report(el, f'an external task needs {kind[0].split(":")[0]}:topic="...": '
                       "name the worker topic")  # fmt: skip
        else:
            out.topic = topic[1].strip()
            found.append((kind[0], f"topic {out.topic}"))
    elif kind is not None and kind[1].strip():
        found.append((kind[0], kind[1].strip()))
    value = java_engine(el, "class")
    if value is not None and value[1].strip():
        found.append((value[0], value[1].strip()))
    for attr in ("expression", "delegateExpression"):
        value = java_engine(el, attr)
        if value is None:
            continue
        name = handler_name(value[1])
        if name is None:
            ctx.report(
                el,
                f"{value[0]} '{value[1]}' cannot name a handler: write ${{handlerName}} or "
                "${bean.method(...)}, and register a handler under that name",
            )
            out.handler = ""  # reported; keeps the task from also being bound to its id
        else:
            found.append((value[0], name))
    if ext.connector_id:
        found.append(("camunda:connector", ext.connector_id))
    return found


def _retry(el: Element, ctx: Context, ext: Extensions) -> RetryPolicy | None:
    spec = ours(el, "retry")
    cycle = camunda(el, "failedJobRetryTimeCycle") or ext.retry_cycle
    if spec and cycle:
        ctx.report(el, "both bpm:retry and camunda:failedJobRetryTimeCycle are set: keep one")
    try:
        if spec:
            return parse_retry(spec)
        if cycle:
            return parse_retry_cycle(cycle)
    except RetrySpecError as exc:
        ctx.report(el, str(exc))
    return None


_ON_FAILURE = {action.value: action for action in FailureAction}


def _on_failure(el: Element, ctx: Context, retry: RetryPolicy | None) -> RetryPolicy | None:
    """``bpm:onFailure="compensate"`` (or incident, fail, continue): what happens when the
    last attempt failed; without a retry policy, the default one with that action."""
    text = (ours(el, "onFailure") or "").strip().lower()
    if not text:
        return retry
    action = _ON_FAILURE.get(text)
    if action is None:
        ctx.report(
            el,
            f"bpm:onFailure '{text}' is not understood: write one of "
            + ", ".join(sorted(_ON_FAILURE)),
        )
        return retry
    return replace(retry or RetryPolicy.default(), on_exhausted=action)


def bind(el: Element, ctx: Context, ext: Extensions) -> Binding:
    """The binding of a task element; conflicting bindings are reported (keep one)."""
    out = Binding()
    found = _zeebe(el, ctx, ext, out)
    own = ours(el, "handler")
    if own:
        found.append(("bpm:handler", own))
    celery_task = (ours(el, "celeryTask") or "").strip()
    if celery_task:
        found.append(("bpm:celeryTask", CELERY_TASK + celery_task))
    result = (ours(el, "resultVariable") or "").strip()
    if result:
        out.properties[RESULT_VARIABLE] = result
    own_topic = ours(el, "topic")
    if own_topic:
        found.append(("bpm:topic", f"topic {own_topic}"))
        out.topic = out.topic or own_topic
    found += _java(el, ctx, ext, out)
    distinct = {value for _, value in found}
    if len(distinct) > 1:
        listed = " and ".join(f"{source} '{value}'" for source, value in found)
        ctx.report(el, f"'{el.get('id')}' is bound twice ({listed}): keep one")
    handlers = [value for _, value in found if not value.startswith("topic ")]
    if out.topic is not None:
        out.handler = None  # a second binding is reported above
    elif handlers:
        out.handler = handlers[0]
    elif out.handler is None:
        out.handler = el.get("id") or None  # no binding: the handler named by the task id
    out.retry = _on_failure(el, ctx, _retry(el, ctx, ext) or out.retry)
    return out
