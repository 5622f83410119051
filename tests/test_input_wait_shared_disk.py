"""The in-job meter blames only what the job waits on (issue 35, section 3): `disk` when the
job's own reads (its loader processes and threads included) wait on the data's device, not
whenever that device is busy. The verdict's branches (compute/bottleneck.py), the arithmetic
of the job's reads and loaders over a window (compute/job_input.py), the look at a job in a
fake /proc (sources/job_family.py), a real child process's reads counted once, and the
user's case for real: a loop whose batches arrive after 20 ms of waiting on no file, its
data_paths on the root device while fio saturates that device with 4 KiB random reads."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from diskprobe.compute.bottleneck import ACTIVE_MIN, INPUT_BOUND, JOB_READ_WAIT, training_verdict
from diskprobe.compute.job_input import JobInput, job_input, loader_cpu_sec, read_wait_sec
from diskprobe.integrations.input_wait import InputWaitMeter
from diskprobe.roots import HostRoots
from diskprobe.sources.file_places import Place
from diskprobe.sources.job_family import (
    CLOCK_TICKS,
    JobLook,
    ProcessCounters,
    descendants,
    look_at_job,
)

from ci import skip_or_fail, wait_until

DISK = Place("vda", "/", False, "ext4")
NFS = Place(None, "/mnt/nfs", True, "nfs4")
JOB = Path(__file__).with_name("input_wait_idle_job.py")
MiB = 1 << 20


def verdict(share: float | None, cores: float, util: float | None = 99.0, wait: float = 0.8,
            checkpoint: float = 0.0, place: Place | None = DISK,
            in_memory: bool = False) -> str:  # fmt: skip
    job = JobInput(1e6, share, cores)
    return training_verdict(wait, checkpoint, place, in_memory, util, job).bottleneck


def test_disk_only_when_the_jobs_own_reads_wait_on_the_device() -> None:
    assert verdict(share=0.9, cores=0.0) == "disk"
    assert verdict(share=0.9, cores=0.0, util=5.0) == "disk"  # its reads wait, however busy
    assert verdict(share=JOB_READ_WAIT, cores=2.0) == "disk"  # the threshold is included
    assert verdict(share=JOB_READ_WAIT * 0.99, cores=2.0) == "input_cpu"
    assert verdict(share=0.05, cores=ACTIVE_MIN) == "input_cpu"  # the loaders run
    assert verdict(share=0.05, cores=ACTIVE_MIN * 0.99) == "idle"  # waiting on no file
    assert verdict(share=None, cores=0.0) == "unknown"  # the job's reads could not be read


@pytest.mark.parametrize("util", [50.0, 98.0, 100.0])
def test_a_busy_device_the_job_does_not_wait_on_is_not_disk(util: float) -> None:
    # Fails if the rule went back to the device's %util alone (the defect).
    assert verdict(share=0.0, cores=0.0, util=util) == "idle"
    assert verdict(share=0.1, cores=1.5, util=util) == "input_cpu"


def test_the_branches_before_the_jobs_input_are_kept() -> None:
    assert verdict(share=0.9, cores=0.0, wait=0.1) == "compute"
    assert verdict(share=0.9, cores=0.0, wait=0.2, checkpoint=0.4) == "checkpoint"
    assert verdict(share=0.0, cores=0.0, place=None, in_memory=True) == "input_cpu"
    assert verdict(share=0.0, cores=0.0, place=NFS) == "remote_fs"
    assert verdict(share=0.0, cores=0.0, place=None) == "unknown"
    idle = training_verdict(0.8, 0.0, DISK, False, 99.0, JobInput(0.0, 0.0, 0.0))
    assert "not a file" in idle.reasons[-1] and "vda 0%" in idle.reasons[1]


def look(at: int, own: tuple[int, int] | None, loop: int | None,
         family: dict[tuple[int, int], tuple[int, int]] | None) -> JobLook:  # fmt: skip
    """A look at tick `at`: own and family as (read_bytes, cpu_ticks)."""
    kids = {key: ProcessCounters(*value) for key, value in family.items()} if family is not None \
        else None  # fmt: skip
    return JobLook(at, ProcessCounters(*own) if own else None, 7, loop, kids)


def test_the_jobs_reads_count_its_live_descendants_once() -> None:
    before = look(1000, (500, 0), 0, {(20, 900): (100, 0), (21, 900): (40, 0)})
    after = look(1100, (500 + 40 + 7, 0), 0, {  # 21 reaped: its 40 + 7 more went to the job
        (20, 900): (100 + 30, 0),  # a worker with a baseline: +30
        (22, 1050): (64, 0),  # started after the previous look: all of it, from 0
        (23, 800): (9999, 0),  # running before, never listed: counted from this look on
        (21, 1080): (5, 0),  # PID 21 reused by a process started after the look: from 0
    })
    window = job_input(before, after, 1.0, 0.8, (10_000.0, 100.0))
    assert window.read_bytes_per_sec == 7 + 30 + 64 + 5
    assert window.read_wait_share == pytest.approx(106 / 10_000 * 0.1 / 0.8)
    unlisted = look(1100, (510, 0), 0, None)  # a window that did not list the descendants
    assert job_input(before, unlisted, 1.0, 0.8, None).read_bytes_per_sec == 10
    gone = look(1100, None, None, {})  # the job's own io file could not be read
    assert job_input(before, gone, 1.0, 0.8, (1.0, 1.0)).read_wait_share is None


def test_no_reads_wait_nothing_and_the_share_of_the_device_is_at_most_all() -> None:
    assert read_wait_sec(0, 1e9, 5000.0) == 0.0
    assert read_wait_sec(4096, 0.0, 5000.0) == 0.0  # reads from another device, or none
    assert read_wait_sec(2 * MiB, MiB, 800.0) == pytest.approx(0.8)
    nothing = job_input(look(0, (5, 0), 0, {}), look(1, (5, 0), 0, {}), 1.0, 0.8, None)
    assert nothing.read_wait_share == 0.0  # no device counters needed to know that


def test_loader_cpu_is_descendants_other_threads_and_the_loops_thread_beyond_its_step() -> None:
    tick = 1.0 / CLOCK_TICKS
    before = look(1000, (0, 1000), 400, {(20, 900): (0, 50)})
    after = look(1100, (0, 1000 + 30 + 20), 400 + 20, {(20, 900): (0, 50 + 10), (22, 1050): (0, 4)})
    # process +50 ticks, of which the loop's thread 20: other threads 30; workers 10 + 4
    assert loader_cpu_sec(before, after, busy_sec=20 * tick) == pytest.approx(44 * tick)
    assert loader_cpu_sec(before, after, busy_sec=5 * tick) == pytest.approx(59 * tick)


def write_stat(task: Path, pid: int, ppid: int, cpu: int, start: int) -> None:
    task.mkdir(parents=True, exist_ok=True)
    fields = ["S", ppid, pid, pid, 0, -1, 4194304, 100, 0, 0, 0, cpu, 0, 0, 0, 20, 0, 1, 0,
              start, *[0] * 30]  # fmt: skip
    (task / "stat").write_text(f"{pid} (py thon) {' '.join(map(str, fields))}\n")


def fake_process(proc: Path, pid: int, ppid: int, cpu: int, read_bytes: int) -> None:
    write_stat(proc / str(pid), pid, ppid, cpu, 500 + pid)
    write_stat(proc / str(pid) / "task" / str(pid), pid, ppid, cpu // 2, 500 + pid)
    (proc / str(pid) / "io").write_text(
        f"rchar: 1\nwchar: 0\nsyscr: 1\nsyscw: 0\nread_bytes: {read_bytes}\nwrite_bytes: 0\n"
        "cancelled_write_bytes: 0\n")  # fmt: skip


def test_a_look_at_a_job_in_a_fake_proc(tmp_path: Path) -> None:
    for pid, ppid in ((100, 1), (200, 100), (300, 200), (400, 1)):
        fake_process(tmp_path, pid, ppid, cpu=pid, read_bytes=pid * 10)
    roots = HostRoots(proc=str(tmp_path))
    seen = look_at_job(roots, 100, 100, with_family=True)
    assert seen.own == ProcessCounters(1000, 100) and seen.loop_cpu_ticks == 50
    assert seen.family == {(200, 700): ProcessCounters(2000, 200),
                           (300, 800): ProcessCounters(3000, 300)}  # fmt: skip
    assert look_at_job(roots, 100, 100, with_family=False).family is None
    assert sorted(descendants({1: 2, 2: 1, 3: 1}, 1)) == [2, 3]  # a cycle ends


def test_a_child_processs_reads_count_once_while_alive_and_once_reaped() -> None:
    # A real child (a DataLoader worker's place) reads 8 MiB from storage: the job process's
    # own io file does not have them while it lives; after it is reaped, the parent's does,
    # and they must not be counted a second time.
    with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="diskprobe-child-") as name:
        windows = child_reads(Path(name))
    first, second = (window["job_read_bytes_per_sec"] for window in windows)
    assert first >= 8 * MiB, windows[0]  # one second of fake steps: bytes per second
    assert second < 4 * MiB, windows[1]


def child_reads(tmp_path: Path) -> list[dict[str, object]]:
    """Two windows of a meter whose data is in tmp_path: a child reading a file of 8 MiB
    there during the first, and reaped before the second."""
    data = tmp_path / "sample.bin"
    with open(data, "wb") as file:
        file.write(os.urandom(8 * MiB))
        file.flush()
        os.fsync(file.fileno())
    meter = InputWaitMeter([str(tmp_path)], window_steps=2, clock=Clock())
    if meter.place is None or meter.place.remote:
        skip_or_fail(f"{tmp_path} is not on a local block device")
    reader = subprocess.Popen([sys.executable, "-c", CHILD, str(data)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert reader.stdout is not None and reader.stdout.readline().strip() == "read"
    run_window(meter)
    reader.communicate("", timeout=60)  # it exits; reaped: the parent's read_bytes has them
    run_window(meter)
    return meter.windows


CHILD = """import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
while os.read(fd, 1 << 20):
    pass
