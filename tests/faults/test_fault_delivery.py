"""Direct InfluxDB output under a misbehaving server or a full spool (issue #11, items 15-16).

The end-to-end cases run the installed command with `--trigger stdin` (one batch per line the
test writes, so the number of batches produced is exact) against a loopback HTTP server written
here, which answers what the case needs and records every line it accepted. Points lost are
counted from what diskprobe produced (batches x points per batch) against what the server
accepted, independently of diskprobe's own accounting; the sum of the `dropped_points` fields
the server accepted must equal that, exactly.

No case bounds how long something took: waits are hang guards (HANG_GUARD_SEC), and the
retry schedule is read from diskprobe's debug line and the server's own record.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Callable

import pytest

from ci import HANG_GUARD_SEC, skip_or_fail
from faultlib import FakeHost, assert_no_traceback, start_diskprobe, wait_for

OUTPUT_POINT = "diskprobe_agent,collector=output,"
RETRY_IN = re.compile(r"output influxdb: retry in ([0-9.e+-]+)s")  # the --debug line
Answer = tuple[int, dict[str, str]]  # HTTP status, extra headers


@dataclass
class Request:
    at: float  # time.time() when it arrived
    status: int
    lines: list[str]


@dataclass
class LoopbackInflux:
    """An InfluxDB v2 write endpoint on loopback; `answer` decides each reply."""

    answer: Callable[[], Answer] = lambda: (204, {})
    requests: list[Request] = field(default_factory=list)
    message: str = "no"  # what a refusal says (InfluxDB's JSON error body)

    def start(self) -> str:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                status, headers = owner.answer()
                lines = [line for line in body.decode().splitlines() if line.strip()]
                owner.requests.append(Request(time.time(), status, lines))
                error = {"code": "invalid", "message": owner.message}
                payload = b"" if status == 204 else json.dumps(error).encode()
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *_args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def batches(self) -> dict[str, list[str]]:
        """Accepted batches, keyed by their output point (a re-sent batch counts once)."""
        found: dict[str, list[str]] = {}
        for request in (r for r in self.requests if r.status == 204):
            current: list[str] = []
            for line in request.lines:
                current.append(line)
                if line.startswith(OUTPUT_POINT):
                    found[line] = current
                    current = []
        return found


def dropped_points(batches: dict[str, list[str]]) -> int:
    return sum(int(re.search(r"dropped_points=(\d+)i", key).group(1)) for key in batches)  # type: ignore[union-attr]


@pytest.fixture
def server() -> Iterator[LoopbackInflux]:
    loopback = LoopbackInflux()
    yield loopback
    loopback.stop()


class Probe:
    """The installed diskprobe, one batch per `gather()`, stderr collected by a thread."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.stderr: list[str] = []
        threading.Thread(target=self._drain, args=(process.stderr,), daemon=True).start()

    def _drain(self, stream: IO[bytes]) -> None:
        for line in stream:
            self.stderr.append(line.decode("utf-8", "replace"))

    def gather(self, count: int = 1) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(b"\n" * count)
        self.process.stdin.flush()

    def logged(self, text: str) -> int:
        return sum(text in line for line in list(self.stderr))

    def stop_by_eof(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        assert self.process.wait(HANG_GUARD_SEC) == 0, "".join(self.stderr)

    def planned_retries(self) -> list[float]:
        """The waits the sender chose after each failure (before jitter), from --debug."""
        return [float(m.group(1)) for m in RETRY_IN.finditer("".join(self.stderr))]


def start_probe(
    tmp_path: Path, host: FakeHost, url: str, reap: list[subprocess.Popen[bytes]], **output: str
) -> Probe:
    settings = {"spool_dir": f'"{tmp_path / "spool"}"', "timeout": '"2s"', **output}
    (tmp_path / "diskprobe.toml").write_text(
        f'state_file = "{tmp_path / "state.json"}"\n[smart]\nenabled = false\n[output]\n'
        + "".join(f"{key} = {value}\n" for key, value in settings.items())
    )
    args = ["--config", str(tmp_path / "diskprobe.toml"), "--trigger", "stdin", "--output",
            "influxdb", "--url", url, "--org", "o", "--bucket", "b", "--debug"]  # fmt: skip
    process = start_diskprobe(
        args, {**host.env(), "INFLUX_TOKEN": "fault-token"}, stdout=subprocess.DEVNULL
    )
    reap.append(process)
    return Probe(process)


def assert_every_loss_reported(server: LoopbackInflux, probe: Probe, produced: int) -> int:
    """Exact: sum(dropped_points) accepted == points produced - points accepted."""
    batches = server.batches()
    sizes = {len(lines) for lines in batches.values()}
    assert len(sizes) == 1, f"batches differ in size: {sizes}"
    lost = (produced - len(batches)) * sizes.pop()
    assert lost > 0, "the case lost nothing: it proves nothing"
    assert dropped_points(batches) == lost, "".join(probe.stderr)
    assert_no_traceback("".join(probe.stderr))
    return lost


# -- 15: every lost point is reported, exactly once --------------------------------------------


@pytest.mark.slow
def test_refused_batches_are_all_reported(
    tmp_path: Path, fake_host: FakeHost, server: LoopbackInflux, reap: list[subprocess.Popen[bytes]]
) -> None:
    refusing = True
    server.answer = lambda: (400, {}) if refusing else (204, {})
    probe = start_probe(tmp_path, fake_host, server.start(), reap)
    for number in range(1, 5):  # one at a time: each refused batch carries the previous count
        probe.gather()
        assert wait_for(lambda n=number: probe.logged("server refused batch") >= n, HANG_GUARD_SEC)
    refusing = False
    probe.gather(2)
    assert wait_for(lambda: len(server.batches()) >= 2, HANG_GUARD_SEC)
    probe.stop_by_eof()
    assert assert_every_loss_reported(server, probe, produced=6) > 0


CONFLICT = ('partial write: field type conflict: input field "util_ratio" on measurement '
            '"diskprobe_io" is type integer, already exists as type float dropped=1')  # fmt: skip


@pytest.mark.slow
def test_a_server_refusing_every_batch_is_one_error_line_then_one_info_line(
    tmp_path: Path, fake_host: FakeHost, server: LoopbackInflux, reap: list[subprocess.Popen[bytes]]
) -> None:
    """Issue #37, item 4: a persistent field-type conflict (400 to every batch) was one E! line
    per batch, for ever (9 in 10 s). 14 refused batches, as 14 s at a 1 s interval give: one
    E! with the server's message, then one more at most every 10 minutes (RefusalLog's own
    test, on a clock of its own, covers those), and one I! once a batch is accepted again."""
    refusing = True
    server.message = CONFLICT
    server.answer = lambda: (400, {}) if refusing else (204, {})
    probe = start_probe(tmp_path, fake_host, server.start(), reap, send_jitter='"0s"')
    started = time.monotonic()
    for number in range(1, 15):  # one at a time: every refusal is its own batch's
        probe.gather()
        assert wait_for(lambda n=number: probe.logged("server refused batch") >= n, HANG_GUARD_SEC)
    errors = [line for line in list(probe.stderr) if line.startswith("E! ")]
    # Only a run longer than 10 minutes (a hang, nearly) may have earned a second E! line.
    assert 1 <= len(errors) <= 1 + (time.monotonic() - started) // 600, errors
    assert errors[0].startswith("E! output influxdb: server refused batch #1 (HTTP 400: ")
    assert CONFLICT.replace('"', '\\"') in errors[0], errors[0]  # as the JSON body says it
    refusing = False
    probe.gather()
    assert wait_for(lambda: probe.logged("I! output influxdb: server accepts batches again"),
                    HANG_GUARD_SEC), "".join(probe.stderr)  # fmt: skip
    probe.stop_by_eof()
    (back,) = [line for line in probe.stderr if "accepts batches again" in line]
    assert "14 batches refused" in back, back
    assert len([line for line in probe.stderr if line.startswith("E! ")]) == len(errors)
    assert assert_every_loss_reported(server, probe, produced=15) > 0


def batch_bytes(tmp_path: Path, host: FakeHost, reap: list[subprocess.Popen[bytes]]) -> int:
    """The size of one batch on this fake host (the spool bound is set from it)."""
    healthy = LoopbackInflux()
    probe = start_probe(tmp_path / "measure", host, healthy.start(), reap)
    probe.gather()
    assert wait_for(lambda: len(healthy.batches()) == 1, HANG_GUARD_SEC)
    probe.stop_by_eof()
    healthy.stop()
    return sum(len(line) + 1 for line in next(iter(healthy.batches().values())))


@pytest.mark.slow
def test_batches_dropped_for_the_spool_bound_are_all_reported(
    tmp_path: Path, fake_host: FakeHost, server: LoopbackInflux, reap: list[subprocess.Popen[bytes]]
) -> None:
    (tmp_path / "measure").mkdir()
    bound = int(batch_bytes(tmp_path, fake_host, reap) * 2.5)  # room for two batches
    down = True
    server.answer = lambda: (500, {}) if down else (204, {})
    probe = start_probe(tmp_path, fake_host, server.start(), reap, spool_max_bytes=str(bound))
    probe.gather()
    # Failed once: the sender is in backoff.
    assert wait_for(lambda: server.requests, HANG_GUARD_SEC)
    produced = 9
    probe.gather(produced - 1)
    spool = tmp_path / "spool"
    last = f"{produced:020d}.lp"
    assert wait_for(
        lambda: (spool / last).exists() or probe.logged(f"#{produced} "), HANG_GUARD_SEC
    )
    # One E! for the whole episode (issue #25, item 7: it was one per dropped batch)
    assert probe.logged("E! output spool: full") == 1
    down = False
    # The sender may be in its longest backoff (30 s + 20 % jitter) first.
    assert wait_for(lambda: not list(spool.glob("*.lp")), 36 + HANG_GUARD_SEC)
    delivered = len(server.batches())
    probe.gather()  # carries what was still pending when the spool drained
    produced += 1
    assert wait_for(lambda: len(server.batches()) == delivered + 1, HANG_GUARD_SEC)
    probe.stop_by_eof()
    assert probe.logged("E! output spool: full") == 1
    room = [line for line in list(probe.stderr) if "I! output spool: room again; " in line]
    assert len(room) == 1 and int(room[0].split("; ")[1].split()[0]) >= 5, room
    assert_every_loss_reported(server, probe, produced)


def fill(directory: Path) -> Path:
    """Fill the file system holding `directory` to the last byte."""
    filler = directory / "filler"
    with open(filler, "wb", buffering=0) as out:
        for size in (65536, 4096, 512, 1):
            try:
                while True:
                    out.write(b"\0" * size)
            except OSError:
                pass
    return filler


@pytest.mark.slow
@pytest.mark.root
def test_batches_lost_to_a_full_disk_are_all_reported(
    tmp_path: Path, fake_host: FakeHost, server: LoopbackInflux, reap: list[subprocess.Popen[bytes]]
) -> None:
    if os.geteuid() != 0:
        skip_or_fail("needs root (mounts a small tmpfs for the spool)")
    spool = tmp_path / "spool"
    spool.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(spool)], check=True)
    try:
        probe = start_probe(tmp_path, fake_host, server.start(), reap)
        probe.gather()
        assert wait_for(lambda: len(server.batches()) == 1, HANG_GUARD_SEC)
        # Deleted after the server's answer: wait, or its deletion would free room later.
        assert wait_for(lambda: not list(spool.glob("*.lp")), HANG_GUARD_SEC)
        filler = fill(spool)
        for number in range(1, 6):  # each lost batch carried the count of the one before
            probe.gather()
            assert wait_for(
                lambda n=number: probe.logged("cannot store a batch") >= n, HANG_GUARD_SEC
            )
        filler.unlink()
        probe.gather()
        assert wait_for(lambda: len(server.batches()) == 2, HANG_GUARD_SEC)
        probe.stop_by_eof()
        assert assert_every_loss_reported(server, probe, produced=7) > 0
    finally:
        for process in reap:
            if process.poll() is None:
                process.kill()
                process.wait(10)
        subprocess.run(["umount", "-l", str(spool)], check=False)


