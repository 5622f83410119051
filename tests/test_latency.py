"""[latency] on the real kernel (issue 36's acceptance): the installed agent at a 2 s interval,
bpftrace timing every request, two loop devices under steady 4 KiB direct random reads (fio,
iodepth 1): one over a file on tmpfs, read raw; one whose backing file is on a FUSE filesystem
sleeping 2 ms per request (tests/diagnose_host.py's dataset host), ext4 on it, fio reading a
file there. Over 20 s: at least 3 intervals with more than 20 requests on each; the slow one's
median p50 at least 1.5 ms, the fast one's under 0.5 ms; p99 >= p50; the requests per
interval, median over the intervals, within 2 % of the reads diskstats counted in the same
intervals (the agent's own [io] counters); a diskprobe_process_latency point names fio on the
slow device. Every test worker's tracing sees every device: only this test's two count.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from diagnose_host import DatasetHost, dataset_host

from ci import HANG_GUARD_SEC, skip_or_fail, wait_until
from helpers import installed_command
from lineproto import Point, parse_line

pytestmark = [pytest.mark.root, pytest.mark.slow, pytest.mark.xdist_group("test_latency")]

DELAY_MS = 2.0
RUN_SEC = 20.0
MIN_REQUESTS = 20
FAST_IOPS = 2000  # steady and light: the fast device needs only more than 20 a 2 s interval
AWAIT_EXTRA_MS = 0.008  # diskstats' await over this mean on a tmpfs loop device: 3-5 us seen


def need_bpftrace() -> None:
    if os.geteuid() != 0:
        skip_or_fail("bpftrace runs only as root")
    if shutil.which("bpftrace") is None:
        skip_or_fail("bpftrace is not installed (apt-get install bpftrace)")


@pytest.fixture(scope="module")
def slow() -> Iterator[DatasetHost]:
    need_bpftrace()
    with dataset_host(skip_or_fail, delay_ms=DELAY_MS) as host:
        yield host


@contextlib.contextmanager
def tmpfs_loop() -> Iterator[str]:
    """A loop device over a 64 MiB file in /dev/shm: requests served from memory."""
    backing = Path(tempfile.mkstemp(prefix="latency-", dir="/dev/shm")[1])
    try:
        with open(backing, "wb") as handle:
            handle.truncate(64 << 20)
        done = subprocess.run(["losetup", "--find", "--show", str(backing)], check=True,
                              capture_output=True, text=True, timeout=30)  # fmt: skip
        device = Path(done.stdout.strip()).name
        try:
            yield device
        finally:
            subprocess.run(["losetup", "-d", f"/dev/{device}"], check=False, timeout=30)
    finally:
        backing.unlink()


@contextlib.contextmanager
def fio(target: str, rate: int = 0) -> Iterator[None]:
    argv = ["fio", "--name=latency", f"--filename={target}", "--readonly", "--rw=randread",
            "--bs=4k", "--direct=1", "--ioengine=psync", "--iodepth=1", "--thread",
            "--time_based", "--runtime=120", "--output=/dev/null"]  # fmt: skip
    argv += [f"--rate_iops={rate}"] if rate else []
    process = subprocess.Popen(argv, start_new_session=True)
    try:
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(HANG_GUARD_SEC)


class Agent:
    """The installed agent with a config of its own; its stdout lines parsed by a thread."""

    def __init__(self, config: Path) -> None:
        self.process = subprocess.Popen([*installed_command(), "--config", str(config)],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        start_new_session=True)  # fmt: skip
        self.points: list[Point] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.points.append(parse_line(line.decode("utf-8").rstrip("\n")))

    def stop(self) -> str:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        return self.process.communicate(timeout=HANG_GUARD_SEC)[1].decode("utf-8", "replace")


def config_for(tmp_path: Path, devices: list[str]) -> Path:
    off = "".join(f"[{name}]\nenabled = false\n" for name in
                  ("filesystems", "smart", "pressure", "process_io", "cgroup_io", "jobs"))
    config = tmp_path / "diskprobe.toml"
    config.write_text(f'interval = "2s"\nstate_file = "{tmp_path / "state.json"}"\n{off}'
                      f'[io]\nexclude = []\ndevices = {devices!r}\ncounters = true\n'
                      "[latency]\nenabled = true\n".replace("'", '"'))  # fmt: skip
    return config


def test_two_devices_fast_and_slow_through_the_real_kernel(slow: DatasetHost,
                                                           tmp_path: Path) -> None:  # fmt: skip
    with tmpfs_loop() as fast, fio(f"/dev/{fast}", FAST_IOPS), fio(str(slow.big)):
        agent = Agent(config_for(tmp_path, [fast, slow.device]))
        try:
            wait_until(lambda: any(p.measurement == "diskprobe_latency" for p in agent.points),
                       "a first latency point")  # fmt: skip
            time.sleep(RUN_SEC)
        finally:
            err = agent.stop()
    points = list(agent.points)
    for device, slow_one in ((fast, False), (slow.device, True)):
        mine = reads_of(points, device)
        busy = [p for p in mine if int(p.fields["requests"]) > MIN_REQUESTS]
        assert len(busy) >= 3, (device, [p.fields["requests"] for p in mine], err)
        p50 = statistics.median(float(p.fields["p50_ms"]) for p in busy)
        assert (p50 >= 1.5) if slow_one else (p50 < 0.5), (device, p50)
        assert all(float(p.fields["p99_ms"]) >= float(p.fields["p50_ms"]) for p in busy)
        ratios = agreement(points, device)
        assert abs(statistics.median(ratios) - 1) <= 0.02, (device, ratios)
        mean, await_ms, truncation = means(points, device)
        if slow_one:  # the same start and end, within a few microseconds: 5 % of 2 ms
            assert abs(mean / await_ms - 1) <= 0.05, (device, mean, await_ms)
        else:  # diskstats' start is a timestamp the block layer may cache when a plug
            # begins (blk_time_get_ns), its end a little after the completion tracepoint:
            # a few microseconds more than this mean, which on a 20 us device is 10-20 %
            # (a loaded machine's 120 us too); never less, but for diskstats' truncation
            assert -truncation <= await_ms - mean <= AWAIT_EXTRA_MS, (device, mean, await_ms)
    fio_slow = [p for p in points if p.measurement == "diskprobe_process_latency"
                and p.tags["process"] == "fio" and p.tags["device"] == slow.device]  # fmt: skip
    assert fio_slow, "no diskprobe_process_latency point names fio on the slow device"
    assert "E! " not in err and "W! " not in err, err


def reads_of(points: list[Point], device: str) -> list[Point]:
    return [p for p in points if p.measurement == "diskprobe_latency"
            and p.tags == {"device": device, "op": "read"}]  # fmt: skip


def means(points: list[Point], device: str) -> tuple[float, float, float]:
    """Over the whole run: the mean of the latency collector's read latencies, and diskstats'
    read await (read_time_ms over reads, the agent's [io] raw counters): the same start
    (block_io_start) and end; diskstats sums nanoseconds and shows milliseconds, so over
    thousands of requests its truncation is far below 1 %; and that truncation's bound per
    request (less than 1 ms at each end of the run, over the reads)."""
    io = sorted((p.time_ns, int(p.fields["reads"]), int(p.fields["read_time_ms"]))
                for p in points if p.measurement == "diskprobe_io" and
                p.tags.get("device") == device)  # fmt: skip
    (start, reads0, ms0), (end, reads1, ms1) = io[1], io[-1]
    inside = [p for p in reads_of(points, device) if start + 10**9 < p.time_ns <= end + 10**9]
    total = sum(int(p.fields["requests"]) for p in inside)
    mean = sum(float(p.fields["mean_ms"]) * int(p.fields["requests"]) for p in inside) / total
    return mean, (ms1 - ms0) / (reads1 - reads0), 1.0 / (reads1 - reads0)


def agreement(points: list[Point], device: str) -> list[float]:
    """Per interval: the latency collector's read requests over diskstats' reads (the agent's
    own [io] raw counters, between its batches: the io point of the same batch, taken within
    a second of it), where both counted some."""
    io = sorted((p.time_ns, int(p.fields["reads"])) for p in points
                if p.measurement == "diskprobe_io" and p.tags.get("device") == device)
    moved = [(later, count - before) for (_, before), (later, count) in zip(io, io[1:])]
    ratios = []
    for point in reads_of(points, device):
        reads = next((n for at, n in moved if abs(at - point.time_ns) < 10**9), 0)
        if reads > MIN_REQUESTS:
            ratios.append(int(point.fields["requests"]) / reads)
    assert len(ratios) >= 3, ratios
    return ratios


READERS, CAP = 2000, 64
READER = """
import ctypes, mmap, os, sys
device, count = sys.argv[1], int(sys.argv[2])
libc = ctypes.CDLL(None)
for index in range(count):
    pid = os.fork()
    if pid == 0:
        libc.prctl(15, f"r{index:05}".encode(), 0, 0, 0)  # a name of its own: PR_SET_NAME
        fd = os.open(device, os.O_RDONLY | os.O_DIRECT)
        os.preadv(fd, [mmap.mmap(-1, 4096)], 4096 * index)
        os._exit(0)
    os.waitpid(pid, 0)
"""


def test_short_lived_readers_past_the_cap_are_dropped_and_counted(tmp_path: Path) -> None:
    """2,000 processes, each a name of its own, each one 4 KiB direct read, with the kernel
    maps held to 64 entries ([latency] max_keys) and every process asked for (top_processes
    1000): at most 64 names come out on the device, and the requests left out are counted."""
    need_bpftrace()
    with tmpfs_loop() as device:
        config = config_for(tmp_path, [device])
        config.write_text(config.read_text() + f"max_keys = {CAP}\ntop_processes = 1000\n")
        agent = Agent(config)
        try:
            wait_until(lambda: any(p.measurement == "diskprobe_agent" and
                                   p.tags.get("collector") == "latency" for p in agent.points),
                       "the agent's first batch")  # fmt: skip
            time.sleep(2.0)  # bpftrace attached (it prints a dump a second from then on)
            subprocess.run([sys.executable, "-c", READER, f"/dev/{device}", str(READERS)],
                           check=True, timeout=HANG_GUARD_SEC)  # fmt: skip
            time.sleep(4.0)  # two intervals: the last dumps counted
        finally:
            agent.stop()
    points = list(agent.points)
    names: dict[int, set[str]] = {}  # per interval
    for point in points:
        if point.measurement == "diskprobe_process_latency" and point.tags["device"] == device:
            names.setdefault(point.time_ns, set()).add(point.tags["process"])
    assert names and all(len(found) <= CAP for found in names.values()), names
    kept = sum(len(found) for found in names.values())
    dropped = sum(int(p.fields.get("latency_dropped", 0)) for p in points
                  if p.measurement == "diskprobe_agent")  # fmt: skip
    assert dropped >= READERS - kept, (dropped, kept)  # each reader one request


def test_diagnose_shows_the_devices_latency_over_its_watch(slow: DatasetHost) -> None:
    """diagnose as root with bpftrace: the verdict's device's distribution, its requests
    timed by the kernel (the slow device answers in 2 ms and more). One loader worker: with
    two, a loaded machine (the suite's other workers) could keep its queue full while the
    step waits for a CPU, and the verdict would rightly be compute."""
    job = subprocess.Popen([sys.executable, str(Path(__file__).with_name("diagnose_job.py")),
                            "files", str(slow.small), "1"], stdout=subprocess.PIPE,
                           start_new_session=True)  # fmt: skip
    try:
        assert job.stdout is not None and job.stdout.readline().strip() == b"ready"
        done = subprocess.run([*installed_command(), "diagnose", "--pid", str(job.pid),
                               "--seconds", "4", "--format", "json"], capture_output=True,
                              timeout=HANG_GUARD_SEC)  # fmt: skip
    finally:
        os.killpg(job.pid, signal.SIGKILL)
        job.wait(HANG_GUARD_SEC)
    report = json.loads(done.stdout)
    assert report["bottleneck"] == "disk" and report["device"] == slow.device, report["reasons"]
    latency = report["device_latency"]
    assert latency["requests"] > 20 and latency["p50_ms"] >= 1.5, latency
    assert latency["p99_ms"] >= latency["p50_ms"] and latency["max_ms"] >= latency["p99_ms"]
