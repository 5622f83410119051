"""The connections of the /metrics server (outputs/http_server.py): which are still waiting for
their request, which hold one of the client slots, and which to close when there are too many.

A connection *waits* from its accept until its request's headers are in (its TLS handshake
counts as waiting): it holds a thread and a socket, never a client slot, and has
header_timeout for all of that, then is closed. Once its headers are in it takes one of the
max_clients slots (as node_exporter's --web.max-requests counts requests), or is answered 503
when they are all taken. At most max_connections are open at once: one more closes the oldest
connection still waiting for its request (never a request being answered, never the new one),
so that sockets that never send anything can neither deny a scrape nor take every descriptor.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from dataclasses import dataclass
from typing import Callable

MAX_CLIENTS = 8  # requests served at once
CLIENT_TIMEOUT = 10.0  # seconds to take the whole answer, once it starts
HEADER_TIMEOUT = 5.0  # seconds from the accept to the request's last header, TLS included
# Connections open at once, requests or not: well above what scrapers open (a few), well below
# the 1024 descriptors a process gets by default (its collectors need theirs). One thread each.
MAX_CONNECTIONS = 256


@dataclass(frozen=True)
class Limits:
    """What one client may hold, and for how long (HttpOutput's keywords)."""

    max_clients: int = MAX_CLIENTS
    client_timeout: float = CLIENT_TIMEOUT
    header_timeout: float = HEADER_TIMEOUT
    max_connections: int = MAX_CONNECTIONS

    def problem(self) -> str | None:
        """Why these limits cannot be served (a count below 1, a timeout not above 0)."""
        counts, timeouts = (self.max_clients, self.max_connections), (
            self.client_timeout, self.header_timeout)  # fmt: skip
        if min(counts) >= 1 and all(timeout > 0 for timeout in timeouts):
            return None
        return (f"max_clients ({self.max_clients}) and max_connections "
                f"({self.max_connections}) must be at least 1, client_timeout "
                f"({self.client_timeout}) and header_timeout ({self.header_timeout}) "
                "positive")  # fmt: skip


@dataclass(eq=False)
class Connection:
    """One accepted socket (its TLS socket once wrapped), and when its request must be in."""

    sock: socket.socket
    deadline: float  # time.monotonic() by which its TLS handshake and headers are done
    slot: bool = False  # holds a client slot (released by Connections.closed)


class Connections:
    """The open connections, thread-safe; the lock is never held to send or receive."""

    def __init__(self, limits: Limits) -> None:
        self._slots = threading.BoundedSemaphore(limits.max_clients)
        self._max = limits.max_connections
        self._waiting: dict[Connection, None] = {}  # no request yet, the oldest first
        self._requests: set[Connection] = set()  # their request in: being answered
        self._lock = threading.Lock()
        self._closing = False

    def opened(self, sock: socket.socket, deadline: float) -> Connection | None:
        """The new connection, counted; at max_connections the oldest waiting one is closed
        to make room (None, the new one refused, only if every open one is a request)."""
        connection = Connection(sock, deadline)
        with self._lock:
            if len(self._waiting) + len(self._requests) >= self._max:
                if not self._waiting:
                    return None
                oldest = next(iter(self._waiting))
                del self._waiting[oldest]  # no longer counted: its thread ends at once
                _hang_up(oldest.sock)
            self._waiting[connection] = None
            if self._closing:  # close() ran after the accept: end this client at once
                _hang_up(sock)
        return connection

    def wrapped(self, connection: Connection) -> Callable[[ssl.SSLSocket], None]:
        """For http_tls.handshake: the TLS socket replaces the plain one (which it detaches)
        before the first byte of the handshake, so that it is the one closed at need."""

        def replace(secure: ssl.SSLSocket) -> None:
            with self._lock:
                connection.sock = secure
                if self._closing or connection not in self._waiting:  # closed meanwhile
                    _hang_up(secure)

        return replace

    def admit(self, connection: Connection) -> bool | None:
        """Its headers are in: True if it got a client slot, False if they are all taken
        (answer 503), None if it was closed meanwhile (to make room, or by close())."""
        with self._lock:
            if self._closing or connection not in self._waiting:
                return None
            del self._waiting[connection]
            self._requests.add(connection)
        connection.slot = self._slots.acquire(blocking=False)
        return connection.slot

    def closed(self, connection: Connection) -> None:
        """Its thread is done with it (the socket is closed right after): uncounted, its
        slot given back."""
        with self._lock:
            self._waiting.pop(connection, None)
            self._requests.discard(connection)
        if connection.slot:
            connection.slot = False
            self._slots.release()

    def hang_up_all(self) -> None:
        with self._lock:  # a connection counted is not closed yet: its descriptor is its own
            self._closing = True
            for connection in [*self._waiting, *self._requests]:
                _hang_up(connection.sock)


def _hang_up(sock: socket.socket) -> None:
    """Wakes its thread from a blocked recv, sendall or TLS handshake. The plain socket's
    shutdown even for a TLS one: SSLSocket.shutdown() would first drop the TLS state under
    the feet of the thread using it."""
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