def test_dropped_counts_survive_a_restart(tmp_path: Path) -> None:
    from diskprobe.log import Logger
    from diskprobe.outputs.spool import Spool

    def line(number: int) -> bytes:
        return f"m v={number}i {number}\n".encode()

    spool = Spool(str(tmp_path), len(line(1)) * 2, Logger(io.StringIO()))
    for number in (1, 2, 3):  # 1 is dropped for the bound
        spool.append(line(number))
    assert spool.take_dropped() == 1  # the next batch (4) carries it ...
    spool.append(line(4))  # ... and drops 2 for the bound
    spool.close()
    spool = Spool(str(tmp_path), len(line(1)) * 2, Logger(io.StringIO()))
    assert spool.take_dropped() == 1  # 2's point; 4 still carries 1
    spool.append(line(5))  # carries 1 (2's point); drops 3
    spool.close()
    spool = Spool(str(tmp_path), len(line(1)) * 2, Logger(io.StringIO()))
    assert spool.take_dropped() == 1  # 3's point, offered but never stored ...
    spool.close()
    spool = Spool(str(tmp_path), len(line(1)) * 2, Logger(io.StringIO()))
    assert spool.take_dropped() == 1  # ... so still pending after a restart
    spool.append(line(6))  # carries 1; drops 4 with the 1 it carried
    assert spool.take_dropped() == 2 and spool.unreported_drops() == 2 + 1 + 1
    spool.done([seq for seq, _ in spool.take(10**6)], delivered=True)  # 5 and 6 arrive
    spool.close()
    spool = Spool(str(tmp_path), len(line(1)) * 2, Logger(io.StringIO()))
    assert spool.unreported_drops() == 2 and spool.take_dropped() == 2
    assert json.loads((tmp_path / ".dropped.json").read_text()) == {"pending": 2, "carried": {}}


