"""output kind = "http": the /metrics server, over real sockets on 127.0.0.1 (port 0).

The page most tests serve is real: `diskprobe --once` with format "prometheus", run once per
module on this machine's /proc and /sys (the default collectors, SMART off).
"""

from __future__ import annotations

import array
import contextlib
import fcntl
import gzip
import http.client
import io
import re
import socket
import subprocess
import termios
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from diskprobe import __version__
from diskprobe.log import Logger
from diskprobe.outputs.base import OutputFailed
from diskprobe.outputs.http import HttpOutput, parse_listen
from diskprobe.outputs.http_server import CLIENT_THREAD, CONTENT_TYPE
from test_prometheus import _config, _diskprobe, _env

from ci import HANG_GUARD_SEC, guarded, wait_until

# One worker for the whole file under xdist: its module fixture is set up once (lanes.py).
pytestmark = pytest.mark.xdist_group("test_http_output")

# No test here measures how fast anything is (tests/bench/bench_slow_peers.py does):
# - where nothing may wait for a client, client_timeout is NEVER, so that waiting for one would
#   not end at all; HANG_GUARD_SEC, far above anything a loaded machine adds, turns that hang
#   into a failure (socket timeouts, waits, guarded calls);
# - where a client must be dropped at client_timeout (TIMEOUT), the tests check that it was not
#   dropped before (a lower bound, with the clock read before the server's starts: a slow
#   machine only makes the wait longer), and leave "how soon after" to the hang guard.
TIMEOUT = 2.0
NEVER = 3600.0
BIG = 20 * 2**20  # a page no socket buffer holds
Serve = Callable[..., HttpOutput]


