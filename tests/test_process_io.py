"""diskprobe_process_io on this machine: a real writer at a known rate must be the top talker."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from diskprobe.collectors import process_io as module
from diskprobe.collectors.base import CollectorContext
from diskprobe.collectors.process_io import ProcessIoCollector
from diskprobe.config import ProcessIoConfig
from diskprobe.log import Logger
from diskprobe.roots import HostRoots
from diskprobe.sources.procio import parse_cgroup, parse_proc_io

from helpers import assert_schema

RATE = 16 * 1024 * 1024  # bytes per second the writer aims at
WRITER = """
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND)
chunk, rate = b"x" * 65536, int(sys.argv[2])
start, written = time.monotonic(), 0
while True:
    os.write(fd, chunk)
    written += len(chunk)
    if written % (4 * 1024 * 1024) == 0:
        os.fdatasync(fd)
    delay = start + written / rate - time.monotonic()
    if delay > 0:
        time.sleep(delay)
"""
IO_TEXT = (
    b"rchar: 1948\nwchar: 10\nsyscr: 7\nsyscw: 1\nread_bytes: 4096\nwrite_bytes: 8192\n"
    b"cancelled_write_bytes: 0\n"
)


def _writer(path: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), str(RATE)], env={"LC_ALL": "C"}
    )


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    path = tmp_path / "written"
    process = _writer(path)
    time.sleep(0.5)  # interpreter start-up
    yield process, path
    process.kill()
    process.wait()


def _total(fields: dict[str, object]) -> float:
    return float(str(fields["read_bytes_per_sec"])) + float(str(fields["write_bytes_per_sec"]))


def _collector(stream: io.StringIO, **config: object) -> ProcessIoCollector:
    context = CollectorContext(HostRoots(), Logger(stream))
    return ProcessIoCollector(ProcessIoConfig(**config), context)


def test_parse_proc_io_and_cgroup() -> None:
    assert parse_proc_io(IO_TEXT) == (4096, 8192)
    assert parse_proc_io(b"read_bytes: 5\nrchar: 1\nwrite_bytes: 6\n") == (5, 6)
    assert parse_proc_io(b"rchar: 1\n") is None
    assert parse_cgroup("0::/system.slice/sshd.service\n") == "/system.slice/sshd.service"
    v1 = "12:pids:/a\n5:blkio:/kubepods/pod1\n1:name=systemd:/b\n"
    assert parse_cgroup(v1) == "/kubepods/pod1"
    assert parse_cgroup("3:cpu,cpuacct:/c\n") == "/c"
    assert parse_cgroup("") is None


@pytest.mark.slow
def test_steady_writer_is_the_top_talker_at_its_rate(
    writer: tuple[subprocess.Popen[bytes], Path],
) -> None:
    process, path = writer
    stream = io.StringIO()
    collector = _collector(stream, top=50)
    size_before, collection = path.stat().st_size, collector.collect()
    time.sleep(3.0)
    size_after, collection = path.stat().st_size, collector.collect()
    truth = (size_after - size_before) / 3.0
    totals = [_total(m.fields) for m in collection.metrics]
    assert totals == sorted(totals, reverse=True)  # busiest first
    # The top talker, unless something else on this shared machine writes even faster.
    top = next(m for m in collection.metrics if m.fields["pid"] == process.pid)
    assert all(total > _total(top.fields) for total in totals[: collection.metrics.index(top)])
    assert top.tags["process"] == "python" or top.tags["process"].startswith("python")
    assert top.tags["user"] == "root" or top.tags["user"] == str(os.getuid())
    rate = float(top.fields["write_bytes_per_sec"])
    assert abs(rate - truth) <= 0.15 * truth, (rate, truth)
    assert str(top.fields["cmdline"]).startswith(sys.executable)
    assert str(top.fields["cgroup"]).startswith("/")
    assert_schema(collection.metrics)
    assert "W!" not in stream.getvalue() and "E!" not in stream.getvalue()


@pytest.mark.slow
def test_cmdline_false_drops_it(writer: tuple[subprocess.Popen[bytes], Path]) -> None:
    collector = _collector(io.StringIO(), cmdline=False)
    collector.collect()
    time.sleep(1.5)
    metrics = collector.collect().metrics
    assert metrics and all("cmdline" not in m.fields for m in metrics)
    assert any(m.fields["pid"] == writer[0].pid for m in metrics)


@pytest.mark.slow
def test_exited_processes_are_skipped_silently(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    early, late = _writer(tmp_path / "early"), _writer(tmp_path / "late")
    stream = io.StringIO()
    collector = _collector(stream)
    time.sleep(0.5)
    collector.collect()
    logged = stream.getvalue()  # at most the one-time I! line about unreadable processes
    assert "W!" not in logged and "E!" not in logged and len(logged.splitlines()) <= 1
    time.sleep(1.5)
    early.kill()
    early.wait()  # gone before the scan
    real_details = module.process_details

    def exit_first(*args: object, **kwargs: object) -> object:
        if args[1] == late.pid and late.poll() is None:
            late.kill()
            late.wait()  # gone between the scan and the details
        return real_details(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(module, "process_details", exit_first)
    pids = {m.fields["pid"] for m in collector.collect().metrics}
    assert early.pid not in pids and late.pid not in pids
    assert late.poll() is not None
    assert stream.getvalue() == logged  # nothing logged about them, nothing repeated


@pytest.mark.slow
def test_reused_pid_is_not_a_spike(writer: tuple[subprocess.Popen[bytes], Path]) -> None:
    collector = _collector(io.StringIO())
    collector.collect()
    time.sleep(1.5)
    seen = collector._previous[writer[0].pid]
    assert seen.started is not None
    seen.started += 1  # as if another process had held the PID at the last scan
    assert all(m.fields["pid"] != writer[0].pid for m in collector.collect().metrics)


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


@pytest.mark.slow
def test_two_busy_processes_of_one_name_are_one_point_with_their_sum(tmp_path: Path) -> None:
    # Two points with the same tags and timestamp are one series sample: the database would
    # keep one of them (InfluxDB) or store a duplicate (VictoriaMetrics).
    writers = [_writer(tmp_path / "first"), _writer(tmp_path / "second")]
    try:
        time.sleep(0.5)
        collector = _collector(io.StringIO(), top=50)
        sizes_before = [p.stat().st_size for p in tmp_path.iterdir()]
        collector.collect()
        time.sleep(3.0)
        sizes_after = [p.stat().st_size for p in tmp_path.iterdir()]
        collection = collector.collect()
    finally:
        for process in writers:
            process.kill()
            process.wait()
    series = [tuple(sorted(m.tags.items())) for m in collection.metrics]
    assert len(series) == len(set(series)), series
    ours = next(m for m in collection.metrics if m.fields["pid"] in {p.pid for p in writers})
    assert int(ours.fields["processes"]) >= 2
    truth = (sum(sizes_after) - sum(sizes_before)) / 3.0
    rate = float(ours.fields["write_bytes_per_sec"])
    assert 0.85 * truth <= rate <= 1.3 * truth, (rate, truth)
    assert_schema(collection.metrics)
