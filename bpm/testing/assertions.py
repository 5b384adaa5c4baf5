"""Readable assertions about an instance; a failure prints where it is and its trail.

>>> assert_that(instance).is_waiting_at("approve").has_passed("validate", "reserve")
>>> assert_that(instance).has_variables(approved=True).is_completed()

Each check reads the instance again, so an instance returned before :meth:`BpmTest.run`
is still a good handle.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NoReturn, Self

from bpm.runtime.records import Instance
from bpm.testing.kit import LIVE, BpmTest, InstanceRef, current

__all__ = ["InstanceAssert", "assert_that"]

_MISSING = object()


def assert_that(instance: InstanceRef, kit: BpmTest | None = None) -> InstanceAssert:
    """Assertions about ``instance`` (an :class:`~bpm.runtime.records.Instance` or its
    id) on ``kit``, by default the running test's ``bpm`` fixture."""
    return InstanceAssert(kit or current(), instance if isinstance(instance, str) else instance.id)


class InstanceAssert:
    """Chainable checks; each raises ``AssertionError`` with the instance's trail."""

    def __init__(self, kit: BpmTest, instance_id: str) -> None:
        self.kit = kit
        self.instance_id = instance_id

    @property
    def instance(self) -> Instance:
        return self.kit.instance(self.instance_id)

    def _fail(self, what: str) -> NoReturn:
        __tracebackhide__ = True
        raise AssertionError(f"{what}\n\n{self.kit.describe(self.instance_id)}")

    def _known(self, inst: Instance, node_ids: Iterable[str]) -> None:
        __tracebackhide__ = True
        model = self.kit.engine.model(inst.definition_id)
        unknown = [x for x in node_ids if x not in model.nodes]
        if unknown:
            known = ", ".join(sorted(model.nodes))
            raise AssertionError(
                f"process '{inst.definition_key}' has no node {', '.join(map(repr, unknown))} "
                f"(its nodes: {known})"
            )

    def _nodes_with(self, event_type: str) -> set[str]:
        # From the history: the tokens of nodes a token only passes (events, gateways)
        # are not kept as rows.
        return {
            e.node_id
            for e in self.kit.engine.history(self.instance_id)
            if e.type == event_type and e.node_id
        }

    # -- where it is ------------------------------------------------------------------------
    def is_waiting_at(self, *node_ids: str) -> Self:
        """A live token (waiting, ready, failed) is at each of ``node_ids``."""
        __tracebackhide__ = True
        inst = self.instance
        self._known(inst, node_ids)
        at = {t.node_id for t in inst.tokens if t.state.value in LIVE}
        missing = [x for x in node_ids if x not in at]
        if missing:
            where = ", ".join(sorted(at)) or "nowhere"
            self._fail(f"expected the instance to wait at {', '.join(missing)}; it is at {where}")
        return self

    def is_not_waiting_at(self, *node_ids: str) -> Self:
        __tracebackhide__ = True
        inst = self.instance
        self._known(inst, node_ids)
        at = {t.node_id for t in inst.tokens if t.state.value in LIVE}
        found = [x for x in node_ids if x in at]
        if found:
            self._fail(f"expected the instance not to wait at {', '.join(found)}")
        return self

    def is_waiting_only_at(self, *node_ids: str) -> Self:
        """Live tokens are at exactly these nodes."""
        __tracebackhide__ = True
        inst = self.instance
        self._known(inst, node_ids)
        at = {t.node_id for t in inst.tokens if t.state.value in LIVE}
        if at != set(node_ids):
            where = ", ".join(sorted(at)) or "nowhere"
            wanted = ", ".join(node_ids)
            self._fail(f"expected the instance to wait only at {wanted}; it is at {where}")
        return self

    def has_passed(self, *node_ids: str) -> Self:
        """Each of ``node_ids`` completed at least once."""
        __tracebackhide__ = True
        inst = self.instance
        self._known(inst, node_ids)
        done = self._nodes_with("token_completed")
        missing = [x for x in node_ids if x not in done]
        if missing:
            self._fail(f"expected the instance to have passed {', '.join(missing)}")
        return self

    def has_passed_in_order(self, *node_ids: str) -> Self:
        """``node_ids`` completed in this order (their first completions)."""
        __tracebackhide__ = True
        self.has_passed(*node_ids)
        first: dict[str, int] = {}
        for e in self.kit.engine.history(self.instance_id):
            if e.type == "token_completed" and e.node_id and e.node_id not in first:
                first[e.node_id] = e.seq or 0
        order = sorted(node_ids, key=lambda x: first[x])
        if order != list(node_ids):
            self._fail(f"expected {' -> '.join(node_ids)}; they completed as {' -> '.join(order)}")
        return self

    def has_not_passed(self, *node_ids: str) -> Self:
        """No token ever reached any of ``node_ids``."""
        __tracebackhide__ = True
        inst = self.instance
        self._known(inst, node_ids)
        reached = self._nodes_with("token_created")
        found = [x for x in node_ids if x in reached]
        if found:
            self._fail(f"expected the instance never to reach {', '.join(found)}")
        return self

    def has_user_task(
        self, node_id: str, *, assignee: str | None = None, candidate_group: str | None = None
    ) -> Self:
        """An open user task at ``node_id`` (assigned to ``assignee``, offered to
        ``candidate_group``)."""
        __tracebackhide__ = True
        tasks = self.kit.engine.user_tasks(self.instance_id, node_id=node_id)
        if not tasks:
            self._fail(f"expected an open user task at {node_id}")
        if assignee is not None and not any(t.assignee == assignee for t in tasks):
            got = ", ".join(repr(t.assignee) for t in tasks)
            self._fail(f"expected the task at {node_id} assigned to {assignee!r}; it is {got}")
        if candidate_group is not None and not any(
            candidate_group in t.candidate_groups for t in tasks
        ):
            got = ", ".join(repr(t.candidate_groups) for t in tasks)
            self._fail(f"expected the task at {node_id} offered to {candidate_group!r}: {got}")
        return self

    def has_external_task(self, node_id: str, *, topic: str | None = None) -> Self:
        """An open external task at ``node_id`` (of ``topic``)."""
        __tracebackhide__ = True
        tasks = [
            t
            for t in self.kit.engine.external_tasks(instance_id=self.instance_id)
            if t.node_id == node_id
        ]
        if not tasks:
            self._fail(f"expected an open external task at {node_id}")
        if topic is not None and not any(t.topic == topic for t in tasks):
            got = ", ".join(t.topic for t in tasks)
            self._fail(f"expected the external task at {node_id} on topic {topic!r}; it is {got}")
        return self

    # -- what it holds ----------------------------------------------------------------------
    def has_variables(self, *names: str, **expected: Any) -> Self:
        """Each of ``names`` is set, and each ``name=value`` is set to that value."""
        __tracebackhide__ = True
        variables = self.instance.variables
        wrong = [
            f"{k}={variables.get(k, '<not set>')!r} (expected {v!r})"
            for k, v in expected.items()
            if variables.get(k, _MISSING) != v
        ]
        wrong += [f"{k} is not set" for k in names if k not in variables]
        if wrong:
            self._fail("variables differ: " + "; ".join(wrong))
        return self

    def has_no_variables(self, *names: str) -> Self:
        __tracebackhide__ = True
        variables = self.instance.variables
        found = [k for k in names if k in variables]
        if found:
            self._fail(f"expected no variable {', '.join(found)}")
        return self

    # -- how it ended -----------------------------------------------------------------------
    def has_state(self, state: str) -> Self:
        """The instance state: active, suspended, completed, terminated, failed,
        compensating, compensated."""
        __tracebackhide__ = True
        now = self.instance.state.value
        if now != state:
            self._fail(f"expected the instance to be {state}; it is {now}")
        return self

    def is_active(self) -> Self:
        return self.has_state("active")

    def is_completed(self) -> Self:
        return self.has_state("completed")

    def is_ended(self) -> Self:
        """Ended whichever way (completed, terminated, failed, compensated)."""
        __tracebackhide__ = True
        if not self.instance.ended:
            self._fail("expected the instance to have ended")
        return self

    def is_compensated(self) -> Self:
        return self.has_state("compensated")

    def has_incident_at(self, node_id: str, message: str | None = None) -> Self:
        """An open incident at ``node_id`` (whose message contains ``message``)."""
        __tracebackhide__ = True
        found = [i for i in self.kit.engine.incidents(self.instance_id) if i.node_id == node_id]
        if not found:
            self._fail(f"expected an open incident at {node_id}")
        if message is not None and not any(message in (i.message or "") for i in found):
            self._fail(f"expected the incident at {node_id} to say {message!r}")
        return self

    def has_no_incidents(self) -> Self:
        __tracebackhide__ = True
        found = self.kit.engine.incidents(self.instance_id)
        if found:
            self._fail("expected no incident; open at " + ", ".join(i.node_id for i in found))
        return self