print("read", flush=True)
sys.stdin.read()
"""


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def run_window(meter: InputWaitMeter) -> None:
    """One window of two steps, 0.5 s each, 0.4 s of it waiting for input (the clock's)."""
    meter.start()
    assert isinstance(meter.clock, Clock)
    for _ in range(3):  # the first step of a pass is left out
        meter.batch_wait(0.4)
        meter.clock.now += 0.5
        meter.step_end()


# -- the user's case, for real ----------------------------------------------------------------


def disk_counters(device: str) -> tuple[int, int]:
    """Reads completed and io_ticks (ms with I/O in flight) of the device."""
    for line in Path("/proc/diskstats").read_text().splitlines():
        parts = line.split()
        if parts[2] == device:
            return int(parts[3]), int(parts[12])
    raise AssertionError(f"{device} is not in /proc/diskstats")


def io_ticks(device: str) -> int:
    return disk_counters(device)[1]


def root_device() -> str:
    number = os.stat("/").st_dev
    return Path(f"/sys/dev/block/{os.major(number)}:{os.minor(number)}").resolve().name


@pytest.fixture
def saturated_root() -> Iterator[tuple[Path, str]]:
    """A directory on the root device, and fio reading that device at random, 4 KiB direct
    reads, 16 in flight, until the test ends (from a 256 MiB file it writes there first).
    --thread: fio's job runs in fio's own process; as a forked process it would start a
    session of its own, outside the group killed here, and read on after the test."""
    device = root_device()
    with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="diskprobe-shared-") as name:
        directory = Path(name)
        if os.stat(directory).st_dev != os.stat("/").st_dev:
            skip_or_fail("/var/tmp is not on the root filesystem")
        fio = subprocess.Popen(
            ["fio", "--name=saturate", "--thread", f"--filename={directory / 'fio.dat'}",
             "--size=256m",
             "--rw=randread", "--bs=4k", "--direct=1", "--ioengine=libaio", "--iodepth=16",
             "--time_based", "--runtime=600", "--output=/dev/null"], start_new_session=True,
        )  # fmt: skip
        try:
            wait_until(lambda: reading(device), "fio reading the root device")
            yield directory, device
        finally:
            os.killpg(fio.pid, signal.SIGKILL)
            fio.wait(10)