# -- helpers ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_page(tmp_path_factory: pytest.TempPathFactory) -> str:
    work = tmp_path_factory.mktemp("diskprobe")
    done = subprocess.run(
        [*_diskprobe(), "--config", str(_config(work)), "--once"],
        env=_env(), capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert "diskprobe_io_reads_total{" in done.stdout, done.stdout[:500]
    return done.stdout


@pytest.fixture
def serve() -> Iterator[Serve]:
    """HttpOutput(listen="127.0.0.1:0", ...), closed after the test."""
    opened: list[HttpOutput] = []

    def start(log: Logger | None = None, **options: Any) -> HttpOutput:
        output = HttpOutput("127.0.0.1:0", log, **options)
        opened.append(output)
        return output

    yield start
    for output in opened:
        output.close()


def get(
    output: HttpOutput, path: str = "/metrics", method: str = "GET", **headers: str
) -> tuple[int, dict[str, str], bytes]:
    """(status, headers with lower-case names, body) of one request."""
    connection = http.client.HTTPConnection(*output.address, timeout=HANG_GUARD_SEC)
    try:
        connection.request(
            method, path, headers={k.replace("_", "-"): v for k, v in headers.items()}
        )
        response = connection.getresponse()
        body = response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, body
    finally:
        connection.close()


def raw(output: HttpOutput, request: bytes) -> bytes:
    """Everything the server sends back for `request`, until it closes the connection."""
    with socket.create_connection(output.address, timeout=HANG_GUARD_SEC) as sock:
        sock.sendall(request)
        return drain(sock)


def drain(sock: socket.socket) -> bytes:
    """What a socket still has to read, until the end or a reset."""
    sock.settimeout(HANG_GUARD_SEC)
    chunks = []
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def client_threads() -> int:
    return sum(1 for thread in threading.enumerate() if thread.name == CLIENT_THREAD)


def silent_and_open(sock: socket.socket) -> bool:
    """Nothing came from the server on `sock`, and it has not closed or reset it (yet)."""
    timeout = sock.gettimeout()
    sock.setblocking(False)  # with a timeout, recv would first wait for data
    try:
        sock.recv(1, socket.MSG_PEEK)
    except BlockingIOError:
        return True
    except ConnectionResetError:
        return False
    finally:
        sock.settimeout(timeout)
    return False  # a byte, or the end


def unread(sock: socket.socket) -> int:
    """Bytes waiting in a socket's receive queue."""
    count = array.array("i", [0])
    fcntl.ioctl(sock.fileno(), termios.FIONREAD, count)
    return count[0]


def stuck_client(output: HttpOutput) -> socket.socket:
    """A client that asks for /metrics and never reads, with a receive buffer as small as can be;
    returned once the body started arriving: the server is then in the send of the page."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(HANG_GUARD_SEC)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    sock.connect(output.address)
    sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")

    def body_started() -> bool:
        _, end, body = sock.recv(65536, socket.MSG_PEEK).partition(b"\r\n\r\n")
        return bool(end and body)

    try:
        wait_until(lambda: unread(sock) > 0 and body_started(), "the start of the page")
    except BaseException:
        sock.close()
        raise
    return sock


def big_page(letter: str) -> str:
    return (letter * 1023 + "\n") * (BIG // 1024)


# -- what a scrape gets ------------------------------------------------------------------------


def test_503_until_the_first_batch_then_the_page_and_the_next_one(
    serve: Serve, real_page: str
) -> None:
    output = serve()
    status, headers, body = get(output)
    assert (status, headers["content-type"]) == (503, "text/plain; charset=utf-8")
    assert body == b"no metrics collected yet\n"
    output.write(real_page)
    status, headers, body = get(output)
    assert status == 200 and body == real_page.encode()
    assert headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert headers["content-length"] == str(len(body)) and "content-encoding" not in headers
    families = {family.name for family in text_string_to_metric_families(body.decode())}
    assert "diskprobe_io_reads" in families  # the counter diskprobe_io_reads_total
    io_only = "".join(line for line in real_page.splitlines(True) if "diskprobe_io_" in line)
    output.write(io_only)
    assert get(output)[2] == io_only.encode() != body


def test_the_query_string_is_ignored(serve: Serve, real_page: str) -> None:
    output = serve()
    output.write(real_page)
    assert get(output, "/metrics?collect[]=io&x=1")[2] == real_page.encode()


@pytest.mark.parametrize(
    ("accept", "gzipped"),
    [
        ("gzip", True),
        ("deflate, gzip;q=0.5", True),
        ("*", True),
        ("GZIP ; Q=1", True),
        ("gzip;q=0", False),
        ("gzip;q=0.000, *", False),  # gzip refused by name: the wildcard does not bring it back
        ("*;q=0", False),
        ("identity", False),
        ("gzip;q=bogus", False),
        (None, False),
    ],
)
def test_gzip_when_accept_encoding_allows_it(
    serve: Serve, real_page: str, accept: str | None, gzipped: bool
) -> None:
    output = serve()
    output.write(real_page)
    status, headers, body = get(output, **({"Accept-Encoding": accept} if accept else {}))
    assert status == 200 and headers["vary"] == "Accept-Encoding"
    assert headers["content-length"] == str(len(body))
    if gzipped:
        assert headers["content-encoding"] == "gzip"
        assert gzip.decompress(body) == real_page.encode() and len(body) < len(real_page)
    else:
        assert "content-encoding" not in headers and body == real_page.encode()


def test_a_page_is_compressed_once_however_many_scrapes_want_it(
    serve: Serve, real_page: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    compressed: list[int] = []
    compress = gzip.compress

    def counting(data: bytes, *args: object, **options: object) -> bytes:
        compressed.append(len(data))
        time.sleep(0.1)  # the other scrapes arrive while this one compresses
        return compress(data, *args, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(gzip, "compress", counting)
    output = serve()
    output.write(real_page)
    bodies: list[bytes] = []
    scrapers = [
        threading.Thread(target=lambda: bodies.append(get(output, Accept_Encoding="gzip")[2]))
        for _ in range(6)
    ]
    for thread in scrapers:
        thread.start()
    for thread in scrapers:
        thread.join(HANG_GUARD_SEC)
    assert len(bodies) == 6 and all(gzip.decompress(b) == real_page.encode() for b in bodies)
    assert compressed == [len(real_page.encode())]
    output.write(real_page[: len(real_page) // 2])
    get(output, Accept_Encoding="gzip")
    get(output, Accept_Encoding="gzip")
    assert len(compressed) == 2, "the new page is compressed once more, and only once"


def test_head_the_landing_page_404_and_405(serve: Serve, real_page: str) -> None:
    output = serve()
    output.write(real_page)
    answer = raw(output, b"HEAD /metrics HTTP/1.0\r\n\r\n")
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 200 ") and body == b""
    assert f"Content-Length: {len(real_page.encode())}\r\n".encode() in head + b"\r\n"
    assert f"Content-Type: {CONTENT_TYPE}".encode() in head
    status, headers, landing = get(output, "/")
    assert status == 200 and headers["content-type"] == "text/html; charset=utf-8"
    text = landing.decode()
    assert "<title>diskprobe</title>" in text and '<a href="/metrics">' in text
    assert f"version {__version__}" in text
    for path in ("/metric", "/metrics/", "/favicon.ico"):
        assert get(output, path)[0] == 404, path
    for method in ("POST", "PUT", "DELETE", "OPTIONS", "BREW"):
        status, headers, _ = get(output, "/metrics", method)
        assert (status, headers["allow"]) == (405, "GET, HEAD"), method


# -- clients that hold on ----------------------------------------------------------------------


def test_requests_at_the_limit_block_neither_writes_nor_the_busy_answer(
    serve: Serve, real_page: str
) -> None:
    """8 requests whose answers are never read hold every slot, for an hour (NEVER): write()
    and the 503 to one more request cannot be waiting for them, or they would not come."""
    output = serve(client_timeout=NEVER, header_timeout=NEVER)  # max_clients 8, the default
    output.write(big_page("x"))
    holders: list[socket.socket] = []
    try:
        for _ in range(8):  # each in the send of the page when it is returned
            holders.append(stuck_client(output))
        guarded(lambda: output.write(real_page), "write() waited for the clients")
        # One more request: told 503 at once; one that waited for a slot would time out.
        assert get(output)[::2] == (503, b"too many scrapes at once\n")
        # One more that sends nothing: no slot to wait for, no answer either (yet).
        with socket.create_connection(output.address, timeout=HANG_GUARD_SEC) as idle:
            wait_until(lambda: client_threads() == 9, "the idle connection's thread")
            assert get(output)[0] == 503 and silent_and_open(idle)
        wait_until(lambda: client_threads() == 8, "the 503s' and the idle one's threads' end")
    finally:
        for holder in holders:
            holder.close()  # with unread data: a reset, which ends their sends
    wait_until(lambda: client_threads() == 0, "the holders' threads, after they hung up")
    assert get(output)[2] == real_page.encode()


def test_connections_without_a_request_hold_no_slot(serve: Serve, real_page: str) -> None:
    """Issue #37, item 2: a slot was taken at connect time, so 8 sockets that never sent a
    byte answered every scrape 503. 50 connections that send nothing, or half a request, kept
    open for an hour (header_timeout NEVER), and every scrape still gets the page: one that
    waited for them would wait for ever."""
    output = serve(header_timeout=NEVER)
    output.write(real_page)
    idle = [socket.create_connection(output.address, timeout=HANG_GUARD_SEC) for _ in range(50)]
    try:
        for sock in idle[::2]:  # every other one: a request line and a header, no end
            sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        wait_until(lambda: client_threads() == 50, "the idle connections' threads")
        for _ in range(5):
            assert guarded(lambda: get(output), "a scrape")[::2] == (200, real_page.encode())
        assert all(silent_and_open(sock) for sock in idle), "an idle connection was closed"
    finally:
        for sock in idle:
            sock.close()
    wait_until(lambda: client_threads() == 0, "the idle connections' threads, after hang-up")


def test_at_max_connections_the_oldest_without_a_request_is_closed(serve: Serve) -> None:
    """At max_connections, a new connection closes the oldest that has sent no request:
    never one being answered (the oldest of all here, a client that never reads), never the
    new one. With every open connection a request, the new one gets 503 and is closed."""
    output = serve(max_connections=10, client_timeout=NEVER, header_timeout=NEVER)
    output.write(big_page("x"))
    stuck = stuck_client(output)
    idle: list[socket.socket] = []
    try:
        for count in range(2, 11):  # one at a time: accepted in this order
            idle.append(socket.create_connection(output.address, timeout=HANG_GUARD_SEC))
            wait_until(lambda n=count: client_threads() == n, "the idle connection's thread")
        output.write("up 1\n")
        assert get(output)[::2] == (200, b"up 1\n"), "the new connection was refused"
        assert drain(idle[0]) == b"", "the oldest idle connection was answered"
        assert all(silent_and_open(sock) for sock in idle[1:]), "a newer one was closed"
        received = drain(stuck)  # the whole page: not cut off to make room
        assert received.startswith(b"HTTP/1.0 200 ") and received.endswith(b"x\n")
        assert len(received.partition(b"\r\n\r\n")[2]) == BIG // 1024 * 1024
    finally:
        for sock in [stuck, *idle]:
            sock.close()
    full = serve(max_clients=2, max_connections=2, client_timeout=NEVER, header_timeout=NEVER)
    full.write(big_page("x"))
    answering = [stuck_client(full), stuck_client(full)]
    try:
        assert raw(full, b"").startswith(b"HTTP/1.0 503 "), "nothing to close: refused"
    finally:
        for sock in answering:
            sock.close()


def test_an_idle_client_is_dropped_at_header_timeout_not_before(serve: Serve) -> None:
    output = serve(header_timeout=TIMEOUT, client_timeout=NEVER)
    output.write("up 1\n")
    # Read before the connection exists: the server starts its clock for it later, so it
    # cannot drop it less than TIMEOUT after this, however slow the machine.
    start = time.monotonic()
    with socket.create_connection(output.address, timeout=HANG_GUARD_SEC) as idle:
        assert idle.recv(100) == b"", "dropped without an answer"  # never dropped: a timeout
        assert time.monotonic() - start >= TIMEOUT, "dropped before header_timeout"
    wait_until(lambda: client_threads() == 0, "the dropped client's thread")


def test_a_request_sent_a_byte_at_a_time_gets_header_timeout_in_all(serve: Serve) -> None:
    """header_timeout bounds the whole request, not each recv: a client trickling its request,
    each byte well inside the timeout, is dropped while it still trickles. The trickle lasts
    60 times header_timeout (at least: a slow machine only stretches the gaps), so only a
    server that restarted the clock at each byte lets it finish, and answers it."""
    timeout = 1.0
    gap = timeout / 20
    pad = b"a" * int(60 * timeout / gap)
    request = b"GET /metrics HTTP/1.0\r\nX-Pad: " + pad + b"\r\n\r\n"
    output = serve(header_timeout=timeout, client_timeout=NEVER)
    output.write("up 1\n")
    sent = 0
    with socket.create_connection(output.address, timeout=HANG_GUARD_SEC) as slow:
        while sent < len(request) and silent_and_open(slow):
            try:
                slow.send(request[sent : sent + 1])
            except OSError:
                break  # dropped: the connection is closed or reset
            sent += 1
            time.sleep(gap)
        received = drain(slow)
    assert sent < len(request), "each byte restarted the clock"
    assert received == b"", received[:100]  # dropped, not answered
    wait_until(lambda: client_threads() == 0, "the trickling client's thread")


def test_a_client_that_never_reads_blocks_neither_writes_nor_scrapes(
    serve: Serve, real_page: str
) -> None:
    """3 clients that never read their answer, for an hour (NEVER): write() and other scrapes
    cannot be waiting for them, or they would not come; and they share the page's bytes."""
    output = serve(client_timeout=NEVER)
    output.write(big_page("x"))  # before tracing: the page itself is not counted
    stuck: list[socket.socket] = []
    try:
        tracemalloc.start()
        try:
            for _ in range(3):  # each in the send of the page when it is returned
                stuck.append(stuck_client(output))
            # While the three are blocked in their sends, what they send is alive: a copy of
            # the page would be a traced block of its size (a count, not a memory figure).
            copies = [t for t in tracemalloc.take_snapshot().traces if t.size >= BIG]
        finally:
            tracemalloc.stop()
        assert copies == [], f"{len(copies)} copies of the page for 3 slow clients"
        guarded(lambda: output.write(real_page), "write() waited for a slow client")
        for _ in range(3):  # the scrapes waited for the stuck clients: a socket timeout
            status, _, body = get(output)
            assert (status, body) == (200, real_page.encode())
        # The scrapes' threads end; the stuck clients' go on, still sending the old page.
        wait_until(lambda: client_threads() == 3, "the scrapes' threads' end")
    finally:
        for sock in stuck:
            sock.close()  # with unread data: a reset, which ends their sends
    wait_until(lambda: client_threads() == 0, "the stuck clients' threads, after they hung up")


def test_a_client_that_never_reads_is_dropped_at_client_timeout_not_before(
    serve: Serve,
) -> None:
    output = serve(client_timeout=TIMEOUT)
    output.write(big_page("x"))
    # Read before the request is sent: the server starts the answer's clock later, so it
    # cannot drop the client less than TIMEOUT after this, however slow the machine.
    start = time.monotonic()
    sock = stuck_client(output)
    try:
        wait_until(lambda: client_threads() == 0, "the stuck client dropped")
        assert time.monotonic() - start >= TIMEOUT, "dropped before client_timeout"
        received = drain(sock)  # what it got: the start of the page, cut off
        assert received.startswith(b"HTTP/1.0 200 ") and len(received) < BIG
        assert received.partition(b"\r\n\r\n")[2].strip(b"x\n") == b""
    finally:
        sock.close()


def test_scrapes_during_writes_get_one_whole_page_each(serve: Serve) -> None:
    pages = ["A" * 100_000 + "\n", "B" * 300_000 + "\n"]
    wanted = {page.encode() for page in pages}
    output = serve()
    output.write(pages[0])
    stop = threading.Event()

    def writer() -> None:
        turn = 0
        while not stop.is_set():
            turn += 1
            output.write(pages[turn % 2])

    bodies: list[bytes] = []
    problems: list[str] = []

    def scraper(number: int) -> None:
        for scrape in range(50):
            zipped = (number + scrape) % 2 == 0
            status, headers, body = get(output, **({"Accept_Encoding": "gzip"} if zipped else {}))
            if zipped and headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            bodies.append(body)
            if status != 200 or int(headers["content-length"]) <= 0:
                problems.append(f"{status} {headers}")

    threads = [threading.Thread(target=writer)]
    threads += [threading.Thread(target=scraper, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads[1:]:
        thread.join(HANG_GUARD_SEC)
    stop.set()
    threads[0].join(HANG_GUARD_SEC)
    assert problems == [] and len(bodies) == 200
    mixed = [body[:20] + b"..." + body[-20:] for body in bodies if body not in wanted]
    assert mixed == [], f"{len(mixed)} scrapes got no single page"
    assert {body[:1] for body in bodies} == {b"A", b"B"}, "the writes never overlapped a scrape"


def test_close_returns_at_once_and_hangs_up_on_stuck_clients() -> None:
    """With client_timeout and header_timeout an hour (NEVER), a close() that waited for its
    clients would not return: the guard catches that, with no bound on how long a prompt
    close() takes."""
    output = HttpOutput("127.0.0.1:0", client_timeout=NEVER, header_timeout=NEVER)
    output.write(big_page("x"))
    stuck = [stuck_client(output), socket.create_connection(output.address, HANG_GUARD_SEC)]
    try:
        wait_until(lambda: client_threads() == 2, "the 2 clients' threads")
        guarded(output.close, "close() waited for client_timeout")
        wait_until(lambda: client_threads() == 0, "the clients' threads, hung up on")
        for sock in stuck:  # hung up on: the end (after what was sent), not a timeout
            drain(sock)
            assert not silent_and_open(sock)
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(output.address, timeout=HANG_GUARD_SEC).close()
        output.close()  # a second close is harmless
    finally:
        output.close()  # if the first one failed
        for sock in stuck:
            sock.close()


# -- where it listens --------------------------------------------------------------------------


def test_an_address_in_use_is_output_failed_naming_it() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        listen = f"127.0.0.1:{taken.getsockname()[1]}"
        with pytest.raises(OutputFailed) as failure:
            HttpOutput(listen)
    assert str(failure.value) == f"http: cannot listen on {listen}: Address already in use"


@pytest.mark.parametrize(
    ("listen", "reason"),
    [
        ("192.0.2.1:0", "Cannot assign requested address"),  # TEST-NET-1: on no interface
        ("[::1:9100", "expected ADDRESS:PORT"),
    ],
)
def test_an_address_that_cannot_be_listened_on_is_output_failed(listen: str, reason: str) -> None:
    with pytest.raises(OutputFailed, match=r"^http: cannot listen on ") as failure:
        HttpOutput(listen)
    assert listen in str(failure.value) and reason in str(failure.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (":9100", ("", 9100)),
        ("127.0.0.1:9100", ("127.0.0.1", 9100)),
        ("[::1]:9100", ("::1", 9100)),
        ("[fe80::1%eth0]:9100", ("fe80::1%eth0", 9100)),
        ("localhost:9100", ("localhost", 9100)),
        ("node-1.example.org:65535", ("node-1.example.org", 65535)),
        (":0", ("", 0)),
    ],
)
def test_parse_listen_reads_address_and_port(text: str, expected: tuple[str, int]) -> None:
    assert parse_listen(text) == expected


@pytest.mark.parametrize(
    "text",
    ["host:99999", "nocolon", "", ":abc", ":", "::1:9100", "[::1]", "[]:9100", "[1.2.3.4]:80",
     "300.1.1.1:9100", "1.2.3:9100", " :9100", ":9100 ", "a b:9100", ":-1", ":+80", ":١٢"],
)  # fmt: skip
def test_parse_listen_refuses_malformed_values(text: str) -> None:
    with pytest.raises(ValueError, match=r"expected ADDRESS:PORT") as failure:
        parse_listen(text)
    assert repr(text) in str(failure.value)


def test_every_interface_takes_ipv4_and_ipv6_clients() -> None:
    output = HttpOutput(":0")
    try:
        output.write("up 1\n")
        host, port = output.address
        if host == "0.0.0.0":
            pytest.skip("no IPv6 here: ':PORT' listens on IPv4 only")
        assert host == "::"
        for address in ("127.0.0.1", "::1"):
            connection = http.client.HTTPConnection(address, port, timeout=HANG_GUARD_SEC)
            connection.request("GET", "/metrics")
            assert connection.getresponse().read() == b"up 1\n", address
            connection.close()
    finally:
        output.close()


def test_localhost_is_listened_on_at_its_ipv4_address() -> None:
    found = {info[4][0] for info in socket.getaddrinfo("localhost", 0, type=socket.SOCK_STREAM)}
    if "127.0.0.1" not in found:
        pytest.skip(f"localhost is {found} here")
    output = HttpOutput("localhost:0")
    try:
        assert output.address[0] == "127.0.0.1"
    finally:
        output.close()


# -- quiet -------------------------------------------------------------------------------------


def test_nothing_reaches_stderr_and_debug_gets_the_requests(
    serve: Serve, real_page: str, capfd: pytest.CaptureFixture[str]
) -> None:
    quiet = serve()  # the default Logger: debug off
    quiet.write(real_page)
    stream = io.StringIO()
    chatty = serve(Logger(stream, debug=True))
    chatty.write(big_page("x"))
    for output in (quiet, chatty):
        assert get(output)[0] == 200
        # http.server takes one word for an HTTP/0.9 request: the answer is a bare body.
        assert b"Error code: 400" in raw(output, b"garbage\r\n\r\n")
        long_line = b"GET /" + b"x" * 70_000 + b" HTTP/1.0\r\n\r\n"
        assert raw(output, long_line).startswith(b"HTTP/1.0 414 ")
        assert raw(output, b"GET /\x1b[2J HTTP/1.0\r\n\r\n").startswith(b"HTTP/1.0 404 ")
        with socket.create_connection(output.address, timeout=HANG_GUARD_SEC) as rude:
            # Asks for the page, then resets the connection mid-answer: an exception in the
            # handler, which must neither end the server nor print a traceback.
            rude.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
            rude.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
            )
        wait_until(lambda: client_threads() == 0, "the rude client's thread")
        assert get(output)[0] == 200, "the server survived"
    captured = capfd.readouterr()
    assert (captured.out, captured.err) == ("", "")
    log = stream.getvalue()
    assert '"GET /metrics HTTP/1.1" 200' in log and "code 414" in log, log
    assert "\\x1b[2J" in log and "\x1b" not in log, "a control character reached the log"
    assert re.search(r"(ConnectionReset|BrokenPipe)Error", log), (
        "the reset client's exception was not logged at debug"
    )


def test_a_web_config_that_no_longer_loads_at_open_is_one_output_error(tmp_path: Path) -> None:
    # Checked at start as config, the file is read again when the output opens: changed or
    # removed meanwhile, that is one E! line (OutputFailed), not a traceback (ValueError).
    web = tmp_path / "web.yml"
    web.write_text("basic_auth_users:\n  alice: not-a-bcrypt-hash\n")
    with pytest.raises(OutputFailed, match=r"^http: .*web\.yml:2: .*alice"):
        HttpOutput("127.0.0.1:0", web_config_file=str(web))
    with pytest.raises(OutputFailed, match=r"^http: .*missing\.yml"):
        HttpOutput("127.0.0.1:0", web_config_file=str(tmp_path / "missing.yml"))


def test_every_interface_without_auth_is_said_once() -> None:
    """Issue #25, item 10: `--listen :PORT` binds every interface, without TLS or basic auth,
    as node_exporter's :9100 does; one I! line says so (and how to restrict it)."""
    for listen, said in ((":0", True), ("127.0.0.1:0", False)):
        stream = io.StringIO()
        output = HttpOutput(listen, Logger(stream))
        try:
            lines = stream.getvalue().splitlines()
            expected = (f"I! http: serving /metrics on every interface ({listen}), without TLS "
                        "or basic auth: give an address (127.0.0.1:PORT) or --web.config.file "
                        "to restrict it")  # fmt: skip
            assert lines == ([expected] if said else []), lines
        finally:
            output.close()
