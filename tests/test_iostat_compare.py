"""diskprobe_io side by side with sysstat's `iostat -x -y -d -o JSON` on a real, busy block device.

A sparse file is attached as a loop device, `fio` keeps steady rate-limited direct I/O on it, and
iostat and an in-process IoCollector measure the same 4 s window; the iostat -x columns must
agree with the diskprobe fields.

Which device is measured: loop devices are blk-mq (since Linux 4.0), so the block layer does
their I/O accounting itself (io_ticks -> %util, weighted time -> aqu-sz, in-flight from the tag
set). Checked on the 6.x development VM: %util, aqu-sz, r_await/w_await all move and
/sys/block/loopN/inflight is non-zero under load, so the loop device is measured directly. On a
kernel where it does not (queue/iostats off, or an old bio-based loop driver) - the
measured_device fixture checks, with O_DIRECT reads - it layers a device-mapper linear target
over the loop device (`dmsetup create`) and measures the dm-N device instead; where
device-mapper is missing too (that VM has no dm driver at all) the test is skipped with the
reason.

Alignment: with `-y` iostat reads its first sample, skips that since-boot report and blocks in
pause() until SIGALRM, `interval` s after its start; it then reads the second sample at once. So
the collector is primed as soon as iostat is seen blocked in pause() (/proc/PID/syscall), and
collects again as soon as iostat is seen running again: both windows line up to well under a
millisecond, a couple of I/Os at the rates used here. iostat itself times the window with
/proc/uptime (10 ms steps, 0.25 % of 4 s) and prints two decimals; the tolerance covers both.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from diskprobe.collectors.base import CollectorContext
from diskprobe.collectors.io import IoCollector
from diskprobe.config import IoConfig
from diskprobe.log import Logger
from diskprobe.metric import FieldValue
from diskprobe.roots import HostRoots

from ci import skip_or_fail

TOOLS = ("losetup", "iostat", "fio")
BACKING_BYTES = 512 * 1024 * 1024
WINDOW_SEC = 4
WARMUP_SEC = 2.0
RELATIVE_TOLERANCE = 0.05
ABSOLUTE_TOLERANCE = 0.5  # in iostat's own unit (kB/s for the byte rates)

# (iostat -x JSON key, diskprobe field, diskprobe units per iostat unit)
PAIRS: tuple[tuple[str, str, float], ...] = (
    ("r/s", "reads_per_sec", 1.0),
    ("w/s", "writes_per_sec", 1.0),
    ("rkB/s", "read_bytes_per_sec", 1024.0),
    ("wkB/s", "write_bytes_per_sec", 1024.0),
    ("r_await", "read_await_ms", 1.0),
    ("w_await", "write_await_ms", 1.0),
    ("aqu-sz", "queue_size", 1.0),
    ("util", "util_percent", 1.0),
)

# What the load below must at least produce (iostat's view), so the comparison is not 0 vs 0.
MINIMUM_LOAD: dict[str, float] = {
    "r/s": 100.0,
    "w/s": 60.0,
    "rkB/s": 2000.0,
    "wkB/s": 1000.0,
    "r_await": 0.01,
    "w_await": 0.01,
    "aqu-sz": 0.02,
    "util": 2.0,
}

# Mixed random read/write, direct, rate-limited: 4k requests at queue depth 8 plus 256k ones.
FIO_JOB = """\
[global]
filename={device}
direct=1
ioengine={engine}
time_based=1
runtime=120
rw=randrw
rwmixread=60
norandommap=1
randrepeat=0
rate_process=poisson

[small]
bs=4k
iodepth=8
rate_iops=420,280

