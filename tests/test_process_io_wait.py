"""diskprobe_process_io's blkio_wait_ratio and its ranking by waiting (delay accounting).

On a host emulated by a fake HOST_PROC tree: threads are summed (stat shows the leader only),
the sysctl is read, and the ranking keeps the top by bytes and the top by wait. On this
machine for real: a process doing slow 4 KiB random reads (a loop device on a FUSE file that
delays every request) moves few bytes and waits almost all the time; it is reported beside the
busiest writer, with delay accounting turned on for the test, and not without it.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from diskprobe.collectors import process_io as process_io_module
from diskprobe.collectors.base import CollectorContext
from diskprobe.collectors.process_io import ProcessIoCollector
from diskprobe.compute.process_rank import Candidate, chosen_series
from diskprobe.config import ProcessIoConfig
from diskprobe.log import Logger
from diskprobe.roots import HostRoots
from diskprobe.sources.delayacct import TICKS_PER_SEC, delay_accounting, process_blkio_ticks
from failslow_host import slow_host
from test_process_io import Timed, Writer, writer_name

from ci import skip_or_fail
from helpers import assert_schema

SYSCTL = Path("/proc/sys/kernel/task_delayacct")


def _stat(pid: int, blkio: int | None, threads: int = 1) -> str:
    # state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime
    # cstime priority nice num_threads itrealvalue starttime ... field 42 delayacct_blkio_ticks
    fields = ["S", "1", str(pid), str(pid), "0", "-1", "0", "0", "0", "0", "0", "5", "3", "0",
              "0", "20", "0", str(threads), "0", "777"] + ["0"] * 19  # fmt: skip
    if blkio is not None:
        fields += [str(blkio), "0", "0"]
    return f"{pid} (trainer) " + " ".join(fields) + "\n"


def _fake_process(proc: Path, pid: int, thread_ticks: dict[int, int | None]) -> None:
    leader = thread_ticks.get(pid)
    (proc / str(pid) / "task").mkdir(parents=True)
    (proc / str(pid) / "stat").write_text(_stat(pid, leader, len(thread_ticks)))
    for tid, ticks in thread_ticks.items():
        (proc / str(pid) / "task" / str(tid)).mkdir()
        (proc / str(pid) / "task" / str(tid) / "stat").write_text(_stat(tid, ticks))


def test_a_multithreaded_process_waits_for_the_sum_of_its_threads(tmp_path: Path) -> None:
    # stat shows the leader's 10 ticks; its loader threads waited 300 and 250 more.
    _fake_process(tmp_path, 4242, {4242: 10, 4250: 300, 4251: 250})
    _fake_process(tmp_path, 5000, {5000: None})  # a kernel without field 42
    roots = HostRoots(proc=str(tmp_path))
    assert process_blkio_ticks(roots, 4242) == (560, 3)
    assert process_blkio_ticks(roots, 5000) is None
    assert process_blkio_ticks(roots, 6000) is None  # gone


def test_a_thread_with_a_broken_count_is_left_out_not_the_process(tmp_path: Path) -> None:
    _fake_process(tmp_path, 4242, {4242: 10, 4250: 300, 4251: 1})
    broken = tmp_path / "4242" / "task" / "4251" / "stat"
    for value in (b"x", b"-5", b"1e400", b"9" * 400, b"\xff"):
        broken.write_bytes(_stat(4251, 1).encode().replace(b" 1 0 0\n", b" " + value + b" 0 0\n"))
        assert process_blkio_ticks(HostRoots(proc=str(tmp_path)), 4242) == (310, 2), value


@pytest.mark.parametrize(("before", "after", "expected"), [
    ((1.0, 1), (2.0, 1), 1.0),              # one thread blocked the whole second
    ((1.0, 4), (3.0, 4), 2.0),              # four threads, two seconds of waits in all
    ((5.0, 3), (2.0, 2), 0.0),              # a thread exited with its count: not negative
    ((0.0, 1), (26140.89, 1), 1.0),         # a wait begun before the sysctl: the uptime
    (None, (2.0, 1), None),                 # no earlier reading: no rate yet
])  # fmt: skip
def test_the_wait_per_second_is_bounded_by_the_threads(
    before: tuple[float, int] | None, after: tuple[float, int], expected: float | None
) -> None:
    # (seconds blocked as the kernel counts them, threads) before and after one second
    def ticks(reading: tuple[float, int] | None) -> tuple[int, int] | None:
        return None if reading is None else (round(reading[0] * TICKS_PER_SEC), reading[1])

    wait = process_io_module._wait(ticks(before), ticks(after), 1.0)
    assert wait == (expected if expected is None else pytest.approx(expected))


@pytest.mark.parametrize(("text", "expected"), [(b"1\n", True), (b"0\n", False), (None, None)])
def test_delay_accounting_is_read_from_the_hosts_sysctl(
    tmp_path: Path, text: bytes | None, expected: bool | None
) -> None:
    if text is not None:
        (tmp_path / "sys" / "kernel").mkdir(parents=True)
        (tmp_path / "sys" / "kernel" / "task_delayacct").write_bytes(text)
    assert delay_accounting(HostRoots(proc=str(tmp_path))) is expected


def test_the_top_by_bytes_and_the_top_by_waiting_are_both_kept() -> None:
    def ranked(*rows: tuple[str, float, float | None]) -> list[tuple[Candidate, str]]:
        return [(Candidate(index, 1, rate, 0.0, wait), name)
                for index, (name, rate, wait) in enumerate(rows)]  # fmt: skip

    rows = ranked(("backup", 90e6, 0.01), ("indexer", 40e6, 0.02), ("loader", 0.2e6, 1.9),
                  ("logger", 0.1e6, 0.01), ("loader", 0.1e6, 0.95))  # fmt: skip
    assert chosen_series(rows, 1, 1e6, 0.05) == {"backup", "loader"}
    assert chosen_series(rows, 2, 1e6, 0.05) == {"backup", "indexer", "loader"}
    assert chosen_series(rows, 1, 1e6, 5.0) == {"backup"}  # nobody waits that much
    unmeasured = ranked(("backup", 90e6, None), ("loader", 0.2e6, None))
    assert chosen_series(unmeasured, 5, 1e6, 0.0) == {"backup"}  # no wait: bytes alone


READER = """
import ctypes, mmap, os, random, sys
ctypes.CDLL(None).prctl(15, sys.argv[2].encode(), 0, 0, 0)  # PR_SET_NAME
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
size = os.lseek(fd, 0, os.SEEK_END)
buffer = mmap.mmap(-1, 4096)
print("ready", flush=True)
while True:
    os.preadv(fd, [buffer], random.randrange(size // 4096) * 4096)
"""


@contextlib.contextmanager
def delay_accounting_set(on: bool) -> Iterator[None]:
    """kernel.task_delayacct set for the test: host-wide, so the test has an xdist group of its
    own and restores the value it found."""
    before = SYSCTL.read_text()
    SYSCTL.write_text("1" if on else "0")
    try:
        yield
    finally:
        SYSCTL.write_text(before)


@contextlib.contextmanager
def slow_reader(device: str, name: str) -> Iterator[int]:
    process = subprocess.Popen([sys.executable, "-c", READER, f"/dev/{device}", name],
                               stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        yield process.pid
    finally:
        process.kill()
        process.wait()


def _watch(writer: Writer) -> list[dict[str, object]]:
    context = CollectorContext(HostRoots(), Logger(io.StringIO()))
    # top = 50: other tests' processes (a loader reading 30 MB/s, say) may outrank ours by
    # bytes; the reader stays under min_bytes_per_sec, so only the wait ranking can report it
    collector = ProcessIoCollector(ProcessIoConfig(top=50), context)
    timed = Timed(collector)
    timed.collect()
    writer.write()
    timed.wait(2.0)
    collection = timed.collect()
    assert_schema(collection.metrics)
    return [dict(m.fields, process=m.tags["process"]) for m in collection.metrics]


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.xdist_group("test_process_io_wait")
def test_a_slow_random_reader_is_reported_by_its_wait_beside_the_busiest_writer(
    tmp_path: Path,
) -> None:
    if not SYSCTL.exists():
        skip_or_fail("no kernel.task_delayacct sysctl (kernel before 5.14)")
    with slow_host(1, skip_or_fail, file_bytes=64 << 20) as host:
        host.set_delays({host.devices[0]: 20.0})  # 20 ms a request: ~50 reads/s, 200 KB/s
        writer = Writer(tmp_path / "written", writer_name())
        try:  # the kernel counts only processes started while delay accounting is on
            with delay_accounting_set(True), slow_reader(host.devices[0], writer_name()) as reader:
                time.sleep(0.5)
                points = {p["process"]: p for p in _watch(writer)}
                with delay_accounting_set(False):
                    unmeasured = {p["process"]: p for p in _watch(writer)}
        finally:
            writer.stop()
    reader_name = next(name for name, p in points.items() if p["pid"] == reader)
    waiting = points[reader_name]
    # The reader is blocked on its device nearly all the time (one thread: at most ~1.0 s/s),
    # and moves under 1 MB/s (min_bytes_per_sec): only the wait ranking can report it.
    assert 0.5 <= float(str(waiting["blkio_wait_ratio"])) <= 1.5, waiting
    assert float(str(waiting["read_bytes_per_sec"])) < 1 << 20
    assert writer.name in points  # the bytes ranking is still there beside it
    writer_wait = float(str(points[writer.name]["blkio_wait_ratio"]))
    assert writer_wait < float(str(waiting["blkio_wait_ratio"]))
    # Delay accounting off: no wait field, and the reader's bytes alone do not make the list.
    assert writer.name in unmeasured and reader_name not in unmeasured, unmeasured
    assert all("blkio_wait_ratio" not in p for p in unmeasured.values())