# -- 16: Retry-After ---------------------------------------------------------------------------


def http_date(seconds_from_now: int) -> tuple[str, float]:
    """An HTTP date a whole number of seconds ahead, and the instant it names."""
    when = float(int(time.time()) + seconds_from_now)
    return formatdate(when, usegmt=True), when


@pytest.mark.slow
@pytest.mark.parametrize("status,form", [(429, "seconds"), (503, "date")])
def test_retry_after_is_honoured(
    tmp_path: Path,
    fake_host: FakeHost,
    server: LoopbackInflux,
    reap: list[subprocess.Popen[bytes]],
    status: int,
    form: str,
) -> None:
    earliest: list[float] = []

    def answer() -> Answer:
        if server.requests:
            return 204, {}
        if form == "seconds":
            earliest.append(time.time() + 2)
            return status, {"Retry-After": "2"}
        value, when = http_date(3)
        earliest.append(when)
        return status, {"Retry-After": value}

    server.answer = answer
    probe = start_probe(tmp_path, fake_host, server.start(), reap)
    probe.gather()
    assert wait_for(lambda: len(server.requests) >= 2, HANG_GUARD_SEC)
    retried = server.requests[1].at
    # No earlier than asked (10 ms for clock granularity): a loaded machine only makes it later.
    assert earliest[0] - 0.01 <= retried, retried - earliest[0]
    # Not planned later than asked either (a late retry on a loaded machine is no bug, so the
    # plan is checked, not the clock): 2 s, or what was left of the date when the 429/503 came
    # (at most 3 s, more than the sender's own first backoff of 1 s).
    assert wait_for(lambda: probe.planned_retries(), HANG_GUARD_SEC), probe.stderr
    (planned,) = probe.planned_retries()
    if form == "seconds":
        assert planned == 2.0, probe.stderr
    else:  # the date came with the answer, which arrived after the server noted the request
        assert planned <= earliest[0] - server.requests[0].at + 0.01, planned
    probe.stop_by_eof()
    assert_no_traceback("".join(probe.stderr))


