"""How many entries each list and map of a request body may hold (documented in
``docs/rest-api.md``, "Limits").

The body limit bounds a request's bytes; these bound what a small body can make the
server do: each topic of a fetch-and-lock is a branch of its statement, run again on every
wake-up of a long poll, and each ``processVariables`` entry a condition in it. A body over
a limit answers 400 ``InvalidRequestException`` naming the field and the limit (pydantic's
``List should have at most N items``), before anything is read or changed.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

#: Topics of one fetch-and-lock (Camunda's clients subscribe to a handful).
MAX_TOPICS = 100
#: Conditions of one filter: ``processVariables`` of a topic, ``correlationKeys`` of a
#: message, ``variableValues`` of a variable query.
MAX_CONDITIONS = 100
#: Variables of one variables map (their bytes are bounded by the engine, their count here).
MAX_VARIABLES = 1000
#: Names or ids of one list (``variables`` of a topic, ``deletions``, ``...In`` filters):
#: as many as one page of a list holds.
MAX_NAMES = 1000
#: Entries of one ``sorting``.
MAX_SORTING = 10


def at_most(n: int) -> Any:
    """``Annotated[..., at_most(n)]``: a list or map of at most ``n`` entries."""
    return Field(max_length=n)


#: A list of names or ids.
Names = Annotated[list[str], at_most(MAX_NAMES)]