[large]
bs=256k
iodepth=4
rate_iops=45,30
"""

# System calls iostat blocks in between its samples: pause(), or rt_sigsuspend() where glibc
# has no pause system call. On other architectures any blocking system call counts.
PAUSE_SYSCALLS: dict[str, frozenset[int]] = {
    "x86_64": frozenset({34, 130}),
    "aarch64": frozenset({133}),
}
HAVE_PROC_SYSCALL = os.path.exists("/proc/self/syscall")

# Diskstats counter indexes (after major, minor, name).
READS, WRITES, IO_MS, WEIGHTED_MS = 0, 4, 9, 10


def _run(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, check=check, capture_output=True, text=True, timeout=60)


def _require_environment() -> None:
    if os.geteuid() != 0:
        skip_or_fail("needs root: attaches a loop device (losetup) and reads its I/O counters")
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        skip_or_fail(f"{', '.join(missing)} not on PATH (packages util-linux, sysstat, fio)")


def _counters(device: str) -> list[int]:
    with open(f"/sys/block/{device}/stat", encoding="ascii") as handle:
        return [int(value) for value in handle.read().split()]


def _in_flight(device: str) -> int:
    with open(f"/sys/block/{device}/inflight", encoding="ascii") as handle:
        return sum(int(value) for value in handle.read().split())


def _accounting_problem(device: str) -> str | None:
    """Why `device` lacks %util / aqu-sz / in-flight accounting; None when it has it.

    Reads it with O_DIRECT (dd) while sampling /sys/block/DEV/inflight, then checks that the
    counters behind %util (io_ticks) and aqu-sz (weighted time) advanced.
    """
    iostats = Path(f"/sys/block/{device}/queue/iostats")
    if iostats.exists() and iostats.read_text().strip() == "0":
        return f"{device}: queue/iostats is 0 (I/O accounting disabled)"
    before = after = _counters(device)
    seen_in_flight = 0
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline:
        reader = subprocess.Popen(
            ["dd", f"if=/dev/{device}", "of=/dev/null", "bs=64k", "count=4000", "iflag=direct"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            while reader.poll() is None:
                seen_in_flight = max(seen_in_flight, _in_flight(device))
        finally:
            reader.wait(timeout=60)
        after = _counters(device)
        advanced = after[IO_MS] > before[IO_MS] and after[WEIGHTED_MS] > before[WEIGHTED_MS]
        if advanced and seen_in_flight:
            return None
    if after[READS] == before[READS]:
        return f"{device}: direct reads did not show up in its stat file"
    return (
        f"{device}: reads counted but io_ticks +{after[IO_MS] - before[IO_MS]}, "
        f"weighted ms +{after[WEIGHTED_MS] - before[WEIGHTED_MS]}, max in-flight {seen_in_flight}"
    )


def _attach_loop(image: Path) -> str:
    """Attach `image` to a free loop device, with direct I/O if the backing filesystem can."""
    attached = _run("losetup", "--find", "--show", "--direct-io=on", str(image), check=False)
    # Backing filesystems without O_DIRECT (older tmpfs, overlayfs) refuse direct-io=on: some
    # losetup versions then attach anyway (warning "set direct io failed"), others refuse.
    if attached.stdout.strip():
        return attached.stdout.strip()
    return _run("losetup", "--find", "--show", str(image)).stdout.strip()


def _detach_loop(path: str) -> None:
    for _attempt in range(20):
        if _run("losetup", "-d", path, check=False).returncode == 0:
            return
        time.sleep(0.25)  # still busy (fio exiting, udev probing): retry, then give up quietly


def _dm_linear_over(request: pytest.FixtureRequest, loop_path: str) -> str:
    """A device-mapper linear target over `loop_path`: its kernel name (dm-N)."""
    if shutil.which("dmsetup") is None:
        skip_or_fail("loop device lacks I/O accounting and dmsetup is not installed")
    name = f"diskprobe-test-{os.getpid()}-{Path(loop_path).name}"
    sectors = BACKING_BYTES // 512
    created = _run(
        "dmsetup", "create", name, "--table", f"0 {sectors} linear {loop_path} 0", check=False
    )
    if created.returncode != 0:
        lines = [line.strip() for line in created.stderr.splitlines() if line.strip()]
        why = " / ".join(lines) or "dmsetup create failed"
        pytest.skip(f"loop device lacks I/O accounting, no device-mapper over it: {why} (kernel)")

    def remove() -> None:
        for _attempt in range(20):
            if _run("dmsetup", "remove", name, check=False).returncode == 0:
                return
            time.sleep(0.25)

    request.addfinalizer(remove)
    if shutil.which("udevadm"):
        _run("udevadm", "settle", check=False)
    return os.path.basename(os.path.realpath(f"/dev/mapper/{name}"))


@pytest.fixture
def loop_device(request: pytest.FixtureRequest) -> Iterator[str]:
    """A 512 MiB sparse file attached to a loop device: its name (loop3); always detached."""
    _require_environment()
    workdir = Path(tempfile.mkdtemp(prefix="diskprobe-iostat-"))
    request.addfinalizer(lambda: shutil.rmtree(workdir, ignore_errors=True))
    image = workdir / "disk.img"
    with open(image, "wb") as handle:
        handle.truncate(BACKING_BYTES)
    loop_path = _attach_loop(image)
    request.addfinalizer(lambda: _detach_loop(loop_path))
    yield Path(loop_path).name


@dataclass(frozen=True)
class BlockDevice:
    name: str  # kernel name as in /proc/diskstats: loop3, or dm-0 over it
    how: str  # why this device was chosen, for the report


@pytest.fixture
def measured_device(request: pytest.FixtureRequest, loop_device: str) -> BlockDevice:
    """The loop device if it has I/O accounting, else a dm linear target over it (removed)."""
    dio = Path(f"/sys/block/{loop_device}/loop/dio")
    direct = "direct-io on" if dio.exists() and dio.read_text().strip() == "1" else "buffered"
    problem = _accounting_problem(loop_device)
    if problem is None:
        return BlockDevice(loop_device, f"{loop_device}, {direct}: loop accounting works")
    dm_name = _dm_linear_over(request, f"/dev/{loop_device}")
    dm_problem = _accounting_problem(dm_name)
    if dm_problem is not None:
        pytest.skip(f"no device with I/O accounting (kernel): {problem}; {dm_problem}")
    return BlockDevice(dm_name, f"dm linear over {loop_device}, {direct} ({problem})")


@pytest.fixture
def fio_load(measured_device: BlockDevice) -> Iterator[BlockDevice]:
    """Steady mixed random I/O on the device; fio is stopped (by its pid) at the end."""
    workdir = Path(tempfile.mkdtemp(prefix="diskprobe-fio-"))
    engine = "libaio" if "libaio" in _run("fio", "--enghelp").stdout else "psync"
    job = workdir / "load.fio"
    job.write_text(FIO_JOB.format(device=f"/dev/{measured_device.name}", engine=engine))
    with open(workdir / "fio.log", "w", encoding="utf-8") as log:
        fio = subprocess.Popen(["fio", str(job)], stdout=log, stderr=subprocess.STDOUT)
        try:
            _warm_up(fio, measured_device.name, workdir / "fio.log")
            yield measured_device
        finally:
            if fio.poll() is None:
                fio.terminate()
                try:
                    fio.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    fio.kill()
                    fio.wait(timeout=15)
            shutil.rmtree(workdir, ignore_errors=True)


def _warm_up(fio: subprocess.Popen[bytes], device: str, log: Path) -> None:
    """Wait for fio's I/O to show up, then WARMUP_SEC more, checking in-flight accounting."""
    start = _counters(device)
    deadline = time.monotonic() + 20.0
    while _counters(device)[READS] < start[READS] + 50:
        if fio.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"fio did no I/O on /dev/{device}:\n{log.read_text()}")
        time.sleep(0.05)
    warm_until, in_flight = time.monotonic() + WARMUP_SEC, 0
    while time.monotonic() < warm_until:
        in_flight = max(in_flight, _in_flight(device))
        time.sleep(0.002)
    assert in_flight > 0, f"{device}: in-flight never above 0 under load"