@pytest.mark.slow
@pytest.mark.parametrize("stop", ["eof", "sigterm"])
def test_a_long_retry_after_waits_but_never_delays_exit(
    tmp_path: Path,
    fake_host: FakeHost,
    server: LoopbackInflux,
    reap: list[subprocess.Popen[bytes]],
    stop: str,
) -> None:
    """The sender waits the server's 300 s (the old code retried after 1.2 s), and a stop ends
    that wait: the exit neither waits for the retry nor makes it. The request timeout is an
    hour because close() joins the sender for that long (+ 1 s): a sender deaf to the stop would
    keep diskprobe for the whole 300 s, past the hang guard."""
    server.answer = lambda: (429, {"Retry-After": "300"})
    probe = start_probe(tmp_path, fake_host, server.start(), reap, timeout='"1h"')
    probe.gather()
    assert wait_for(lambda: probe.planned_retries(), HANG_GUARD_SEC), probe.stderr
    assert probe.planned_retries() == [300.0], probe.stderr
    if stop == "eof":
        probe.stop_by_eof()
    else:
        probe.process.send_signal(signal.SIGTERM)
        assert probe.process.wait(HANG_GUARD_SEC) == 0
    assert len(server.requests) == 1, [r.at - server.requests[0].at for r in server.requests]
    assert_no_traceback("".join(probe.stderr))
    assert list((tmp_path / "spool").glob("*.lp")), "the unsent batch stays spooled"


