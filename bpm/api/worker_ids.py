"""Worker ids are namespaced by API key: key ``k1``'s worker ``w`` is ``k1:w`` to the engine.

A worker id names a worker of one key only, so no key can take another's: two keys that
both run the Camunda JS client with its default id ``some-random-id`` are two workers
(``k1:some-random-id``, ``k2:some-random-id``), and neither can complete, fail, extend,
lock, unlock or set the retries of a task the other's worker holds (it is locked by another
worker: 400, or 403 for unlock and retries). The id the engine stores, shows in history and
in the cockpit is the namespaced one; the REST API answers a key with its own workers' ids
as it sent them. Key ids contain no ``:`` (see :mod:`bpm.api.auth`), so the first ``:``
of a stored id ends the key's id.

A key configured with ``workers=w1|w2`` may act only as those workers (403 otherwise).
Without keys (``--insecure-no-auth``) there is nobody to tell apart: ids are taken as
given. Earlier versions bound a worker id to the first key that used it (table
``worker_binding``, which is no longer read): another key could take an id for good.
"""

from __future__ import annotations

from collections.abc import Callable

from bpm.api.auth import ApiKey, Principal, forbidden
from bpm.api.errors import ApiError, bad_request

SEP = ":"
#: The engine's limit of a worker id (its column), namespace included.
MAX_STORED = 255


class WorkerIds:
    """Turns the worker ids of requests into the engine's (namespaced) ids and back."""

    def __init__(self, keys: list[ApiKey]) -> None:
        self.key_ids = frozenset(k.id for k in keys)

    def acting(self, who: Principal, worker_id: str) -> str:
        """The engine's id of ``who``'s worker ``worker_id`` (403 for a key limited to other
        configured workers, 400 when the id is too long for the namespace)."""
        key = who.key
        if key is None:  # the API runs without keys: nobody to tell apart
            return worker_id
        if key.workers is not None and worker_id not in key.workers:
            raise _refused(key, worker_id)
        stored = f"{key.id}{SEP}{worker_id}"
        if len(stored) > MAX_STORED:
            raise bad_request(
                f"workerId is too long: API key '{key.id}' may use worker ids of at most "
                f"{MAX_STORED - len(key.id) - 1} characters"
            )
        return stored

    def shown(self, who: Principal, stored: str | None) -> str | None:
        """A stored worker id as ``who`` sees it: its own workers without the namespace."""
        if stored is None or who.key is None:
            return stored
        mine = who.key.id + SEP
        return stored[len(mine) :] if stored.startswith(mine) else stored

    def filtered(self, who: Principal, worker_id: str) -> str:
        """A ``workerId`` filter: the caller's own worker, unless an operator names another
        key's worker in full (``k1:w1``)."""
        if who.key is None:
            return worker_id
        head, sep, _ = worker_id.partition(SEP)
        if who.may_act and sep and head in self.key_ids:
            return worker_id
        return f"{who.key.id}{SEP}{worker_id}"

    def may_release(self, who: Principal) -> Callable[[str], bool] | None:
        """Whose live locks ``who`` may unlock or set the retries of: None for anyone's (an
        operator key, or no keys), else only its own workers'."""
        if who.key is None or who.may_act:
            return None
        mine = who.key.id + SEP
        return lambda holder: holder.startswith(mine)


def _refused(key: ApiKey, worker_id: str) -> ApiError:
    return forbidden(
        f"API key '{key.id}' may only act as its configured workers "
        f"({', '.join(sorted(key.workers or ()))}), not as worker '{worker_id}'"
    )
