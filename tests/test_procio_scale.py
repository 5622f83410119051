"""ProcessIoCollector's per-process state on a host of many processes (a HOST_PROC tree).

The scan keeps the last io text of every process apart from its parsed counters, so that idle
processes cost one comparison; these tests hold what that must not change: idle processes are
neither parsed nor replaced, rates come from the counters, exited, malformed and reused PIDs
are forgotten (the state stays as large as the host's process list), no fd stays open.
"""

from __future__ import annotations

import io
import os
import re
import shutil
from pathlib import Path

import psutil
import pytest

from diskprobe.collectors import process_io as module
from diskprobe.collectors.base import Clock, CollectorContext
from diskprobe.collectors.process_io import ProcessIoCollector
from diskprobe.config import ProcessIoConfig
from diskprobe.log import Logger
from diskprobe.roots import HostRoots
from diskprobe.sources.procio import IO_READ_SIZE, Details, parse_proc_io, scan_io, start_ticks

from helpers import FakeClock, assert_schema

MB = 1_000_000
# Real texts, captured from this process when the tests run, with the counters replaced:
#   rchar: 1948\nwchar: 0\n...read_bytes: 4096\nwrite_bytes: 0\ncancelled_write_bytes: 0\n
#   4242 (python3) S 1 4242 ... (field 22, the start time in ticks, is set per test)
IO_TEMPLATE = Path("/proc/self/io").read_text()
STAT = Path("/proc/self/stat").read_text()
STAT_REST = STAT[STAT.rindex(")") + 2 :].split()  # from field 3 (state) on


def io_text(read: int, write: int) -> str:
    text = re.sub(r"(?m)^read_bytes: \d+$", f"read_bytes: {read}", IO_TEMPLATE)
    return re.sub(r"(?m)^write_bytes: \d+$", f"write_bytes: {write}", text)


def set_process(proc: Path, pid: int, read: int, write: int, started: int = 100) -> None:
    (proc / str(pid)).mkdir(parents=True, exist_ok=True)
    (proc / str(pid) / "io").write_text(io_text(read, write))
    words = [str(pid), "(worker)", *STAT_REST]
    words[21] = str(started)
    (proc / str(pid) / "stat").write_text(" ".join(words) + "\n")


@pytest.fixture(autouse=True)
def _psutil_procfs(monkeypatch: pytest.MonkeyPatch) -> None:
    """ProcessIoCollector points psutil at its HOST_PROC (procio.use_roots), a global: put it
    back after each test, or later tests' psutil calls read this fake tree."""
    monkeypatch.setattr(psutil, "PROCFS_PATH", psutil.PROCFS_PATH)


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, FakeClock]:
    """A HOST_PROC of 300 idle processes; details (psutil) as the real ones check a reuse."""
    proc = tmp_path / "proc"
    for pid in range(1000, 1300):
        set_process(proc, pid, 4096 * pid, 0)

    def details(roots: HostRoots, pid: int, started: int, cmdline: bool) -> Details | None:
        if start_ticks(roots, pid) != started:
            return None
        return Details(f"worker{pid % 2}", "root", f"worker --id {pid}", "/system.slice/w")

    monkeypatch.setattr(module, "process_details", details)
    return proc, FakeClock()


def collector(host: tuple[Path, FakeClock], **config: object) -> ProcessIoCollector:
    proc, clock = host
    context = CollectorContext(HostRoots(proc=str(proc)), Logger(io.StringIO(), debug=True),
                               clock=Clock(clock))  # fmt: skip
    return ProcessIoCollector(ProcessIoConfig(**config), context)  # type: ignore[arg-type]