class _Refused(Exception):
    def __init__(self, status: int, headers: object) -> None:
        super().__init__("refused")
        self.status, self.headers = status, headers


def test_retry_after_parsing_caps_and_falls_back(tmp_path: Path) -> None:
    from diskprobe.config import OutputConfig
    from diskprobe.log import Logger
    from diskprobe.outputs.influxdb import InfluxDBOutput
    from diskprobe.outputs.retry import RETRY_AFTER_MAX, parse_retry_after, retry_after

    now = time.time()
    assert parse_retry_after("7", now) == 7.0
    assert parse_retry_after("86400", now) == parse_retry_after("9" * 400, now) == RETRY_AFTER_MAX
    assert parse_retry_after(http_date(-60)[0], now) == 0.0  # in the past: now
    assert parse_retry_after(formatdate(now + 10**6, usegmt=True), now) == RETRY_AFTER_MAX
    for junk in ("", "-5", "soon", "nan", "1e9", "Wed, 99 Foo 2020"):
        assert parse_retry_after(junk, now) is None, junk
    assert retry_after(_Refused(429, [("retry-after", "3")]), now) == 3.0  # any case, pairs
    assert retry_after(_Refused(500, {"Retry-After": "3"}), now) is None  # 429/503 only
    assert retry_after(ConnectionRefusedError(), now) is None  # urllib3 errors: no headers

    def send(_body: bytes) -> None:
        raise _Refused(503, {"Retry-After": "86400"})

    log = io.StringIO()
    config = OutputConfig(kind="influxdb", url="http://x", bucket="b", spool_dir=str(tmp_path))
    output = InfluxDBOutput(config, Logger(log), env={}, send=send, start=False)
    output.write("m v=1i 1\n")
    assert not output.send_once()
    assert output.delay() == RETRY_AFTER_MAX and output.backoff == 1.0
    assert "waiting at most 300s" in log.getvalue()
    output.close()


def test_a_bad_or_planted_ledger_is_ignored_with_a_warning(tmp_path: Path) -> None:
    from diskprobe.log import Logger
    from diskprobe.outputs.spool import Spool

    secret = tmp_path / "secret"
    secret.write_text('{"pending": 5, "carried": {}}')
    spool_dir = tmp_path / "spool"
    spool_dir.mkdir(mode=0o700)
    for planted in ('{"pending": -1, "carried": {}}', "[[[", secret):
        ledger = spool_dir / ".dropped.json"
        ledger.unlink(missing_ok=True)
        if isinstance(planted, Path):
            ledger.symlink_to(planted)  # never followed
        else:
            ledger.write_text(planted)
        log = io.StringIO()
        spool = Spool(str(spool_dir), 10**6, Logger(log))
        assert spool.take_dropped() == 0
        assert "earlier dropped-point counts are lost" in log.getvalue(), planted
        spool.close()
