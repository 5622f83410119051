"""End to end: the real `diskprobe` console script, driven as Telegraf's inputs.execd drives it,
its stdout written to a real InfluxDB 1.x and read back with InfluxQL.

signal = "none" is `diskprobe` with an open stdin; signal = "STDIN" is `--trigger stdin`.
Telegraf stops a plugin by closing its stdin (EOF) or with SIGTERM; it may stop reading stdout.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any, Callable, Iterator, Optional

import pytest

from influxdb_server import InfluxServer, quote_ident, quote_string, series_rows
from lineproto import Point, parse_line

LOG_PREFIXES = ("E! ", "W! ", "I! ", "D! ")
IO_MEASUREMENT = "diskprobe_io"
AGENT_MEASUREMENT = "diskprobe_agent"
AGENT_PREFIX = AGENT_MEASUREMENT.encode() + b","
START_TIMEOUT_SEC = 15.0  # interpreter start-up plus the first sample, on a slow CI runner
BATCH_TIMEOUT_SEC = 5.0
BATCH_QUIET_SEC = 0.2  # lines of one batch arrive together; batches are >= 0.5 s apart
# after EOF on stdin or a signal: the promised second, and 2 s for a loaded test machine
# (tests/faults/test_fault_signals.py says why); waiting for the next 1 s batch is not caught
# here, the faults tests at a 10 ms interval catch it
EXIT_TIMEOUT_SEC = 3.0
EPIPE_TIMEOUT_SEC = 3.0
LOOP_RUN_SEC = 3.5
STDIN_PAUSE_SEC = 0.5


# -- output: parsed with the repo's strict reader (tests/lineproto.py) ---------------------------


def parse_output(output: bytes) -> list[Point]:
    assert output, "no output at all"
    text = output.decode("utf-8")
    assert text.endswith("\n"), f"last line is incomplete: {text[-200:]!r}"
    return [parse_line(line) for line in text[:-1].split("\n")]


def agents_by_collector(points: list[Point]) -> dict[str, list[Point]]:
    """diskprobe_agent points per collector: one per batch in which that collector ran."""
    agents: dict[str, list[Point]] = {}
    for point in points:
        if point.measurement == AGENT_MEASUREMENT:
            agents.setdefault(point.tags["collector"], []).append(point)
    return agents


def assert_log_lines(stderr: str) -> None:
    for line in stderr.splitlines():
        assert line.startswith(LOG_PREFIXES), f"stderr line without E!/W!/I!/D! prefix: {line!r}"


def assert_no_traceback(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr
    assert "Exception ignored" not in stderr, stderr


# -- the process under test ---------------------------------------------------------------------


def diskprobe_command() -> list[str]:
    script = Path(sys.executable).parent / "diskprobe"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "diskprobe"]


def child_env() -> dict[str, str]:
    """The test environment without Telegraf's HOST_* roots: read this machine's /proc."""
    moved = ("HOST_PROC", "HOST_SYS", "HOST_RUN", "HOST_MOUNT_PREFIX")
    return {key: value for key, value in os.environ.items() if key not in moved}


class Probe:
    """A running `diskprobe` with stdin a pipe; stdout and stderr read by threads."""

    def __init__(self, args: tuple[str, ...], read_stdout: bool = True) -> None:
        self.process = subprocess.Popen(
            [*diskprobe_command(), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=child_env(),
        )
        self.lines: queue.Queue[Optional[bytes]] = queue.Queue()
        self._stdout: list[bytes] = []
        self._stderr: list[bytes] = []
        self.started = threading.Event()
        self._threads = [threading.Thread(target=self._read_stderr, daemon=True)]
        if read_stdout:
            self._threads.append(threading.Thread(target=self._read_stdout, daemon=True))
        for thread in self._threads:
            thread.start()

    def _read_stdout(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        with contextlib.suppress(OSError, ValueError):  # closed under us: the test is over
            for line in iter(stream.readline, b""):
                self._stdout.append(line)
                self.lines.put(line)
        self.lines.put(None)

    def _read_stderr(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        with contextlib.suppress(OSError, ValueError):
            for line in iter(stream.readline, b""):
                self._stderr.append(line)
                if line.startswith(b"I! ") and b" started" in line:
                    self.started.set()
        self.started.set()  # EOF: stop waiting, the caller sees the process gone

    @property
    def stderr(self) -> str:
        return b"".join(self._stderr).decode("utf-8", errors="replace")

    def wait_started(self) -> None:
        """Until the "started" log line: signal handlers and the stdin watcher are in place."""
        assert self.started.wait(START_TIMEOUT_SEC), f"no 'started' line; stderr: {self.stderr}"
        assert self.process.poll() is None, f"exited {self.process.returncode}: {self.stderr}"

    def next_batch(self, timeout: float = BATCH_TIMEOUT_SEC) -> list[bytes]:
        """The raw lines of the next batch: up to its first diskprobe_agent line, then what
        follows without a pause (a batch is one write; the next one is far later)."""
        deadline = time.monotonic() + timeout
        batch: list[bytes] = []
        while not any(line.startswith(AGENT_PREFIX) for line in batch):
            try:
                line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.0))
            except queue.Empty:
                raise AssertionError(f"no complete batch in {timeout} s: {batch}") from None
            assert line is not None, f"stdout closed mid-batch: {batch}; stderr: {self.stderr}"
            batch.append(line)
        while True:
            try:
                line = self.lines.get(timeout=BATCH_QUIET_SEC)
            except queue.Empty:
                return batch
            if line is None:
                self.lines.put(None)
                return batch
            batch.append(line)

    def unread_lines(self) -> list[bytes]:
        lines: list[bytes] = []
        while True:
            try:
                line = self.lines.get_nowait()
            except queue.Empty:
                return lines
            if line is not None:
                lines.append(line)

    def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def close_stdin(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()

    def wait_exit(self, timeout: float, after: str) -> int:
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"diskprobe still running {timeout} s after {after}; stderr: {self.stderr}"
            ) from None

    def finish(self) -> tuple[bytes, str]:
        """After exit: everything written to stdout and stderr."""
        for thread in self._threads:
            thread.join(timeout=5.0)
        return b"".join(self._stdout), self.stderr

    def cleanup(self) -> None:
        """Kill the process if a test left it running, then close every pipe."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=5.0)
        for thread in self._threads:
            thread.join(timeout=5.0)  # the pipes reach EOF once the process is gone
        streams: list[Optional[IO[bytes]]] = [
            self.process.stdin,
            self.process.stdout,
            self.process.stderr,
        ]
        for stream in streams:
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