def _blocked_between_samples(pid: int) -> bool:
    """Whether iostat sits in pause() (False once running again or exited)."""
    try:
        if not HAVE_PROC_SYSCALL:
            # Kernels without /proc/PID/syscall: iostat sleeps nowhere else (state S).
            with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
                return handle.read().rpartition(")")[2].split()[0] == "S"
        with open(f"/proc/{pid}/syscall", encoding="ascii") as handle:
            first = handle.read().split(maxsplit=1)
    except (FileNotFoundError, ProcessLookupError):
        return False
    if not first or not first[0].isdigit():
        return False  # "running"
    numbers = PAUSE_SYSCALLS.get(platform.machine())
    return numbers is None or int(first[0]) in numbers


def _wait_until(iostat: subprocess.Popen[bytes], blocked: bool, timeout: float) -> float:
    """Spin until iostat is (or is no longer) blocked between samples; the monotonic time."""
    deadline = time.monotonic() + timeout
    while True:
        now = time.monotonic()
        if _blocked_between_samples(iostat.pid) is blocked:
            return now
        if blocked and iostat.poll() is not None:
            _, stderr = iostat.communicate()
            raise AssertionError(f"iostat exited early: {stderr.decode(errors='replace')}")
        if now > deadline:
            state = "blocked in pause()" if blocked else "awake"
            raise AssertionError(f"iostat (pid {iostat.pid}) never became {state}")