def test_idle_processes_are_neither_parsed_nor_replaced(
    host: tuple[Path, FakeClock], monkeypatch: pytest.MonkeyPatch
) -> None:
    probe = collector(host, min_bytes_per_sec=0)
    probe.collect()
    host[1].now += 10.0
    seen = dict(probe._previous)
    parsed: list[bytes] = []

    def parse(data: bytes) -> tuple[int, int] | None:
        parsed.append(data)
        return parse_proc_io(data)

    monkeypatch.setattr(module, "parse_proc_io", parse)
    set_process(host[0], 1007, 4096 * 1007, 30 * MB)
    set_process(host[0], 1008, 4096 * 1008 + 20 * MB, 0)
    metrics = probe.collect().metrics
    assert len(parsed) == 2
    assert all(probe._previous[pid] is seen[pid] for pid in seen if pid not in (1007, 1008))
    assert [(m.fields["pid"], m.fields["write_bytes_per_sec"], m.fields["read_bytes_per_sec"])
            for m in metrics] == [(1007, 3.0 * MB, 0.0), (1008, 0.0, 2.0 * MB)]  # fmt: skip
    assert [m.tags["process"] for m in metrics] == ["worker1", "worker0"]
    assert_schema(metrics)


def test_exits_malformed_and_reused_pids_are_forgotten(host: tuple[Path, FakeClock]) -> None:
    proc, clock = host
    probe = collector(host, min_bytes_per_sec=MB)
    probe.collect()
    for pid in range(1100, 1300):
        shutil.rmtree(proc / str(pid))  # exited
    (proc / "1001" / "io").write_text(io_text(4096, 0).replace("read_bytes: 4096", "read_bytes: x"))
    set_process(proc, 1002, 0, 0, started=900)  # another process under that PID
    set_process(proc, 1003, 4096 * 1003, 5 * MB)
    clock.now += 1.0
    collection = probe.collect()
    assert collection.items == 100  # the malformed one was read: counted, left out
    assert [m.fields["pid"] for m in collection.metrics] == [1003]
    assert set(probe._previous) == set(map(int, probe._raw)) == set(range(1000, 1100)) - {1001}
    assert probe._previous[1002].started == 900
    (proc / "1001" / "io").write_text(io_text(4096 * 1001 + 9 * MB, 0))
    set_process(proc, 1002, 7 * MB, 0, started=900)
    clock.now += 1.0
    # 1001 is new again (no rate from before it was malformed); 1002's rate is its own.
    rates = {m.fields["pid"]: m.fields["read_bytes_per_sec"] for m in probe.collect().metrics}
    assert rates == {1002: 7.0 * MB}
    clock.now += 1.0
    (proc / "1001" / "io").write_text(io_text(4096 * 1001 + 11 * MB, 0))
    rates = {m.fields["pid"]: m.fields["read_bytes_per_sec"] for m in probe.collect().metrics}
    assert rates == {1001: 2.0 * MB}


def test_a_pid_gone_before_its_details_is_read_anew(host: tuple[Path, FakeClock]) -> None:
    proc, clock = host
    probe = collector(host, min_bytes_per_sec=0)
    probe.collect()
    set_process(proc, 1005, 4096 * 1005, 4 * MB, started=555)  # exited; another took the PID
    clock.now += 1.0
    assert probe.collect().metrics == []  # its start time changed: not the process we counted
    assert 1005 not in probe._previous and "1005" not in probe._raw
    clock.now += 1.0
    set_process(proc, 1005, 4096 * 1005, 6 * MB, started=555)
    assert probe.collect().metrics == []  # new again: a first sample has no rate
    assert probe._previous[1005].started == 555


def test_no_fd_is_kept_per_process(host: tuple[Path, FakeClock]) -> None:
    probe = collector(host)
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(3):
        probe.collect()
        host[1].now += 1.0
    assert len(os.listdir("/proc/self/fd")) == before


def test_the_longest_io_text_is_read_whole(tmp_path: Path) -> None:
    # Every counter at 2**64 - 1: the longest text the kernel can print (223 bytes).
    longest = io_text(2**64 - 1, 2**64 - 1)
    longest = re.sub(r"(?m): \d+$", f": {2**64 - 1}", longest)
    (tmp_path / "77").mkdir()
    (tmp_path / "77" / "io").write_text(longest)
    assert len(longest) == 223 < IO_READ_SIZE
    scan = scan_io(HostRoots(proc=str(tmp_path)))
    assert scan.raw == {"77": longest.encode()}
    assert parse_proc_io(scan.raw["77"]) == (2**64 - 1, 2**64 - 1)