@pytest.fixture
def probe_config(tmp_path: Path) -> Path:
    """A config that only moves the state file into the test's directory (not /var/lib)."""
    config = tmp_path / "diskprobe.toml"
    config.write_text(f"state_file = {json.dumps(str(tmp_path / 'state.json'))}\n")
    return config


@pytest.fixture
def start_probe(probe_config: Path) -> Iterator[Callable[..., Probe]]:
    started: list[Probe] = []

    def start(*args: str, read_stdout: bool = True) -> Probe:
        probe = Probe(("--config", str(probe_config), *args), read_stdout=read_stdout)
        started.append(probe)
        return probe

    yield start
    for probe in started:
        probe.cleanup()


# -- InfluxDB helpers -----------------------------------------------------------------------------


def write_ok(server: InfluxServer, db: str, body: bytes) -> None:
    status, text = server.write(db, body)
    assert status == 204, f"InfluxDB rejected the output: HTTP {status}: {text}"


def stored_points(server: InfluxServer, db: str, measurement: str) -> dict[Any, dict[str, Any]]:
    """{(frozenset of tags, time): row} for every point of `measurement`."""
    results = server.query(db, f"SELECT * FROM {quote_ident(measurement)} GROUP BY *")
    stored: dict[Any, dict[str, Any]] = {}
    for series in results[0].get("series", []):
        tags = frozenset(series.get("tags", {}).items())
        for values in series["values"]:
            row = dict(zip(series["columns"], values))
            stored[(tags, row["time"])] = row
    return stored


