"""diskprobe_process_io on this machine: a real writer at a known rate must be the top talker."""

from __future__ import annotations

import io
import itertools
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from diskprobe.collectors import process_io as module
from diskprobe.collectors.base import Collection, CollectorContext
from diskprobe.collectors.process_io import ProcessIoCollector
from diskprobe.config import ProcessIoConfig
from diskprobe.log import Logger
from diskprobe.roots import HostRoots
from diskprobe.sources.cgroup_limits import parse_proc_cgroup
from diskprobe.sources.procio import parse_proc_io

from helpers import assert_schema

BURST = 32 * 1024 * 1024  # bytes a writer writes between two collects, exactly
# A writer under a name of its own (comm, set with prctl): on a busy machine other processes
# named python3.11 (pytest's own workers) also do I/O, and diskprobe adds up the processes of
# one name and user, as it should; a unique name keeps the sum to this test's writers. It
# writes BURST bytes of new pages when told, so its write_bytes grows by exactly that much
# while the test watches, whatever the load on the machine.
WRITER = """
import ctypes, os, sys
ctypes.CDLL(None).prctl(15, sys.argv[2].encode(), 0, 0, 0)  # PR_SET_NAME
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND)
chunk = b"x" * 65536
print("ready", flush=True)
for line in sys.stdin:
    for _ in range(int(line) // len(chunk)):
        os.write(fd, chunk)
    print("done", flush=True)
"""
IO_TEXT = (
    b"rchar: 1948\nwchar: 10\nsyscr: 7\nsyscw: 1\nread_bytes: 4096\nwrite_bytes: 8192\n"
    b"cancelled_write_bytes: 0\n"
)


