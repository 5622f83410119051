"""`diskprobe diagnose` on real jobs (tests/diagnose_job.py) through the installed command.

The slow disk is a loop device on a tests/fuse_delay.py file (every request 4 ms), ext4 on
it, a dataset written and synced; each job evicts the files it reads from the page cache
itself (posix_fadvise DONTNEED on its own files only). Verdicts rest on shares of time (a
thread seen running, waiting on a file, sleeping), never on a measured duration; each case
asserts the verdict and the evidence that decided it, with the margins stated.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import pytest

from diagnose_host import DatasetHost, dataset_host, in_memory_dataset
from diskprobe.compute.syscalls import TABLES

from ci import skip_or_fail
from helpers import installed_command

pytestmark = [pytest.mark.root, pytest.mark.slow, pytest.mark.xdist_group("test_diagnose")]

JOB = Path(__file__).with_name("diagnose_job.py")
DELAY_MS = 4.0
WATCH_SEC = 4.0
SETTLE_SEC = 1.0  # the workers run before the watch starts
WAITING = 0.5  # "mostly": a share above half
STUCK_MS = 60_000.0  # a wedged server: far longer than a watch (diagnose's timeout is half)
ATTR_CACHE_SEC = 1.5  # libfuse's attr_timeout is 1 s: after it, a stat() asks the server


@pytest.fixture(scope="module")
def host() -> Iterator[DatasetHost]:
    with dataset_host(skip_or_fail, delay_ms=DELAY_MS) as slow:
        yield slow


@pytest.fixture(scope="module")
def tmpfs_data() -> Iterator[Path]:
    with in_memory_dataset("diagnose") as directory:
        yield directory


class Job:
    """A job in its own session (its workers die with it: killpg)."""

    def __init__(self, *argv: str, env: Optional[dict[str, str]] = None,
                 prefix: tuple[str, ...] = ()) -> None:  # fmt: skip
        self.process = subprocess.Popen(
            [*prefix, sys.executable, str(JOB), *argv], stdout=subprocess.PIPE, text=True,
            start_new_session=True, env={**os.environ, **(env or {})},
        )  # fmt: skip
        assert self.process.stdout is not None
        assert self.process.stdout.readline().strip() == "ready"
        time.sleep(SETTLE_SEC)

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)


def diagnose(*args: str, text: bool = False) -> Any:
    argv = [*installed_command(), "diagnose", *args, "--seconds", str(WATCH_SEC),
            "--format", "text" if text else "json"]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, timeout=WATCH_SEC + 60)
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode("utf-8")  # strict: the report is valid UTF-8
    return out if text else json.loads(out)


def watch_job(*argv: str, **options: Any) -> dict[str, Any]:
    job = Job(*argv, **options)
    try:
        report: dict[str, Any] = diagnose("--pid", str(job.process.pid))
    finally:
        job.stop()
    return report


def explain(report: dict[str, Any]) -> str:
    return json.dumps({key: report.get(key) for key in ("bottleneck", "reasons", "main",
                                                         "workers", "device")})  # fmt: skip


def test_workers_reading_from_a_slow_disk_make_it_disk(host: DatasetHost) -> None:
    report = watch_job("files", str(host.data), "2")
    assert report["bottleneck"] == "disk", explain(report)
    assert (report["device"], report["mount_point"]) == (host.device, str(host.mountpoint))
    assert report["waiters"] == "workers" and report["direction"] == "read"
    assert report["main"]["shares"]["sleeping"] > WAITING  # the loop waits for its batches
    assert report["workers"]["io_wait"] > report["workers"]["running"]
    assert any(path.startswith(str(host.data)) for path in report["paths"]), report["paths"]
    assert report["device_iostat"]["reads_per_sec"] > 0


def test_a_dataset_read_through_mmap_waits_in_page_faults_and_is_disk(host: DatasetHost) -> None:
    report = watch_job("mmap", str(host.big), "2")
    assert report["bottleneck"] == "disk", explain(report)
    assert report["device"] == host.device
    assert str(host.big) in report["paths"]


def test_workers_busy_on_transforms_make_it_input_cpu(tmpfs_data: Path) -> None:
    report = watch_job("cpu", str(tmpfs_data), "2")
    assert report["bottleneck"] == "input_cpu", explain(report)
    assert report["workers"]["running"] > report["workers"]["io_wait"]
    assert "device" not in report


def test_a_busy_step_with_batches_in_memory_is_compute(host: DatasetHost) -> None:
    report = watch_job("compute")
    assert report["bottleneck"] == "compute", explain(report)
    assert report["main"]["shares"]["running"] > WAITING


def test_fsyncs_to_the_slow_disk_are_checkpoint(host: DatasetHost) -> None:
    report = watch_job("checkpoint", str(host.checkpoints))
    assert report["bottleneck"] == "checkpoint", explain(report)
    assert report["direction"] == "write" and report["device"] == host.device
    assert str(host.checkpoints / "ckpt.bin") in report["paths"]


def test_reads_from_a_fuse_filesystem_are_remote_fs(host: DatasetHost) -> None:
    report = watch_job("remote", str(host.fuse_file), "2")
    assert report["bottleneck"] == "remote_fs", explain(report)
    assert report["mount_point"] == str(host.slow.mountpoint)
    assert report["fstype"] == "fuse.delay" and report["remote"] is True


def test_a_wedged_remote_filesystem_does_not_hang_the_watch(host: DatasetHost) -> None:
    """A worker blocked in a read of a FUSE file whose server then stops answering stat() as
    well (a hard NFS mount whose server is gone): diagnose never stat()s a job's file (the
    fd's mount comes from fdinfo's mnt_id), so it reports in time, remote_fs."""
    slow = host.slow
    stuck, other = slow.files[1], slow.files[0]
    table: dict[str, object] = {other: DELAY_MS, stuck: STUCK_MS}

    def write_table() -> None:
        temp = slow.delay_file.with_suffix(".tmp")
        temp.write_text(json.dumps(table))
        os.replace(temp, slow.delay_file)
        time.sleep(0.1)  # the daemon polls every 20 ms

    write_table()  # reads of the file now take STUCK_MS; its open and stat still answer
    try:
        job = Job("remote", str(host.fuse_file), "1")
        table["@getattr"] = [stuck]
        write_table()  # now stat() of it waits STUCK_MS too
        time.sleep(ATTR_CACHE_SEC)
        try:
            done = subprocess.run(
                [*installed_command(), "diagnose", "--pid", str(job.process.pid), "--seconds",
                 "2", "--format", "json"], capture_output=True, timeout=STUCK_MS / 2000,
            )  # fmt: skip
        finally:
            job.stop()
    finally:
        table = {name: DELAY_MS for name in slow.files}
        write_table()
    report = json.loads(done.stdout)
    assert report["bottleneck"] == "remote_fs", explain(report)
    assert report["fstype"] == "fuse.delay"


def test_a_cgroup_read_limit_makes_it_throttled(host: DatasetHost, tmp_path: Path) -> None:
    """cgroup v1 blkio.throttle (what this machine has): 1 MiB/s on the loop device."""
    cgroup = Path("/sys/fs/cgroup/blkio") / f"diagnose-{tmp_path.name}"
    if not cgroup.parent.joinpath("blkio.throttle.read_bps_device").exists():
        skip_or_fail("no cgroup v1 blkio hierarchy at /sys/fs/cgroup/blkio")
    cgroup.mkdir()
    device = Path(f"/sys/class/block/{host.device}/dev").read_text().strip()
    try:
        (cgroup / "blkio.throttle.read_bps_device").write_text(f"{device} {1 << 20}\n")
        job = Job("files", str(host.data), "2", prefix=(
            "sh", "-c", f'echo $$ > {cgroup}/cgroup.procs && exec "$@"', "sh"))  # fmt: skip
        try:
            report = diagnose("--cgroup", str(cgroup))
        finally:
            job.stop()
    finally:
        for _ in range(50):
            try:
                cgroup.rmdir()
                break
            except OSError:
                time.sleep(0.1)
    assert report["bottleneck"] == "throttled", explain(report)
    assert report["device"] == host.device
    assert report["throttle"]["limit"] == "rbps" and report["throttle"]["value"] == 1 << 20
    assert report["throttle"]["reached"] > WAITING


def test_a_compute_job_beside_a_saturated_disk_is_not_blamed_on_it(host: DatasetHost) -> None:
    """fio saturates the loop device the job's dataset is on; the job computes."""
    fio = subprocess.Popen(
        ["fio", "--name=saturate", f"--filename=/dev/{host.device}", "--readonly",
         "--rw=randread", "--direct=1", "--ioengine=psync", "--numjobs=2", "--time_based",
         "--runtime=60", "--output=/dev/null", "--thread"], start_new_session=True,
    )  # fmt: skip
    try:
        report = watch_job("compute")
        util = _util(host.device)
    finally:
        os.killpg(fio.pid, signal.SIGKILL)
        fio.wait(10)
    assert report["bottleneck"] == "compute", explain(report)
    assert util > 50.0, f"the device was not busy ({util:.0f} %): the test proves nothing"


