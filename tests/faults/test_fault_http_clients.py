"""The /metrics server under connections that never send a request (issue #37, item 2).

A client slot was taken at connect time: 8 sockets that never sent a byte made every scrape
answer 503 for as long as they were held, before any authentication. Each case runs the
installed command (`--output http --listen 127.0.0.1:PORT`, a fake host), holds N idle
sockets open (re-opening those the server closed at its header timeout), and scrapes 5 times
in a row: each scrape must be answered 200 with the page. Over TLS with basic auth, the idle
sockets are plain TCP connections that never start their handshake.

No case bounds how long anything took: a scrape that waited for a slot would wait for the
idle sockets, which never send, until the hang guard (HANG_GUARD_SEC, the scrape's socket
timeout); on the code before, it got its 503 (or, over TLS, a closed connection) at once.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import subprocess
from pathlib import Path
from typing import Callable

import pytest

from test_http_auth_tls import Pki, basic, make_hash

from ci import HANG_GUARD_SEC, guarded, wait_until
from faultlib import FakeHost, assert_no_traceback, start_diskprobe
from ports import free_port

Scrape = Callable[[], tuple[int, bytes]]
SCRAPES = 5
PASSWORD = b"scrape-secret"


def start_server(
    tmp_path: Path, host: FakeHost, reap: list[subprocess.Popen[bytes]], tls: bool
) -> tuple[int, Scrape]:
    """The port of the installed diskprobe serving /metrics on loopback, and a scrape."""
    config = tmp_path / "diskprobe.toml"
    config.write_text(f'state_file = "{tmp_path / "state.json"}"\n[smart]\nenabled = false\n')
    port = free_port()
    args = ["--config", str(config), "--interval", "1s", "--output", "http", "--listen",
            f"127.0.0.1:{port}"]  # fmt: skip
    headers: dict[str, str] = {}
    context: ssl.SSLContext | None = None
    if tls:
        pki = Pki(tmp_path)
        web = tmp_path / "web.yml"
        web.write_text(
            f"tls_server_config:\n  cert_file: {pki.server_cert}\n  key_file: {pki.server_key}\n"
            f"basic_auth_users:\n  prom: {make_hash(PASSWORD)}\n"
        )
        args += ["--web.config.file", str(web)]
        headers = {"Authorization": basic(b"prom", PASSWORD)}
        context = ssl.create_default_context(cafile=pki.ca)
    process = start_diskprobe(args, host.env(), stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL)  # fmt: skip
    reap.append(process)

    def scrape() -> tuple[int, bytes]:
        connection = (
            http.client.HTTPSConnection("127.0.0.1", port, timeout=HANG_GUARD_SEC, context=context)
            if context is not None
            else http.client.HTTPConnection("127.0.0.1", port, timeout=HANG_GUARD_SEC)
        )
        try:
            connection.request("GET", "/metrics", headers=headers)
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    return port, scrape


def served(scrape: Scrape) -> bool:
    with contextlib.suppress(OSError):
        return scrape()[0] == 200
    return False


def open_and_silent(sock: socket.socket) -> bool:
    """The server has neither sent anything on `sock` nor closed it."""
    try:
        sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except BlockingIOError:
        return True
    except OSError:
        return False
    return False


def hold(port: int, sockets: list[socket.socket], count: int) -> None:
    """`count` idle connections in `sockets`: the ones the server closed replaced by new ones."""
    for sock in [sock for sock in sockets if not open_and_silent(sock)]:
        sockets.remove(sock)
        sock.close()
    while len(sockets) < count:
        sockets.append(socket.create_connection(("127.0.0.1", port), timeout=HANG_GUARD_SEC))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("idle", "tls"), [(8, False), (50, False), (50, True)], ids=["8", "50", "50-tls-auth"]
)
def test_idle_connections_never_deny_a_scrape(
    tmp_path: Path, fake_host: FakeHost, reap: list[subprocess.Popen[bytes]], idle: int, tls: bool
) -> None:
    port, scrape = start_server(tmp_path, fake_host, reap, tls)
    wait_until(lambda: served(scrape), "the first page")
    sockets: list[socket.socket] = []
    answers: list[tuple[int, bytes]] = []
    try:
        for _ in range(SCRAPES):
            # Connected before the scrape: accepted before it (one listening queue, in order).
            hold(port, sockets, idle)
            answers.append(guarded(scrape, "a scrape beside idle connections"))
    finally:
        for sock in sockets:
            sock.close()
    assert [status for status, _ in answers] == [200] * SCRAPES, answers
    assert all(b"diskprobe_io_" in body for _, body in answers)
    assert reap[0].poll() is None
    reap[0].terminate()
    _, stderr = reap[0].communicate(timeout=HANG_GUARD_SEC)
    assert_no_traceback(stderr)