def assert_stored(server: InfluxServer, db: str, points: list[Point]) -> None:
    """Every field of every point reads back with the same value and type."""
    by_measurement: dict[str, list[Point]] = {}
    for point in points:
        by_measurement.setdefault(point.measurement, []).append(point)
    for measurement, group in by_measurement.items():
        stored = stored_points(server, db, measurement)
        assert len(stored) == len(group), f"{measurement}: {len(stored)} stored of {len(group)}"
        for point in group:
            row = stored[(frozenset(point.tags.items()), point.time_ns)]
            for name, value in point.fields.items():
                back = row[name]
                if isinstance(value, float):
                    # JSON writes 2.0 as 2; both sides are shortest round-trip reprs.
                    assert isinstance(back, (int, float)) and not isinstance(back, bool)
                    assert float(back) == value, f"{measurement}.{name}: {back!r} != {value!r}"
                else:
                    assert type(back) is type(value) and back == value, (measurement, name, back)


def single_value(server: InfluxServer, db: str, influxql: str, column: str) -> Any:
    rows = series_rows(server.query(db, influxql))
    assert len(rows) == 1, f"{influxql}: {rows}"
    return rows[0][column]


# -- tests ---------------------------------------------------------------------------------------


def test_interval_loop_stdout_round_trips_through_influxdb(
    influx_db: tuple[InfluxServer, str], start_probe: Callable[..., Probe]
) -> None:
    server, db = influx_db
    probe = start_probe("--interval", "1s")
    began = time.monotonic()
    probe.wait_started()
    time.sleep(LOOP_RUN_SEC)
    probe.close_stdin()
    ran = time.monotonic() - began
    assert probe.wait_exit(EXIT_TIMEOUT_SEC, "EOF on stdin") == 0
    output, stderr = probe.finish()
    assert_no_traceback(stderr)
    assert_log_lines(stderr)

    points = parse_output(output)
    agents = agents_by_collector(points)
    io_points = [p for p in points if p.measurement == IO_MEASUREMENT]
    io_times = sorted({p.time_ns for p in io_points})
    assert len(io_times) >= 2, f"want {IO_MEASUREMENT} points from at least 2 batches: {points}"
    assert len(agents.get("io", [])) == len(io_times), agents
    for collector, marks in agents.items():
        assert len(marks) <= math.ceil(ran) + 1, f"{collector}: {len(marks)} in {ran:.1f} s"
        # Aligned to the wall clock: one batch per 1 s slot, never two in the same second.
        seconds = [p.time_ns // 1_000_000_000 for p in marks]
        assert seconds == sorted(set(seconds)), f"{collector}: batches at {seconds}"
    for mark in agents["io"]:
        items = mark.fields["items"]
        assert isinstance(items, int) and items >= 1, f"no device seen: {mark}"

    write_ok(server, db, output)

    assert_stored(server, db, points)
    util_points = sum("util_percent" in p.fields for p in io_points)
    count = single_value(server, db, f"SELECT count(util_percent) FROM {IO_MEASUREMENT}", "count")
    assert count == util_points
    last_items = single_value(
        server, db, f"SELECT last(items) FROM {AGENT_MEASUREMENT} WHERE collector = 'io'", "last"
    )
    assert last_items == agents["io"][-1].fields["items"]
    sample = io_points[-1]
    interval = single_value(
        server,
        db,
        f"SELECT interval_sec FROM {IO_MEASUREMENT} WHERE time = {sample.time_ns} "
        f"AND device = {quote_string(sample.tags['device'])}",
        "interval_sec",
    )
    assert isinstance(interval, float)
    assert interval == sample.fields["interval_sec"]


def test_stdin_trigger_one_batch_per_line(
    influx_db: tuple[InfluxServer, str], start_probe: Callable[..., Probe]
) -> None:
    server, db = influx_db
    # --interval 1s as well: a batch on the interval would show up during the pauses.
    probe = start_probe("--trigger", "stdin", "--interval", "1s")
    probe.wait_started()
    time.sleep(STDIN_PAUSE_SEC)
    assert probe.unread_lines() == [], "output before the first line on stdin"
    batches: list[list[bytes]] = []
    for _ in range(3):
        probe.send(b"\n")
        batches.append(probe.next_batch())
        time.sleep(STDIN_PAUSE_SEC)
        assert probe.unread_lines() == [], "more than one batch for one line on stdin"
    probe.close_stdin()
    assert probe.wait_exit(EXIT_TIMEOUT_SEC, "EOF on stdin") == 0
    output, stderr = probe.finish()
    assert_no_traceback(stderr)
    assert_log_lines(stderr)

    assert output == b"".join(line for batch in batches for line in batch)
    collectors: list[list[str]] = []
    for batch in batches:
        marks = [parse_line(line.decode()) for line in batch if line.startswith(AGENT_PREFIX)]
        collectors.append(sorted(mark.tags["collector"] for mark in marks))
    assert "io" in collectors[0], collectors
    # Every collector once per batch, the same ones each time.
    assert collectors == [sorted(set(collectors[0]))] * 3, collectors

    points = parse_output(output)
    write_ok(server, db, output)
    assert_stored(server, db, points)
    count = single_value(
        server, db, f"SELECT count(items) FROM {AGENT_MEASUREMENT} WHERE collector = 'io'", "count"
    )
    assert count == 3


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_stops_the_loop_cleanly(
    signum: signal.Signals, start_probe: Callable[..., Probe]
) -> None:
    probe = start_probe("--interval", "1s")
    probe.wait_started()
    probe.next_batch()  # really inside the loop
    probe.process.send_signal(signum)
    code = probe.wait_exit(EXIT_TIMEOUT_SEC, signum.name)
    output, stderr = probe.finish()
    assert code == 0, f"{signum.name}: exit {code}; stderr: {stderr}"
    assert_no_traceback(stderr)
    assert_log_lines(stderr)
    parse_output(output)  # complete lines only, no batch cut short


def test_closed_stdout_exits_quietly(start_probe: Callable[..., Probe]) -> None:
    probe = start_probe("--interval", "1s", read_stdout=False)
    probe.wait_started()
    stdout = probe.process.stdout
    assert stdout is not None
    stdout.close()  # Telegraf stopped reading: the next batch meets EPIPE
    code = probe.wait_exit(EPIPE_TIMEOUT_SEC, "its stdout was closed")
    _, stderr = probe.finish()
    assert_no_traceback(stderr)
    assert_log_lines(stderr)
    assert code == 0, f"exit {code} on EPIPE; stderr: {stderr}"


def test_once_output_is_accepted(influx_db: tuple[InfluxServer, str], probe_config: Path) -> None:
    server, db = influx_db
    done = subprocess.run(
        [*diskprobe_command(), "--config", str(probe_config), "--once", "--debug"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=child_env(),
        timeout=30,
        check=False,
    )
    stderr = done.stderr.decode("utf-8", errors="replace")
    assert done.returncode == 0, stderr
    assert_no_traceback(stderr)
    assert_log_lines(stderr)
    points = parse_output(done.stdout)
    agents = agents_by_collector(points)
    assert "io" in agents, points
    assert all(len(marks) == 1 for marks in agents.values()), f"not one batch: {agents}"
    assert any(p.measurement == IO_MEASUREMENT for p in points), points
    write_ok(server, db, done.stdout)
    assert_stored(server, db, points)


def test_unknown_config_key_is_one_error_line(tmp_path: Path) -> None:
    config = tmp_path / "diskprobe.toml"
    config.write_text("[io]\nexlude = []\n", encoding="utf-8")
    done = subprocess.run(
        [*diskprobe_command(), "--config", str(config), "--once"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=child_env(),
        timeout=30,
        check=False,
    )
    stderr = done.stderr.decode("utf-8", errors="replace")
    assert done.returncode != 0
    assert done.stdout == b""
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    line = lines[0]
    assert line.startswith("E! "), line
    assert str(config) in line, line
    assert "exlude" in line, line
    assert re.search(r"\bexclude\b", line), f"no suggestion of 'exclude': {line}"