def test_a_job_waiting_a_third_of_the_time_follows_the_larger_share(host: DatasetHost) -> None:
    report = watch_job("third", str(host.data / "sample-000.bin"))
    shares = report["main"]["shares"]
    assert report["bottleneck"] == "compute", explain(report)
    assert 0.1 < shares["io_wait"] < shares["running"], shares  # about 1/3 and 2/3


def test_a_sleeping_job_is_idle_and_its_shell_wrapper_is_passed_through() -> None:
    report = watch_job("idle", prefix=("sh", "-c", '"$@"; true', "sh"))  # sh stays, waiting
    assert report["bottleneck"] == "idle", explain(report)
    roles = {(process["comm"][:6], process["role"]) for process in report["processes"]}
    assert roles == {("sh", "wrapper"), ("python", "main")}, report["processes"]


def test_ctrl_c_ends_the_watch_early_with_a_report_of_what_was_seen() -> None:
    job = Job("idle")
    try:
        watch = subprocess.Popen(
            [*installed_command(), "diagnose", "--pid", str(job.process.pid), "--seconds", "60",
             "--format", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            # pytest-xdist's workers ignore SIGINT, and a child inherits that: Python then
            # installs no handler. A shell's Ctrl-C reaches a diagnose with the default.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )  # fmt: skip
        _sleeping_between_samples(watch.pid)  # in the watch, not still importing
        watch.send_signal(signal.SIGINT)
        out, err = watch.communicate(timeout=30)
    finally:
        job.stop()
    assert watch.returncode == 0, err
    report = json.loads(out)
    assert report["bottleneck"] == "idle" and 0 < report["seconds"] < 30, explain(report)


def _sleeping_between_samples(pid: int, timeout: float = 60.0) -> None:
    """Until the process is blocked in clock_nanosleep: diagnose's watch between two samples
    (Python's time.sleep), which its start-up (imports, reads) never is."""
    number = next(n for n, kind in TABLES[os.uname().machine].items()
                  if kind.name == "clock_nanosleep")  # fmt: skip
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/syscall").read_text().split()[0] == str(number):
                return
        time.sleep(0.02)
    raise AssertionError(f"diagnose ({pid}) never got to its watch")


def test_a_job_that_exits_during_the_watch_is_unknown_with_the_reason() -> None:
    report = watch_job("exit", "1.5")
    assert report["bottleneck"] == "unknown", explain(report)
    assert "ended" in report["reasons"][0]


def test_the_text_report_says_it_in_a_sentence_with_advice(host: DatasetHost) -> None:
    job = Job("files", str(host.data), "2", env={"DIAGNOSE_JOB_COMM": "\udcffloader"})
    try:
        text = diagnose("--pid", str(job.process.pid), text=True)
    finally:
        job.stop()
    lines = text.splitlines()
    assert lines[1] == "bottleneck: disk", text
    assert lines[2].startswith(f"{host.device} holds {host.mountpoint}, which the job reads from")
    assert lines[2].endswith("the job is disk-bound.")
    assert lines[-1].startswith("advice: cache the dataset")
    assert "%FFloader" in text  # the comm's byte that is not UTF-8, escaped


def test_without_ptrace_rights_the_states_still_count_and_the_report_says_so(
    host: DatasetHost,
) -> None:
    """A reader owned by nobody; diagnose as root without CAP_SYS_PTRACE: /proc/<tid>/syscall
    and the fd links are refused, the D states are still seen."""
    with open(host.big, "rb") as data:  # opened here: nobody may not enter the work dir
        reader = subprocess.Popen(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "dd",
             "of=/dev/null", "bs=4k", "iflag=direct", "status=none"],
            stdin=data, start_new_session=True,
        )  # fmt: skip
    drop = ["setpriv", "--inh-caps=-sys_ptrace", "--bounding-set=-sys_ptrace", "--"]
    try:
        time.sleep(SETTLE_SEC)
        done = subprocess.run(
            [*drop, *installed_command(), "diagnose", "--pid", str(reader.pid), "--seconds",
             str(WATCH_SEC), "--format", "json"], capture_output=True, timeout=WATCH_SEC + 60,
        )  # fmt: skip
    finally:
        os.killpg(reader.pid, signal.SIGKILL)
        reader.wait(10)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["bottleneck"] == "disk", explain(report)
    assert report["device"] is None and "device_iostat" not in report
    assert "/proc/<tid>/syscall needs root or CAP_SYS_PTRACE" in report["notes"][0]


def _util(device: str) -> float:
    """The device's %util over one second, from /proc/diskstats (io_ticks)."""
    def ticks() -> int:
        for line in Path("/proc/diskstats").read_text().splitlines():
            parts = line.split()
            if parts[2] == device:
                return int(parts[12])
        raise AssertionError(device)
    first = ticks()
    time.sleep(1.0)
    return (ticks() - first) / 10.0
