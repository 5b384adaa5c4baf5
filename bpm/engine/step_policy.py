"""The lease and the retry policy of an inline step: the model's setting wins over the
handler's, the engine's default comes last."""

from __future__ import annotations

from datetime import timedelta

from bpm.engine.core import EngineCore
from bpm.handlers import HandlerSpec
from bpm.model import nodes as n
from bpm.retry import RetryPolicy


def lease_for(core: EngineCore, node: n.ServiceTask, spec: HandlerSpec | None) -> timedelta:
    """How long a claim of the step holds: the model's, else the handler's, else the default."""
    if node.lease_seconds is not None:
        return timedelta(seconds=node.lease_seconds)
    if spec is not None and spec.lease is not None:
        return spec.lease
    return core.config.default_lease


def policy_for(node: n.Node, spec: HandlerSpec | None) -> RetryPolicy:
    """The model's policy wins over the handler's; the default is 3 attempts, no delay."""
    retry = getattr(node, "retry", None)
    if isinstance(retry, RetryPolicy):
        return retry
    if spec is not None and spec.retry is not None:
        return spec.retry
    return RetryPolicy.default()
