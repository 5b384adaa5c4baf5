"""Links into the cockpit: its pages by path, and the URL commands print them under.

The cockpit is one page (``/cockpit``) with hash routes (``/cockpit#/instances/ID``). Each
page also has a path form, ``/cockpit/instances/ID``, which the server redirects to the
hash route: that form survives tools that drop the part after ``#``, and is what the
commands print. ``BPM_COCKPIT_URL`` (e.g. ``http://127.0.0.1:8080/cockpit``, the line
``bpm api`` prints) tells ``bpm start`` and ``bpm show`` where the cockpit is.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import quote

ENV_VAR = "BPM_COCKPIT_URL"

#: The first part of every hash route of the cockpit (static/js/main.js).
PAGES = frozenset({"definitions", "instances", "incidents", "decisions", "work"})


def cockpit_url(env: Mapping[str, str] | None = None) -> str | None:
    """``BPM_COCKPIT_URL`` without a trailing slash, or None when it is not set."""
    raw = (os.environ if env is None else env).get(ENV_VAR, "").strip()
    return raw.rstrip("/") or None


def hash_route(page: str, rest: str = "", query: str = "") -> str:
    """The hash route of a page's path form: ``instances``, ``ID`` -> ``#/instances/ID``."""
    route = f"#/{page}" + (f"/{quote(rest, safe='/:@')}" if rest else "")
    return route + (f"?{query}" if query else "")


def instance_link(base: str, instance_id: str) -> str:
    """The cockpit's page of one instance (its path form) under ``base``."""
    return f"{base}/instances/{quote(instance_id, safe='')}"


def incident_link(base: str) -> str:
    return f"{base}/incidents"
