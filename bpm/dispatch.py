"""How the engine hands Ready inline steps to workers, without knowing about Celery."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Dispatcher(Protocol):
    """Publishes Ready token ids to whatever runs them. Called only after a commit.

    A lost publish is harmless: the sweeper (``redispatch_stale_ready``) publishes Ready
    tokens again, and a duplicate publish is harmless because only one claim can win.
    """

    def dispatch(self, token_ids: Sequence[str]) -> None: ...


class NullDispatcher:
    """Publishes nothing; Ready tokens wait for the sweeper or an explicit ``run_token``."""

    def dispatch(self, token_ids: Sequence[str]) -> None:
        return None
