"""The /metrics server of output kind "http" (outputs/http.py): pages, clients, their limits.

A page is one batch: the server answers each scrape from the page it read first, so a scrape
gets one whole batch and swapping in a new page never waits for a client. Every connection
gets a thread of its own at its accept (the accepting loop never reads nor waits on one), and
has header_timeout for its TLS handshake and request headers together; only then does it take
one of max_clients slots, or get 503 when they are all taken (outputs/http_conns.py: which
connections wait, which hold slots, the cap on open connections). A request has
client_timeout to take its whole answer, then is dropped. Clients share the page's bytes and
its gzip form (made once, on first demand): a slow client costs a thread and a socket, never
a copy. One request per connection (HTTP/1.0): an idle keep-alive connection would stay open.
"""

from __future__ import annotations

import contextlib
import html
import http.server
import io
import socket
import socketserver
import ssl
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence
from urllib.parse import urlsplit

from diskprobe import __version__
from diskprobe.log import Logger
from diskprobe.outputs.http_auth import BasicAuth
from diskprobe.outputs.http_conns import Connection, Connections, Limits
from diskprobe.outputs.http_page import Page, accepts_gzip
from diskprobe.outputs.http_tls import handshake

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"  # node_exporter's, byte for byte
PLAIN = "text/plain; charset=utf-8"
CLIENT_THREAD = "diskprobe-http-client"
LANDING = (
    "<!DOCTYPE html>\n<html><head><title>diskprobe</title></head><body>\n<h1>diskprobe</h1>\n"
    f'<p>version {html.escape(__version__)}</p>\n<p><a href="/metrics">Metrics</a></p>\n'
    "</body></html>\n"
).encode()
TOO_MANY = b"too many scrapes at once\n"
BUSY = b"HTTP/1.0 503 Service Unavailable\r\nContent-Length: 25\r\n\r\n" + TOO_MANY
# Request lines are logged (debug): "GET /\x1b[2J HTTP/1.0" shows, not runs, the escape.
_CONTROL = {code: f"\\x{code:02x}" for code in [*range(0x20), *range(0x7F, 0xA0)]}