def reading(device: str) -> bool:
    """The device read at random and was busy over half of the last half second: fio has
    laid out its file (writes) and reads it."""
    reads, ticks = disk_counters(device)
    time.sleep(0.5)
    reads_after, ticks_after = disk_counters(device)
    return reads_after - reads > 1000 and ticks_after - ticks > 250


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.serial  # saturates the device every process on the machine reads and writes
def test_a_loop_waiting_on_no_file_beside_a_saturated_device_is_not_disk(
    saturated_root: tuple[Path, str],
) -> None:
    directory, device = saturated_root
    started, ticks = time.monotonic(), io_ticks(device)
    done = subprocess.run([sys.executable, str(JOB), str(directory), "200"],
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    util = (io_ticks(device) - ticks) / ((time.monotonic() - started) * 1000) * 100
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    windows, summary = result["windows"], result["summary"]
    assert util > 50.0, f"{device} was not saturated ({util:.0f} %): the test proves nothing"
    assert summary["device"] == device and summary["input_wait_ratio"] > INPUT_BOUND, summary
    kinds = [window["bottleneck"] for window in windows]
    assert len(kinds) == 10 and kinds.count("disk") < len(kinds) / 2, windows
    assert kinds.count("idle") > len(kinds) / 2, windows  # the loader waits on no file
    assert all(window["device_util_percent"] <= 100.0 for window in windows), windows