@dataclass
class SideBySide:
    iostat: dict[str, float]
    diskprobe: dict[str, FieldValue]
    prime_lag_ms: float  # from iostat seen blocked (first sample read) to our first sample read
    end_lag_ms: float  # from iostat seen awake (reading its second sample) to our second read


def _sample_side_by_side(device: str) -> SideBySide:
    context = CollectorContext(HostRoots(), Logger())
    collector = IoCollector(IoConfig(devices=[device], exclude=[]), context)
    env = {key: value for key, value in os.environ.items() if key != "POSIXLY_CORRECT"}
    env["LC_ALL"] = "C"  # "1.50", not "1,50"
    argv = ["iostat", "-x", "-y", "-d", "-o", "JSON", device, str(WINDOW_SEC), "1"]
    iostat = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        blocked_at = _wait_until(iostat, blocked=True, timeout=10.0)
        primed = collector.collect()
        primed_at = time.monotonic()
        assert primed.metrics == [], "the first collect() has no previous sample"
        time.sleep(max(0.0, blocked_at + WINDOW_SEC - 0.25 - time.monotonic()))
        woke_at = _wait_until(iostat, blocked=False, timeout=5.0)
        second = collector.collect()
        second_at = time.monotonic()
        stdout, stderr = iostat.communicate(timeout=15)
    finally:
        if iostat.poll() is None:
            iostat.kill()
            iostat.wait(timeout=15)
    assert iostat.returncode == 0, f"iostat failed: {stderr.decode(errors='replace')}"
    report = json.loads(stdout)
    disks = report["sysstat"]["hosts"][0]["statistics"][0]["disk"]
    (ours,) = [disk for disk in disks if disk["disk_device"] == device]
    assert len(second.metrics) == 1, f"diskprobe gave {second.metrics!r}"
    return SideBySide(
        iostat={key: float(value) for key, value in ours.items() if key != "disk_device"},
        diskprobe=second.metrics[0].fields,
        prime_lag_ms=(primed_at - blocked_at) * 1000.0,
        end_lag_ms=(second_at - woke_at) * 1000.0,
    )


def _table(result: SideBySide) -> tuple[str, list[str]]:
    rows, failures = [], []
    for key, field, scale in PAIRS:
        expected = result.iostat[key]
        value = result.diskprobe[field]
        assert isinstance(value, float), f"{field} is {value!r}"
        ours = value / scale
        allowed = max(RELATIVE_TOLERANCE * abs(expected), ABSOLUTE_TOLERANCE)
        ok = abs(ours - expected) <= allowed
        rows.append(
            f"  {key:>8} {expected:12.2f}   {field:<20} {ours:12.3f}  "
            f"diff {ours - expected:+9.3f} (allowed {allowed:.3f}) {'ok' if ok else 'MISMATCH'}"
        )
        if not ok:
            failures.append(key)
    return "\n".join(rows), failures


@pytest.mark.root
@pytest.mark.slow
def test_io_collector_matches_iostat(fio_load: BlockDevice) -> None:
    result = _sample_side_by_side(fio_load.name)
    table, failures = _table(result)
    report = (
        f"device {fio_load.name} ({fio_load.how}), "
        f"window {WINDOW_SEC} s, prime lag {result.prime_lag_ms:.3f} ms, "
        f"end lag {result.end_lag_ms:.3f} ms\n"
        f"  {'iostat':>8} {'value':>12}   {'diskprobe':<20} {'value':>12} (in iostat's unit)\n"
        f"{table}\n"
        f"iostat -x (all): {json.dumps(result.iostat, sort_keys=True)}\n"
        f"diskprobe (all): {json.dumps(result.diskprobe, sort_keys=True)}"
    )
    print(report)  # shown with -s, and by pytest on failure
    too_idle = [key for key, floor in MINIMUM_LOAD.items() if result.iostat[key] < floor]
    assert not too_idle, f"fio load too light to compare ({', '.join(too_idle)}):\n{report}"
    assert not failures, f"diskprobe disagrees with iostat on {', '.join(failures)}:\n{report}"
