"""How the engine hands Ready inline steps to workers, without knowing about Celery."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from bpm.errors import ConfigurationError
from bpm.extras import missing_extra


class Dispatcher(Protocol):
    """Publishes Ready token ids to whatever runs them. Called only after a commit.

    A lost publish is harmless: the sweeper (``redispatch_stale_ready``) publishes Ready
    tokens again, and a duplicate publish is harmless because only one claim can win.
    """

    def dispatch(self, token_ids: Sequence[str]) -> None: ...


class ChunkDispatcher(Protocol):
    """A dispatcher that also publishes batch chunks (``bpm.run_batch_chunk``): the
    Celery publisher. A lost or duplicated chunk message is as harmless as a step's: the
    chunk's lease decides (:mod:`bpm.engine.batches`)."""

    def dispatch_chunks(self, chunk_ids: Sequence[str]) -> None: ...


def chunk_dispatcher(dispatcher: object) -> ChunkDispatcher | None:
    """``dispatcher`` if it can publish batch chunks, else None (nothing publishes them:
    the embedded loop runs them itself, or beat's sweeper publishes them)."""
    if callable(getattr(dispatcher, "dispatch_chunks", None)):
        return dispatcher  # type: ignore[return-value]
    return None


class NullDispatcher:
    """Publishes nothing; Ready tokens wait for the sweeper or an explicit ``run_token``."""

    def dispatch(self, token_ids: Sequence[str]) -> None:
        return None


_log = logging.getLogger("bpm.dispatch")


class NoBrokerDispatcher(NullDispatcher):
    """Publishes nothing, and says so in the log the first time there is something to
    publish (once per process): without a broker new steps wait for beat's sweeper."""

    _said = False

    def dispatch(self, token_ids: Sequence[str]) -> None:
        if token_ids and not NoBrokerDispatcher._said:
            NoBrokerDispatcher._said = True
            _log.warning(
                "no broker configured (set BPM_BROKER_URL): new steps are not published "
                "and wait for beat's redispatch_stale_ready sweeper (Celery), or for an "
                "embedded loop (bpm.local.LocalLoop, `bpm dev`; docs/embedded.md)"
            )


def default_dispatcher(broker_url: str | None, queue: str) -> Dispatcher:
    """The dispatcher an engine gets when none is given: publish to ``broker_url``.

    Every process that changes instances (the API, the CLI, ``bpm timers``, Django, Flask,
    workers) thereby hands new steps to workers right after its commit. Without a broker
    nothing publishes (logged once): steps then wait for beat's sweeper.
    """
    if broker_url:
        # Imported here: only processes that publish pay for Celery and kombu, and bpm/
        # stays free of Celery imports outside bpm/contrib.
        try:
            from bpm.contrib.celery.publisher import CeleryPublisher  # noqa: PLC0415
        except ImportError as exc:
            error = missing_extra(exc, "publishing new steps to BPM_BROKER_URL")
            if error is None:
                raise
            raise ConfigurationError(f"{error} (or unset BPM_BROKER_URL)") from None
        return CeleryPublisher.shared(broker_url, queue=queue)
    return NoBrokerDispatcher()
