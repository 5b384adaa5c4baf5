"""A small TCP proxy the fault tests control (in the manner of toxiproxy).

It sits between a process and a service (a worker and PostgreSQL) and can, at any moment:
add ``latency`` to every chunk, ``drop`` traffic (bytes are swallowed, connections stay open:
a network that went silent), ``reset`` every open connection (RST, as a firewall or a NAT
that forgot them does) and ``refuse`` new connections. One thread per direction per
connection; everything stops with :meth:`close`.
"""

from __future__ import annotations

import contextlib
import select
import socket
import struct
import threading
import time
from types import TracebackType


class Proxy:
    """Forward 127.0.0.1:``port`` to ``upstream``; see the module docstring."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.latency = 0.0  # seconds added before each forwarded chunk
        self.dropping = False
        self.dropping_replies = False
        self.refusing = False
        self.accepted = 0  # connections accepted so far (a test can see a reconnect)
        self.chunks_up = 0  # chunks received from clients (a test can see a statement)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="proxy-accept", daemon=True)
        self._thread.start()

    # -- controls ---------------------------------------------------------------------------
    def reset(self) -> int:
        """Send RST on every open connection (both sides); returns how many were open."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            for sock in pair:
                _abort(sock)
        return len(pairs)

    def drop(self, on: bool = True, *, replies_only: bool = False) -> None:
        """Swallow every byte from now on (connections stay open) or stop doing so;
        ``replies_only``: requests still reach the service, its answers are lost."""
        if replies_only:
            self.dropping_replies = on
        else:
            self.dropping = on

    def refuse(self, on: bool = True) -> None:
        """Close new connections at once (the service looks down) or accept them again."""
        self.refusing = on

    @property
    def open_connections(self) -> int:
        with self._lock:
            return len(self._pairs)

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        self.reset()
        self._thread.join(timeout=2)

    def __enter__(self) -> Proxy:
        return self

    def __exit__(
        self, typ: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- forwarding -------------------------------------------------------------------------
    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self.refusing:
                _abort(client)
                continue
            try:
                server = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                _abort(client)
                continue
            server.settimeout(None)
            with self._lock:
                self._pairs.append((client, server))
                self.accepted += 1
            for src, dst, up in ((client, server, True), (server, client, False)):
                threading.Thread(target=self._pipe, args=(src, dst, up), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, up: bool) -> None:
        try:
            while not self._closed.is_set():
                ready, _, _ = select.select([src], [], [], 0.2)
                if not ready:
                    continue
                data = src.recv(65536)
                if not data:
                    break
                if up:
                    self.chunks_up += 1
                if self.latency:
                    time.sleep(self.latency)
                if self.dropping or (self.dropping_replies and not up):
                    continue
                dst.sendall(data)
        except (OSError, ValueError):
            pass
        finally:
            self._forget(src, dst)

    def _forget(self, a: socket.socket, b: socket.socket) -> None:
        with self._lock:
            self._pairs = [p for p in self._pairs if a not in p and b not in p]
        for sock in (a, b):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()


def _abort(sock: socket.socket) -> None:
    """Close with RST instead of FIN (SO_LINGER 0), as a cut connection looks to its peer."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.close()
