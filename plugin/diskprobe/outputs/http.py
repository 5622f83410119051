"""kind = "http": the latest batch served at /metrics for Prometheus to scrape, as node_exporter.

write() hands the server a new page (one reference swap: a scrape gets the old batch or the
new one, whole) and never waits for a client; outputs/http_server.py serves the pages, with
bounds on requests, on connections and on the time each may take (outputs/http_conns.py).
"""

from __future__ import annotations

import errno
import functools
import socket
import threading

from diskprobe.config.listen import parse_listen
from diskprobe.config.web_config import load_web_config
from diskprobe.log import Logger
from diskprobe.outputs.base import OutputFailed
from diskprobe.outputs.http_auth import BasicAuth, bcrypt_problem
from diskprobe.outputs.http_conns import (
    CLIENT_TIMEOUT,
    HEADER_TIMEOUT,
    MAX_CLIENTS,
    MAX_CONNECTIONS,
    Limits,
)
from diskprobe.outputs.http_page import Page
from diskprobe.outputs.http_server import ScrapeServer, Security
from diskprobe.outputs.http_tls import server_context

__all__ = ["HttpOutput", "parse_listen"]
STOP_POLL_SEC = 0.2  # how soon close() returns: the accepting loop looks for a stop this often


def security(web_config_file: str) -> Security:
    """TLS, basic auth and headers from the web config file ("": none); OutputFailed, one
    line, if it no longer loads (checked at start, it may have changed since) or this system
    cannot serve what it asks for."""
    if not web_config_file:
        return Security()
    try:
        web = load_web_config(web_config_file)  # "PATH:LINE: what"
        problem = bcrypt_problem() if web.users else None
        if problem is not None:
            raise ValueError(f"{web_config_file}: basic_auth_users: {problem}")
        tls = server_context(web.tls) if web.tls is not None else None
    except ValueError as error:
        raise OutputFailed(f"http: {error}") from None
    return Security(tls, BasicAuth(web.users) if web.users else None, web.headers)


def bind(host: str, port: int, log: Logger, limits: Limits, secure: Security) -> ScrapeServer:
    """A server listening on (host, port) as parse_listen gives them; OSError if it cannot."""
    server = functools.partial(ScrapeServer, log=log, limits=limits, security=secure)
    if host == "":
        try:  # every interface: one IPv6 socket takes IPv4 too, where there is IPv6
            return server(("::", port), socket.AF_INET6)
        except OSError as error:
            if error.errno not in (errno.EAFNOSUPPORT, errno.EADDRNOTAVAIL):
                raise  # in use, forbidden: IPv4 alone would fail the same way
        return server(("0.0.0.0", port), socket.AF_INET)
    found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    # "localhost" is often ::1 then 127.0.0.1: take IPv4 first, as Go's net.Listen does
    # (node_exporter's web.listen-address); a name is listened on at one address only.
    family, _, _, _, address = min(found, key=lambda info: info[0] != socket.AF_INET)
    return server(address, family)


class HttpOutput:
    """Serves the last batch written at http(s)://LISTEN/metrics; OutputFailed if it cannot
    listen, or cannot serve what `web_config_file` (TLS, basic auth) asks for.

    max_clients: requests served at once, counted once their headers are in (one more gets
    503); header_timeout: seconds a connection has from its accept to its last request header,
    TLS handshake included (then it is closed); client_timeout: seconds a request has to take
    its answer; max_connections: connections open at once (one more closes the oldest that
    has sent no request yet)."""

    def __init__(
        self,
        listen: str,
        log: Logger | None = None,
        *,
        max_clients: int = MAX_CLIENTS,
        client_timeout: float = CLIENT_TIMEOUT,
        header_timeout: float = HEADER_TIMEOUT,
        max_connections: int = MAX_CONNECTIONS,
        web_config_file: str = "",
    ) -> None:
        limits = Limits(max_clients, client_timeout, header_timeout, max_connections)
        if limits.problem():
            raise ValueError(f"http: {limits.problem()}")
        self.listen = listen
        logger = log if log is not None else Logger()
        secure = security(web_config_file)
        try:
            host, port = parse_listen(listen)
            self._server = bind(host, port, logger, limits, secure)
        except (OSError, ValueError) as error:  # in use, EACCES, no such address or name
            reason = (isinstance(error, OSError) and error.strerror) or str(error)
            raise OutputFailed(f"http: cannot listen on {listen}: {reason}") from None
        host, port = self._server.socket.getsockname()[:2]
        self._address = (str(host), int(port))  # kept: the socket's is gone after close()
        if host in ("0.0.0.0", "::") and not web_config_file:  # as node_exporter does: say so
            logger.info(f"http: serving /metrics on every interface ({listen}), without TLS "
                        "or basic auth: give an address (127.0.0.1:PORT) or --web.config.file "
                        "to restrict it")  # fmt: skip
        self._closed = False
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": STOP_POLL_SEC},
            name="diskprobe-http",
            daemon=True,
        )
        self._thread.start()

    @property
    def address(self) -> tuple[str, int]:
        """The bound (host, port): with port 0 in `listen`, the port the system chose."""
        return self._address

    def write(self, text: str) -> None:
        self._server.page = Page(text)  # one reference swap: scrapes get old or new, whole

    def close(self) -> None:
        """Stop listening and hang up on every client; returns within STOP_POLL_SEC or so."""
        if self._closed:
            return
        self._closed = True
        self._server.shutdown()  # waits for the accepting loop to notice: STOP_POLL_SEC
        self._server.server_close()
        self._server.hang_up_all()
