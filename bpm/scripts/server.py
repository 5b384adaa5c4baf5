"""The sandbox process: a small single-threaded helper a worker starts once, which forks a
child per script run (:func:`bpm.scripts.sandbox.run`) and answers on its stdout.

It is started without the engine (see :mod:`bpm.scripts.client`): forking it is cheap
(tens of MB, one thread) where forking a worker is not (measured: ~10 ms to fork and ~8 ms
to end a child of a worker that loaded the engine, ~1.5 ms here), and no lock of another
thread can be held in its children. Frames are a 4-byte big-endian length and JSON.
"""

from __future__ import annotations

import json
import os
import struct
import sys
from typing import Any, BinaryIO

from bpm.scripts.policy import ScriptError, compile_python
from bpm.scripts.sandbox import Limits, run

__all__ = ["main", "read_frame", "write_frame"]

_HEADER = struct.Struct(">I")


def read_frame(stream: BinaryIO) -> Any:
    """One frame's JSON value, or None at end of input."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        return None
    return json.loads(data)


def write_frame(stream: BinaryIO, value: Any) -> None:
    data = json.dumps(value).encode()
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """Run one request: ``source``, ``mode``, ``variables``, ``cpu``, ``memory``, ``output``."""
    try:
        compiled = compile_python(request["source"], request.get("mode", "exec"))
        limits = Limits(
            cpu_seconds=float(request["cpu"]),
            memory_bytes=int(request["memory"]),
            output_bytes=int(request["output"]),
        )
        outcome = run(compiled, request["variables"], limits)
    except ScriptError as exc:
        return {"error": str(exc)}
    except Exception as exc:  # a bug here must not end the helper: the worker is told
        return {"error": f"the sandbox failed: {type(exc).__name__}: {exc}"}
    return {"updates": outcome.updates, "result": outcome.result}


def main() -> None:
    """Answer requests from stdin until it closes (the worker ended)."""
    requests = os.fdopen(os.dup(0), "rb", buffering=0)
    answers = os.fdopen(os.dup(1), "wb", buffering=0)
    # Nothing else may write to the answers' stream.
    sys.stdout = sys.stderr
    while True:
        request = read_frame(requests)
        if request is None:
            return
        write_frame(answers, answer(request))


if __name__ == "__main__":
    main()