class _DeadlineReader(io.RawIOBase):
    """A socket's bytes until a deadline for all of them (a socket timeout is per recv)."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self._sock = sock
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:  # any writable buffer
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("the request took too long")
        self._sock.settimeout(left)
        return self._sock.recv_into(buffer)


class _Handler(http.server.BaseHTTPRequestHandler):
    server: ScrapeServer
    disable_nagle_algorithm = True  # headers and body are two sends
    _send_deadline = 0.0

    def __init__(self, client: Connection, address: Any, server: ScrapeServer) -> None:
        self.client = client  # before the base class runs setup() and handle()
        super().__init__(client.sock, address, server)

    def setup(self) -> None:
        super().setup()
        self.rfile.close()  # replaced: with it, every byte would restart the timeout
        self.rfile = io.BufferedReader(_DeadlineReader(self.connection, self.client.deadline))

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False  # malformed: http.server answered it (400, 414, 431, 505)
        admitted = self.server.connections.admit(self.client)  # the headers are in
        if not admitted:  # None: closed meanwhile, to make room or by close(); no answer
            if admitted is False:
                self._reply(503, PLAIN, TOO_MANY)
            return False
        if self.command in ("GET", "HEAD"):
            return True
        body = f"method {self.command} not allowed\n".encode("utf-8", "replace")
        self._reply(405, PLAIN, body, [("Allow", "GET, HEAD")])
        return False

    def do_GET(self) -> None:
        path = urlsplit(self.path).path  # "/metrics?x=1": the query is ignored
        page = self.server.page  # read once: this scrape's batch, whatever write() does next
        auth = self.server.auth  # every path, as the toolkit: the landing page too
        if auth is not None and not auth.allows(self.headers.get("Authorization")):
            self._reply(401, PLAIN, b"Unauthorized\n", [("WWW-Authenticate", "Basic")])
        elif path == "/":
            self._reply(200, "text/html; charset=utf-8", LANDING)
        elif path != "/metrics":
            self._reply(404, PLAIN, b"404 page not found\n")  # Go's net/http text
        elif page is None:
            self._reply(503, PLAIN, b"no metrics collected yet\n")
        elif accepts_gzip(self.headers.get("Accept-Encoding")):
            zipped = [("Content-Encoding", "gzip"), ("Vary", "Accept-Encoding")]
            self._reply(200, CONTENT_TYPE, page.gzipped(), zipped)
        else:
            self._reply(200, CONTENT_TYPE, page.body, [("Vary", "Accept-Encoding")])

    do_HEAD = do_GET  # _reply leaves the body out

    def _reply(
        self, code: int, kind: str, body: bytes, headers: Sequence[tuple[str, str]] = ()
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            left = self._send_deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("the answer took too long")
            self.connection.settimeout(left)  # sendall's timeout bounds the whole call
            self.wfile.write(body)  # the page's own bytes: no copy per client

    def send_response(self, code: int, message: str | None = None) -> None:
        # Every answer starts here (http.server's errors too): its client_timeout starts now.
        self._send_deadline = time.monotonic() + self.server.timeout_s
        self.connection.settimeout(self.server.timeout_s)
        super().send_response(code, message)

    def end_headers(self) -> None:
        for name, value in self.server.headers.items():  # the web config's, on every answer
            self.send_header(name, value)
        super().end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        # http.server writes every request to stderr; a daemon's stderr is its log
        message = (format % args).translate(_CONTROL)
        self.server.log.debug(f"http: {self.client_address[0]}: {message}")

    def version_string(self) -> str:
        return f"diskprobe/{__version__}"


@dataclass(frozen=True)
class Security:
    """From the web config (config/web_config.py): TLS, basic auth, extra response headers."""

    tls: ssl.SSLContext | None = None
    auth: BasicAuth | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


class ScrapeServer(http.server.HTTPServer):
    """An HTTPServer whose connections each get a thread, and whose requests take one of
    max_clients slots (`limits`); serve_forever() runs the accepting loop. `page` is what
    /metrics serves (None: 503 until the first batch)."""

    request_queue_size = 64  # a burst of scrapers waits in the backlog, not refused

    def __init__(
        self,
        address: tuple[Any, ...],
        family: int,
        *,
        log: Logger,
        limits: Limits,
        security: Security | None = None,
    ) -> None:
        self.address_family = family
        self.log = log
        self.timeout_s = limits.client_timeout
        self.header_timeout_s = limits.header_timeout
        self.page: Page | None = None
        secure = security or Security()
        self.tls, self.auth, self.headers = secure.tls, secure.auth, dict(secure.headers)
        self.connections = Connections(limits)
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        if self.address_family == socket.AF_INET6 and self.server_address[0] == "::":
            # Every interface, IPv4 too (as ::ffff:a.b.c.d): not every system's default.
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        socketserver.TCPServer.server_bind(self)  # not HTTPServer's: its getfqdn() asks DNS
        self.server_name, self.server_port = self.socket.getsockname()[:2]

    def process_request(self, request: Any, client_address: Any) -> None:
        """In the accepting loop: counts the connection and hands it to a thread of its own.
        Never reads from it, never waits on it."""
        deadline = time.monotonic() + self.header_timeout_s  # the handshake's and headers'
        client = self.connections.opened(request, deadline)
        if client is None:  # max_connections, every one a request being answered
            self._refuse(request)
            return
        try:
            threading.Thread(
                target=self._serve, args=(client, client_address), name=CLIENT_THREAD,
                daemon=True,
            ).start()  # fmt: skip
        except RuntimeError:  # no thread to be had (a ulimit): answered as if busy
            self.connections.closed(client)
            self._refuse(request)

    def _serve(self, client: Connection, client_address: Any) -> None:
        try:
            if self.tls is not None:  # here, in the client's thread: never in the accept loop
                left = client.deadline - time.monotonic()
                handshake(client.sock, self.tls, left, self.connections.wrapped(client))
            _Handler(client, client_address, self)
        except Exception:  # a client that went away mid-answer: never the server's end
            self.handle_error(client.sock, client_address)
        finally:
            self.connections.closed(client)
            self.shutdown_request(client.sock)

    def _refuse(self, request: socket.socket) -> None:
        """No thread, or max_connections all answering: a 503 if the socket takes it at once
        (in plain text: not over TLS, which would need a handshake first), then closed."""
        if self.tls is None:
            with contextlib.suppress(OSError):
                request.setblocking(False)
                request.send(BUSY)
        self.shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]  # socketserver's default prints a traceback to stderr
        self.log.debug(f"http: {client_address[0]}: {type(error).__name__}: {error}")

    def hang_up_all(self) -> None:
        self.connections.hang_up_all()