class Writer:
    """A process that writes exactly the bytes it is told to (see WRITER)."""

    def __init__(self, path: Path, name: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), name],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={"LC_ALL": "C"},
        )  # fmt: skip
        self.pid, self.name = self.process.pid, name
        assert self._answer() == "ready"

    def _answer(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().strip()

    def write(self, size: int = BURST) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{size}\n")
        self.process.stdin.flush()
        assert self._answer() == "done"

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


def writer_name() -> str:
    """A process name no other process has: under 15 bytes, so comm holds all of it."""
    return f"dpw{os.getpid() % 100000}x{next(_names)}"


_names = itertools.count()


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[Writer]:
    started = Writer(tmp_path / "written", writer_name())
    yield started
    started.stop()


class Timed:
    """Collects, remembering when each began and ended (time.monotonic())."""

    def __init__(self, collector: ProcessIoCollector) -> None:
        self.collector, self.spans = collector, []  # type: list[tuple[float, float]]

    def collect(self) -> Collection:
        start = time.monotonic()
        collection = self.collector.collect()
        self.spans.append((start, time.monotonic()))
        return collection

    def wait(self, seconds: float) -> None:
        """Let `seconds` pass since the last collect ended: a gap long beside the collects'
        own durations keeps the bounds of rate_bounds() tight (under load, wider but true)."""
        time.sleep(max(0.0, self.spans[-1][1] + seconds - time.monotonic()))

    def rate_bounds(self, size: int) -> tuple[float, float]:
        """The rates `size` bytes between the last two collects can give: the collector's
        interval lies between the gap separating them and the span covering both."""
        (first_start, first_end), (last_start, last_end) = self.spans[-2:]
        return size / (last_end - first_start), size / (last_start - first_end)


def _total(fields: dict[str, object]) -> float:
    return float(str(fields["read_bytes_per_sec"])) + float(str(fields["write_bytes_per_sec"]))


def _collector(stream: io.StringIO, **config: object) -> ProcessIoCollector:
    context = CollectorContext(HostRoots(), Logger(stream))
    return ProcessIoCollector(ProcessIoConfig(**config), context)


def test_parse_proc_io_and_cgroup() -> None:
    assert parse_proc_io(IO_TEXT) == (4096, 8192)
    assert parse_proc_io(b"read_bytes: 5\nrchar: 1\nwrite_bytes: 6\n") == (5, 6)
    assert parse_proc_io(b"rchar: 1\n") is None
    assert parse_proc_cgroup("0::/system.slice/sshd.service\n").path == "/system.slice/sshd.service"
    v1 = "12:pids:/a\n5:blkio:/kubepods/pod1\n1:name=systemd:/b\n"
    assert parse_proc_cgroup(v1).path == "/kubepods/pod1"
    assert parse_proc_cgroup("3:cpu,cpuacct:/c\n").path == "/c"
    assert parse_proc_cgroup("").path is None


def test_a_writer_is_reported_at_the_rate_of_the_bytes_it_wrote(writer: Writer) -> None:
    stream = io.StringIO()
    timed = Timed(_collector(stream, top=50))
    timed.collect()
    writer.write()
    timed.wait(1.0)
    collection = timed.collect()
    totals = [_total(m.fields) for m in collection.metrics]
    assert totals == sorted(totals, reverse=True)  # busiest first
    ours = [m for m in collection.metrics if m.tags["process"] == writer.name]
    assert len(ours) == 1, collection.metrics
    top = ours[0]
    # It may not be first: something else on this shared machine may write even more.
    assert all(total > _total(top.fields) for total in totals[: collection.metrics.index(top)])
    assert top.fields["pid"] == writer.pid and top.fields["processes"] == 1
    assert top.tags["user"] == "root" or top.tags["user"] == str(os.getuid())
    low, high = timed.rate_bounds(BURST)
    assert low * 0.999 <= float(top.fields["write_bytes_per_sec"]) <= high * 1.001
    assert str(top.fields["cmdline"]).startswith(sys.executable)
    assert str(top.fields["cgroup"]).startswith("/")
    assert_schema(collection.metrics)
    assert "W!" not in stream.getvalue() and "E!" not in stream.getvalue()


def test_points_are_busiest_first_by_their_summed_rates(tmp_path: Path) -> None:
    """Two processes of one name, each writing less than a third process but more together:
    their point (the sum) comes first. Seen in CI: a point of two summed processes came
    after a single busier one's (the points followed the processes' own order)."""
    single, pair = writer_name(), writer_name()
    writers = [Writer(tmp_path / "single", single), Writer(tmp_path / "pair0", pair),
               Writer(tmp_path / "pair1", pair)]  # fmt: skip
    try:
        collector = _collector(io.StringIO(), top=50)
        collector.collect()
        for writer, size in zip(writers, (3 * BURST // 4, BURST // 2, BURST // 2)):
            writer.write(size)
        metrics = collector.collect().metrics
    finally:
        for writer in writers:
            writer.stop()
    ours = [m.tags["process"] for m in metrics if m.tags["process"] in (single, pair)]
    assert ours == [pair, single], metrics
    totals = [_total(m.fields) for m in metrics]
    assert totals == sorted(totals, reverse=True)


def test_cmdline_false_drops_it(writer: Writer) -> None:
    collector = _collector(io.StringIO(), cmdline=False)
    collector.collect()
    writer.write()
    metrics = collector.collect().metrics
    assert metrics and all("cmdline" not in m.fields for m in metrics)
    assert any(m.fields["pid"] == writer.pid for m in metrics)


def test_exited_processes_are_skipped_silently(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    early = Writer(tmp_path / "early", writer_name())
    late = Writer(tmp_path / "late", writer_name())
    stream = io.StringIO()
    collector = _collector(stream)
    collector.collect()
    logged = stream.getvalue()  # at most the one-time I! line about unreadable processes
    assert "W!" not in logged and "E!" not in logged and len(logged.splitlines()) <= 1
    early.write()
    late.write()  # both are busy enough to be reported ...
    early.stop()  # ... but one is gone before the scan
    real_details = module.process_details

    def exit_first(*args: object, **kwargs: object) -> object:
        if args[1] == late.pid and late.process.poll() is None:
            late.stop()  # gone between the scan and the details
        return real_details(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(module, "process_details", exit_first)
    pids = {m.fields["pid"] for m in collector.collect().metrics}
    assert early.pid not in pids and late.pid not in pids
    assert late.process.poll() is not None  # the scan did reach it, and it died there
    assert stream.getvalue() == logged  # nothing logged about them, nothing repeated


def test_reused_pid_is_not_a_spike(writer: Writer) -> None:
    collector = _collector(io.StringIO())
    collector.collect()
    writer.write()
    seen = collector._previous[writer.pid]
    assert seen.started is not None
    seen.started += 1  # as if another process had held the PID at the last scan
    assert all(m.fields["pid"] != writer.pid for m in collector.collect().metrics)


def test_first_collect_has_no_rates_and_idle_host_respects_minimum() -> None:
    collector = _collector(io.StringIO(), min_bytes_per_sec=10**15)
    assert collector.collect().metrics == []
    collection = collector.collect()
    assert collection.metrics == [] and collection.items > 0


def test_unreadable_processes_are_counted_once(monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = os.open

    def deny(path: str, flags: int, *args: object, **kwargs: object) -> int:
        if str(path).endswith("/io") and str(path).startswith("1/"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", deny)
    stream = io.StringIO()
    collector = _collector(stream)
    collector.collect()
    collector.collect()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("I! process_io: ")
    assert "permission denied" in lines[0]


def test_cmdline_with_newlines_stays_on_one_line() -> None:
    import subprocess
    import sys

    import psutil

    from diskprobe.sources.procio import _cmdline

    script = "import time\nprint('up', flush=True)\ntime.sleep(30)\n"
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline() == b"up\n"  # exec is done
        text = _cmdline(psutil.Process(child.pid))
        assert text is not None and "\n" not in text and "import time print('up'" in text
    finally:
        child.kill()
        child.wait()


def test_two_busy_processes_of_one_name_are_one_point_with_their_sum(tmp_path: Path) -> None:
    # Two points with the same tags and timestamp are one series sample: the database would
    # keep one of them (InfluxDB) or store a duplicate (VictoriaMetrics).
    name = writer_name()
    writers = [Writer(tmp_path / "first", name), Writer(tmp_path / "second", name)]
    try:
        timed = Timed(_collector(io.StringIO(), top=50))
        timed.collect()
        for each in writers:
            each.write()
        timed.wait(1.0)
        collection = timed.collect()
    finally:
        for each in writers:
            each.stop()
    series = [tuple(sorted(m.tags.items())) for m in collection.metrics]
    assert len(series) == len(set(series)), series
    ours = [m for m in collection.metrics if m.tags["process"] == name]
    assert len(ours) == 1 and ours[0].fields["processes"] == 2, collection.metrics
    assert ours[0].fields["pid"] in {each.pid for each in writers}
    low, high = timed.rate_bounds(2 * BURST)
    assert low * 0.999 <= float(ours[0].fields["write_bytes_per_sec"]) <= high * 1.001
    assert_schema(collection.metrics)
