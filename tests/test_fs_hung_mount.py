"""diskprobe_fs against a really hung mount: a FUSE filesystem whose statfs never answers.

tests/fuse_hang.py (a separate process) mounts a FUSE filesystem whose statfs blocks while a flag
file exists; getattr and readdir of its root keep answering. Its call log records the process
(thread group) behind each statfs request. The tests check what the hang-proof statfs promises:
the mount is reported with only responsive=false (and unresponsive_sec, counting from its
first such point) once its call timed out, one W! line when it goes stuck and one I! line when
it answers again, at most one outstanding call per mount, every other mount and the
diskprobe_io points still in the same batch, the loop keeps batching, never waiting for the
stuck call, and diskprobe exits at the end of its input without waiting for a statfs of its
that is stuck. A mount whose daemon died (every call fails with ENOTCONN) is still reported, as
responsive=false.

How diskprobe does it: the statvfs calls run in a helper process, `python -m
diskprobe.sources.statfs_worker` (one scanning thread, handed over to a fresh one by a watchdog
when a call hangs; its own session; stdin and stdout are pipes
to diskprobe only, stderr /dev/null). So the statfs requests in the daemon's log come from that
worker's pid, never from diskprobe's (or, in process, from pytest's). At exit diskprobe closes the
worker's stdin and does not wait for it: the worker ends at once if nothing of it is stuck, else
it stays behind (see below) until the mount answers or its connection is aborted, holding none of
diskprobe's (Telegraf's) pipes.

What a statfs caught in a wedged FUSE daemon does, checked on the development VM (Linux 6.18):
* while the request is unanswered, the calling thread sleeps in the kernel's
  request_wait_answer(), interruptibly at first (state S, not D);
* a fatal signal, and so the exit of its process (exit_group kills every thread), sends the
  daemon an INTERRUPT; the daemon ignores it, the request has already been read, so the kernel
  waits for the answer uninterruptibly (state D). The process's main thread is a zombie, the
  process as a whole does not end, its parent's waitpid() does not return and the pipes it holds
  (stdout!) stay open. More SIGKILLs change nothing, nor does SIGTERM to the FUSE daemon (libfuse
  then waits for its busy worker thread). This is why the calls run in a separate process: the
  worker is the one left in that state, not diskprobe;
* what frees it: the daemon's answer, the daemon's death (its /dev/fuse closed: the kernel aborts
  the connection), or aborting the connection by hand: `echo 1 > /sys/fs/fuse/connections/N/abort`
  (fusectl mounted there), N being the minor of the mount's 0:N device in mountinfo. stat() of
  the mount point would itself be a FUSE request, so N comes from /proc/self/mountinfo. The call
  then fails with ENOTCONN, as does every later one until the mount is gone.

No check here bounds a duration from above (the figures are measured by
tests/bench/bench_hung_mount.py, never asserted): each test keeps the mount hung while it checks,
so a regression that waits for the hung statfs hangs, and every wait for something to happen
fails only after HANG_GUARD_SEC, far beyond what a loaded machine adds. The evidence is causal:
* a collect, a batch, close() or diskprobe's exit "did not wait for the stuck mount" when it
  returned while the flag still blocks statfs, its statfs request still waiting in the worker's
  kernel, and the daemon's log holds no further request from that worker;
* "never waits for it again, not even for the timeout": once the mount is stuck, the in-process
  tests raise the prober's timeout to an hour (NEVER_SEC), so a later collect that waited for
  the stuck call at all would run into the hang guard;
* the first collect or batch, which must wait the timeout, is checked from below (it took at
  least the timeout, which no slow machine can make false) and by what it reports.
Out of process, that a later batch does not wait the timeout again (a bounded wait) shows only
in its duration: the in-process tests check it in the same FilesystemsCollector and
StatfsProber that diskprobe runs, and the benchmark measures the batches.

So every test tears down through the fixtures' finalizers: flag removed, connection aborted, the
collector closed or diskprobe stopped, each statfs worker gone (a worker left stuck behind by a
diskprobe that exited is freed by the abort), `umount -l`, helper stopped, and no process that
called statfs on the mount still blocked in it.

The hung mount is visible to the whole mount namespace while a test runs: a df or another
diskprobe started meanwhile on this machine would hang on it (until the finalizer frees it). On a
shared machine, run this file in a private namespace:
`unshare --mount --pid --fork --mount-proc pytest tests/test_fs_hung_mount.py`.

Needs root, /dev/fuse, the `mfusepy` package (pip, in the test extra) and libfuse3 (Debian
`libfuse3-3`; mfusepy also accepts `libfuse2`).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Callable

import psutil
import pytest

from diskprobe.collectors.base import Collection, CollectorContext
from diskprobe.collectors.filesystems import FilesystemsCollector
from diskprobe.config import PSEUDO_FILESYSTEMS, FilesystemsConfig
from diskprobe.log import Logger
from diskprobe.metric import FieldValue, Metric
from diskprobe.roots import HostRoots
from diskprobe.sources.statfs import StatfsProber, WorkerStatfs
from diskprobe.state import StateStore

from ci import HANG_GUARD_SEC, guarded, skip_or_fail
from lineproto import Point, parse_lines

# Serial (tests/lanes.py): a hung FUSE mount is seen by every process that lists the mounts, so
# another test's collector would wait on it, and these tests' collectors on another test's.
pytestmark = [pytest.mark.root, pytest.mark.slow, pytest.mark.serial]

HELPER = Path(__file__).with_name("fuse_hang.py")
DISKPROBE = Path(sys.executable).parent / "diskprobe"
WORKER_MODULE = "diskprobe.sources.statfs_worker"
RUN_TOKEN_ENV = "DISKPROBE_HUNG_MOUNT_TEST"  # marks the diskprobe processes a test started
FSTYPE = "fuse.hang"  # the helper's subtype; "fuse" is not in the default ignore list either
IGNORE_FS = [fstype for fstype in PSEUDO_FILESYSTEMS if fstype not in ("fuse", FSTYPE)]
FUSECTL = Path("/sys/fs/fuse/connections")
SIZE_FIELDS = ("total_bytes", "used_bytes", "free_bytes", "avail_bytes")
ENOTCONN_TEXT = os.strerror(107)  # "Transport endpoint is not connected"

# Every wait for something to happen (mounted, answered, exited, a batch) fails only after
# HANG_GUARD_SEC: only a hang (a regression that waits for the statfs of a mount that answers
# nothing while the test checks) gets near it.
# Cleanup steps that escalate (SIGTERM, then SIGKILL; EOF, then abort and kill): not checks.
HELPER_EXIT_GRACE_SEC = 5.0
EXIT_GRACE_SEC = 5.0

# In process (a, d, e)
STAT_TIMEOUT_SEC = 2.0  # the first collect's; a healthy mount answers well within it
NEVER_SEC = 3600.0  # the prober's timeout once the mount is stuck: see InProcess.never_time_out
STUCK_COLLECTS = 3  # collects while the mount is stuck: one statfs request for all of them

# Out of process (b, c)
LOOP_STAT_TIMEOUT = "2s"
LOOP_TIMEOUT_MS = 2000.0
BATCHES = 4  # batches watched, the first included
CADENCE_SEC = 2.0


def _ours_or_gone(pid: int) -> bool:
    try:
        return os.getpid() in (parent.pid for parent in psutil.Process(pid).parents())
    except psutil.NoSuchProcess:
        return True


def _require_fuse() -> None:
    reason = ""
    if os.geteuid() != 0:
        reason = "needs root: mounts a FUSE filesystem and aborts its connection"
    elif not Path("/dev/fuse").exists():
        reason = "/dev/fuse is missing (no FUSE in this kernel or container)"
    if reason:
        skip_or_fail(reason)


def _unresponsive(fields: dict[str, FieldValue]) -> bool:
    """All a mount that does not answer sends: responsive=false and for how long."""
    return set(fields) == {"responsive", "unresponsive_sec"} and fields["responsive"] is False


def _wait_until(done: Callable[[], bool], timeout: float) -> bool:
    """Polls `done` until it holds (True) or `timeout` passes (False)."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


# -- processes, from /proc ------------------------------------------------------------------------


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/PID/stat from the state on (field 3 first), or None if the process is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _task_states(pid: int) -> dict[str, str]:
    """Thread id -> "state wchan" for each thread of `pid` (e.g. "D request_wait_answer")."""
    states: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for task in sorted(Path(f"/proc/{pid}/task").iterdir()):
            with contextlib.suppress(OSError, IndexError):
                state = (task / "stat").read_text().rsplit(")", 1)[1].split()[0]
                states[task.name] = f"{state} {(task / 'wchan').read_text().strip()}"
    return states


def _blocked_in_fuse(pid: int) -> dict[str, str]:
    """The threads of `pid` that wait in the kernel: in a FUSE request, or in state D."""
    return {
        tid: state
        for tid, state in _task_states(pid).items()
        if state.startswith("D") or state.endswith("request_wait_answer")
    }


def _cmdline(pid: int) -> str:
    with contextlib.suppress(OSError):
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        return raw.replace(b"\0", b" ").decode(errors="replace")
    return ""


def _fd_targets(pid: int) -> set[str]:
    """What the open file descriptors of `pid` point to ("pipe:[1234]", paths, ...)."""
    targets: set[str] = set()
    with contextlib.suppress(OSError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                targets.add(os.readlink(fd))
    return targets


@dataclass(frozen=True)
class Proc:
    """A process seen alive once, by pid and start time (which tells a reused pid apart)."""

    pid: int
    started: str

    @classmethod
    def of(cls, pid: int) -> Proc | None:
        fields = _stat_fields(pid)
        return None if fields is None else cls(pid, fields[19])

    def finished(self) -> bool:
        """Gone, or a zombie of which no thread is left (one stuck in FUSE keeps it alive)."""
        fields = _stat_fields(self.pid)
        if fields is None or fields[19] != self.started:
            return True
        return all(state.split()[0] in ("Z", "X") for state in _task_states(self.pid).values())

    def reap(self) -> None:
        """Collects it if it is a finished child of this process (PID 1 of a private namespace
        inherits the workers that diskprobe leaves behind)."""
        fields = _stat_fields(self.pid)
        if fields is not None and fields[19] == self.started and int(fields[1]) == os.getpid():
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, os.WNOHANG)


# -- mountinfo, read without touching the mount ---------------------------------------------------


def _unescape(text: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda match: chr(int(match.group(1), 8)), text)


def _fuse_minors(mountpoint: str, mountinfo: str = "/proc/self/mountinfo") -> list[int]:
    """Device minors (= fusectl connection numbers) of the FUSE mounts at `mountpoint`."""
    minors: list[int] = []
    with open(mountinfo, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            head, _, tail = line.partition(" - ")
            fields, described = head.split(), tail.split()
            if len(fields) < 5 or not described:
                continue
            fuse = described[0] == "fuse" or described[0].startswith("fuse.")
            if fuse and _unescape(fields[4]) == mountpoint:
                minors.append(int(fields[2].split(":")[1]))
    return minors


def _fusectl_mounted() -> bool:
    with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as handle:
        return any(" - fusectl " in line for line in handle)


# -- the hung mount ----------------------------------------------------------------------------


@dataclass
class HungMount:
    path: str
    flag: Path
    calls: Path
    process: subprocess.Popen[bytes]
    log: Path
    mounted_fusectl: bool = False

    def release(self) -> None:
        """statfs answers again (the daemon polls the flag every 50 ms)."""
        self.flag.unlink(missing_ok=True)

    def callers(self) -> list[int]:
        """The process behind each statfs request the daemon received, in order: those of
        this test's process tree (or gone since). A process of someone else's that lists the
        mounts, a diskprobe agent left running on a developer's machine, say, is not ours."""
        pids = [int(pid) for pid in self.calls.read_text(encoding="ascii").split()]
        return [pid for pid in pids if _ours_or_gone(pid)]

    def calls_from(self, pid: int) -> int:
        """statfs requests the daemon received from process `pid`."""
        return self.callers().count(pid)

    def wait_call_from(self, pid: int) -> None:
        """The daemon has received a statfs request from `pid` (the one that hangs: a caller
        gives up on it after its timeout, maybe before the request has reached the daemon)."""
        assert _wait_until(lambda: self.calls_from(pid) > 0, HANG_GUARD_SEC), self.callers()

    def assert_still_hung(self, pid: int) -> None:
        """statfs still blocks, and process `pid` still waits in the kernel for its request:
        whatever returned meanwhile did not wait for that call to return."""
        assert self.flag.exists()
        assert _wait_until(lambda: bool(_blocked_in_fuse(pid)), HANG_GUARD_SEC), (
            f"{pid} is not waiting in a FUSE request: {_task_states(pid)}"
        )

    def wait_mounted(self) -> None:
        deadline = time.monotonic() + HANG_GUARD_SEC
        while not _fuse_minors(self.path):
            if self.process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(
                    f"{HELPER.name} did not mount {self.path} (exit {self.process.poll()}): "
                    + self.log.read_text(errors="replace").strip(),
                    pytrace=False,
                )
            time.sleep(0.05)
        # diskprobe reads PID 1's mount table (its own if that one is unreadable): the mount
        # must be in PID 1's mount namespace too.
        with contextlib.suppress(OSError):
            assert _fuse_minors(self.path, "/proc/1/mountinfo"), "PID 1 does not see the mount"

    def kill_daemon(self) -> None:
        """The daemon dies: the kernel aborts the connection, the mount stays (ENOTCONN)."""
        self.process.kill()
        self.process.wait(HANG_GUARD_SEC)

    def abort(self) -> None:
        """Abort the FUSE connection: every request on it fails with ENOTCONN, now and later."""
        for minor in _fuse_minors(self.path):
            if not (FUSECTL / str(minor)).exists() and not _fusectl_mounted():
                subprocess.run(["mount", "-t", "fusectl", "none", str(FUSECTL)], check=True)
                self.mounted_fusectl = True
            with contextlib.suppress(FileNotFoundError):
                (FUSECTL / str(minor) / "abort").write_text("1\n")

    def close(self) -> None:
        self.release()
        try:
            self.abort()
        finally:
            if _fuse_minors(self.path):
                subprocess.run(["umount", "-l", self.path], check=False)
            self.process.terminate()
            try:
                self.process.wait(HELPER_EXIT_GRACE_SEC)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(HANG_GUARD_SEC)
            if self.mounted_fusectl:
                subprocess.run(["umount", str(FUSECTL)], check=False)
        # No process that called statfs on the mount (the workers) still waits in the kernel.
        callers = set(self.callers())
        _wait_until(lambda: not any(_blocked_in_fuse(pid) for pid in callers), HANG_GUARD_SEC)
        blocked = {pid: _blocked_in_fuse(pid) for pid in callers if _blocked_in_fuse(pid)}
        assert not blocked, f"statfs callers still blocked: {blocked}"
        assert not _blocked_in_fuse(os.getpid()), _task_states(os.getpid())
        assert not _fuse_minors(self.path), f"{self.path} is still mounted"


def start_hung_mount(directory: Path) -> HungMount:
    """fuse_hang.py serving DIRECTORY/hung, mounted, its statfs hanging from the start (until
    `release()`); `close()` it (tests/bench/bench_hung_mount.py uses this too)."""
    mountpoint = directory / "hung"
    mountpoint.mkdir()
    flag, calls, log = (directory / name for name in ("statfs-hangs", "statfs-calls", "fuse.log"))
    flag.touch()
    calls.touch()
    with open(log, "wb") as log_file:
        process = subprocess.Popen(
            [
                sys.executable,
                str(HELPER),
                str(mountpoint),
                "--hang-while",
                str(flag),
                "--calls",
                str(calls),
            ],
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C in the terminal goes to pytest only
        )
    mount = HungMount(str(mountpoint), flag, calls, process, log)
    try:
        mount.wait_mounted()
    except BaseException:
        mount.close()
        raise
    return mount


@pytest.fixture
def hung_mount(tmp_path: Path) -> Iterator[HungMount]:
    """A FUSE mount whose statfs hangs from the start (until `release()`)."""
    _require_fuse()
    mount = start_hung_mount(tmp_path)
    try:
        yield mount
    finally:
        mount.close()


# -- (a, d, e) the collector in this process, its statfs calls in a worker process -------------


@dataclass
class InProcess:
    collector: FilesystemsCollector
    prober: StatfsProber
    backend: WorkerStatfs
    stream: io.StringIO
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)  # seen, for teardown

    def collect(self) -> tuple[Collection, dict[str, Metric], float]:
        """One collect, in a thread: one that waits for the hung statfs fails the test at
        HANG_GUARD_SEC instead of hanging it (the finalizer's abort then lets it return)."""
        started = time.monotonic()
        collection = guarded(self.collector.collect, "collect(): it waits for the hung statfs")
        took = time.monotonic() - started
        return collection, {m.tags["path"]: m for m in collection.metrics}, took

    def never_time_out(self) -> None:
        """From now on a statfs call is given an hour. The mount already stuck is not probed
        nor waited for again, so the collects still return at once; one that waited for the
        stuck call, even only for its timeout, would now run into the hang guard."""
        self.prober.timeout = NEVER_SEC

    def worker(self) -> subprocess.Popen[bytes]:
        process = self.backend.helper_process
        assert process is not None, "no statfs worker running"
        assert WORKER_MODULE in _cmdline(process.pid), _cmdline(process.pid)
        if process not in self.workers:
            self.workers.append(process)
        return process

    def lines(self, prefix: str, path: str) -> list[str]:
        lines = self.stream.getvalue().splitlines()
        return [line for line in lines if line.startswith(prefix) and path in line]

    def wait_returned(self) -> None:
        """The outstanding (stuck) calls have returned to the prober, whatever their result."""
        assert _wait_until(lambda: not self.prober.stuck(), HANG_GUARD_SEC), (
            f"statfs still outstanding: {self.prober.stuck()}"
        )


def make_in_process(directory: Path, timeout: float) -> InProcess:
    """A FilesystemsCollector with the default backend, the worker process, logging to a
    string (tests/bench/bench_hung_mount.py uses this too)."""
    stream = io.StringIO()
    log = Logger(stream)
    state = StateStore(str(directory / "state.json"), log)
    config = FilesystemsConfig(ignore_fs=IGNORE_FS, stat_timeout=timeout)
    backend = WorkerStatfs()
    prober = StatfsProber(timeout, backend)
    context = CollectorContext(HostRoots(), log, state)
    collector = FilesystemsCollector(config, context, prober=prober)
    return InProcess(collector, prober, backend, stream)


@pytest.fixture
def in_process(hung_mount: HungMount, tmp_path: Path) -> Iterator[InProcess]:
    """make_in_process() with stat_timeout STAT_TIMEOUT_SEC."""
    setup = make_in_process(tmp_path, STAT_TIMEOUT_SEC)
    try:
        yield setup
    finally:
        # The worker's stuck call fails with ENOTCONN; closed, the worker then ends at once.
        hung_mount.release()
        hung_mount.abort()
        if setup.backend.helper_process is not None:
            setup.worker()
        setup.collector.close()
        stuck: dict[int, dict[str, str]] = {}
        for worker in setup.workers:
            try:
                worker.wait(HANG_GUARD_SEC)
            except subprocess.TimeoutExpired:
                stuck[worker.pid] = _task_states(worker.pid)
                worker.kill()
                worker.wait(HANG_GUARD_SEC)
        assert not stuck, f"statfs workers did not exit once closed: threads {stuck}"


def _first_collect(hung_mount: HungMount, in_process: InProcess) -> dict[str, Metric]:
    """The collect that meets the hung mount first: it gives it the whole timeout (a lower
    bound: waiting at least that long cannot fail on a slow machine), then reports it
    unresponsive and says so once, while the request still hangs in the worker."""
    path = hung_mount.path
    _, points, took = in_process.collect()
    assert took >= STAT_TIMEOUT_SEC, f"did not wait the timeout: {took:.3f}s"
    assert _unresponsive(points[path].fields)
    assert points[path].tags["fstype"] == FSTYPE
    assert points["/"].fields["responsive"] is True
    warnings = in_process.lines("W! ", path)
    assert len(warnings) == 1, in_process.stream.getvalue()
    assert f"did not answer within {STAT_TIMEOUT_SEC:g}s" in warnings[0], warnings
    assert in_process.prober.stuck() == [path]
    worker = in_process.worker()
    hung_mount.wait_call_from(worker.pid)
    hung_mount.assert_still_hung(worker.pid)
    return points


def test_collector_reports_the_hung_mount_and_waits_for_it_only_once(
    hung_mount: HungMount, in_process: InProcess
) -> None:
    path = hung_mount.path
    points = _first_collect(hung_mount, in_process)
    assert all(points["/"].fields[name] for name in SIZE_FIELDS), points["/"].fields
    worker = in_process.worker()

    # Not waited for again: with an hour's timeout from now on, these collects return (before
    # the hang guard) only if they neither wait for the outstanding call nor probe it afresh.
    in_process.never_time_out()
    for _ in range(STUCK_COLLECTS - 1):
        _, points, _ = in_process.collect()
        assert _unresponsive(points[path].fields)
        assert points["/"].fields["responsive"] is True
    # They returned while the first request still hangs. One request for all the collects (no
    # second call while the first is outstanding), made by the worker: nothing of this
    # process waits on the mount.
    hung_mount.assert_still_hung(worker.pid)
    assert hung_mount.callers() == [worker.pid]
    assert in_process.prober.stuck() == [path]
    assert not _blocked_in_fuse(os.getpid()), _task_states(os.getpid())
    assert len(in_process.lines("W! ", path)) == 1, in_process.stream.getvalue()
    assert not in_process.lines("I! ", path)

    # The daemon answers again; the outstanding call returns, the next collect probes afresh.
    hung_mount.release()
    in_process.wait_returned()
    _, points, _ = in_process.collect()
    fields = points[path].fields
    assert fields["responsive"] is True
    assert fields["total_bytes"] == 25_600 * 4096 and fields["avail_bytes"] == 10_240 * 4096
    assert hung_mount.callers() == [worker.pid, worker.pid]
    assert in_process.worker() is worker  # the same worker all along
    info = in_process.lines("I! ", path)
    assert len(info) == 1 and "answers again" in info[0], in_process.stream.getvalue()
    assert len(in_process.lines("W! ", path)) == 1, in_process.stream.getvalue()
    assert not in_process.lines("E! ", "")


def test_a_mount_whose_daemon_died_is_still_reported_unresponsive(
    hung_mount: HungMount, in_process: InProcess
) -> None:
    path = hung_mount.path
    _first_collect(hung_mount, in_process)  # stuck
    worker = in_process.worker()

    # The wedged daemon dies: the kernel aborts its connection, the stuck call fails with
    # ENOTCONN, and so does every later one; the mount stays in the mount table. With an
    # hour's timeout, each collect below returns only if the calls fail rather than hang.
    in_process.never_time_out()
    hung_mount.kill_daemon()
    in_process.wait_returned()
    for number in range(2):
        collection, points, _ = in_process.collect()
        assert path in points, f"collect {number}: the dead mount was dropped"
        assert _unresponsive(points[path].fields), (number, points[path])
        assert points[path].tags["fstype"] == FSTYPE
        assert collection.errors >= 1, number  # an error, not a timeout
        assert points["/"].fields["responsive"] is True
    # Timed out, then ENOTCONN: one W! line for each, none repeated, no recovery claimed.
    warnings = in_process.lines("W! ", path)
    assert len(warnings) == 2 and ENOTCONN_TEXT in warnings[1], in_process.stream.getvalue()
    assert not in_process.lines("I! ", path)
    assert not in_process.lines("E! ", "")
    # The later calls fail in the kernel. One fresh call may still reach the daemon while it
    # is dying (its log then names the calling thread, which has exited since); none after.
    callers = hung_mount.callers()
    assert callers[0] == worker.pid and len(callers) <= 2, callers


def test_close_does_not_wait_for_a_worker_stuck_in_the_kernel(
    hung_mount: HungMount, in_process: InProcess
) -> None:
    _first_collect(hung_mount, in_process)
    worker = in_process.worker()

    # At end of input the worker exits by itself, its stuck call killed with it (seen: the
    # worker already a zombie when the test looked), so "still there after close()" would race
    # with it. Stopped, it cannot end: a close() that waited for it would wait for ever, which
    # the hang guard ends (the finalizer's abort and the SIGCONT below then free it).
    os.kill(worker.pid, signal.SIGSTOP)
    try:
        guarded(in_process.collector.close, "close(): it waits for the worker")
        # Evidence that it returned without the worker: the worker is still there, still
        # waiting in the kernel for the request that hangs.
        worker_running = worker.poll() is None
        worker_stuck = _blocked_in_fuse(worker.pid)
    finally:
        os.kill(worker.pid, signal.SIGCONT)
    # The abort frees the worker, and the worker exits then.
    hung_mount.abort()
    assert worker_running and worker_stuck, (worker_running, _task_states(worker.pid))
    assert worker.wait(HANG_GUARD_SEC) == 0


# -- (b, c) the diskprobe console script, as Telegraf's execd runs it -------------------------


@dataclass
class Batch:
    points: list[Point]

    def fs(self, path: str) -> Point | None:
        return next(
            (p for p in self.points if p.measurement == "diskprobe_fs" and p.tags["path"] == path),
            None,
        )

    def agent(self, collector: str) -> Point:
        return next(
            p
            for p in self.points
            if p.measurement == "diskprobe_agent" and p.tags["collector"] == collector
        )


@dataclass
class Diskprobe:
    process: subprocess.Popen[bytes]
    token: str  # in the environment of diskprobe and of the workers it starts
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    readers: list[threading.Thread] = field(default_factory=list)
    workers: set[Proc] = field(default_factory=set)

    def __post_init__(self) -> None:
        assert self.process.stdout is not None and self.process.stderr is not None
        pairs = ((self.process.stdout, self.stdout), (self.process.stderr, self.stderr))
        for stream, lines in pairs:
            reader = threading.Thread(target=_read_lines, args=(stream, lines), daemon=True)
            reader.start()
            self.readers.append(reader)

    def batches(self) -> list[Batch]:
        """Complete batches so far: each ends with the filesystems collector's agent point."""
        batches, current = [], []
        for point in parse_lines("".join(list(self.stdout))):
            current.append(point)
            if point.measurement == "diskprobe_agent" and point.tags["collector"] == "filesystems":
                batches.append(Batch(current))
                current = []
        return batches

    def wait_for(self, done: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            if self.process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"{what}; exit {self.process.poll()}, stderr: {''.join(self.stderr)}")
            time.sleep(0.05)

    def warnings(self, path: str) -> list[str]:
        return [line for line in list(self.stderr) if line.startswith("W! ") and path in line]

    def find_workers(self) -> set[Proc]:
        """The statfs workers of this diskprobe that are alive now (recorded in `workers`)."""
        for pid in _pids_with_env(RUN_TOKEN_ENV, self.token):
            if WORKER_MODULE in _cmdline(pid):
                proc = Proc.of(pid)
                if proc is not None:
                    self.workers.add(proc)
        return self.workers

    def worker(self) -> Proc:
        """Its one statfs worker, started by the first batch."""
        workers = self.find_workers()
        assert len(workers) == 1, workers
        (worker,) = workers
        assert int((_stat_fields(worker.pid) or ["", "0"])[1]) == self.process.pid
        return worker


def _pids_with_env(name: str, value: str) -> list[int]:
    needle = f"{name}={value}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if needle in (entry / "environ").read_bytes().split(b"\0"):
                    pids.append(int(entry.name))
    return pids


def _read_lines(stream: IO[bytes], lines: list[str]) -> None:
    for raw in stream:
        lines.append(raw.decode("utf-8", errors="replace"))


def write_config(
    directory: Path, stat_timeout: str = LOOP_STAT_TIMEOUT, interval: float = CADENCE_SEC
) -> Path:
    """DIRECTORY/diskprobe.toml: the loop every `interval` seconds, smart off (its reads have
    their own threads and are not under test here), the helper's fstype not ignored."""
    config = directory / "diskprobe.toml"
    ignore = ", ".join(f'"{fstype}"' for fstype in IGNORE_FS)
    config.write_text(
        f'interval = "{interval:g}s"\nstate_file = "{directory / "state.json"}"\n\n'
        f'[filesystems]\nstat_timeout = "{stat_timeout}"\nignore_fs = [{ignore}]\n\n'
        "[smart]\nenabled = false\n"
    )
    return config


def spawn_diskprobe(config: Path) -> Diskprobe:
    """`diskprobe --config CONFIG` with piped stdio, as Telegraf's execd runs it."""
    token = uuid.uuid4().hex
    process = subprocess.Popen(
        [str(DISKPROBE), "--config", str(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, RUN_TOKEN_ENV: token},
    )
    return Diskprobe(process, token)


@pytest.fixture
def start_diskprobe(hung_mount: HungMount, tmp_path: Path) -> Iterator[Callable[[], Diskprobe]]:
    """Starts `diskprobe` (interval CADENCE_SEC, stat_timeout LOOP_STAT_TIMEOUT); torn down
    before the mount is."""
    started: list[Diskprobe] = []
    config = write_config(tmp_path)

    def start() -> Diskprobe:
        started.append(spawn_diskprobe(config))
        return started[-1]

    yield start
    try:
        for probe in started:
            probe.find_workers()
            if probe.process.poll() is None:
                assert probe.process.stdin is not None
                with contextlib.suppress(OSError):
                    probe.process.stdin.close()
                try:
                    probe.process.wait(EXIT_GRACE_SEC)
                except subprocess.TimeoutExpired:
                    # Held by a thread stuck in the hung statfs (see the module docstring).
                    hung_mount.release()
                    hung_mount.abort()
                    probe.process.kill()
                    probe.process.wait(HANG_GUARD_SEC)
    finally:
        # A worker that diskprobe left behind, stuck in the statfs: the abort frees it.
        hung_mount.release()
        hung_mount.abort()
        workers = {worker for probe in started for worker in probe.find_workers()}
        _wait_until(lambda: all(worker.finished() for worker in workers), HANG_GUARD_SEC)
        for worker in workers:
            worker.reap()
        leftover = {
            worker.pid: _task_states(worker.pid) for worker in workers if not worker.finished()
        }
        leftover.update(
            (pid, _task_states(pid))
            for probe in started
            for pid in _pids_with_env(RUN_TOKEN_ENV, probe.token)
        )
        held_open: list[int] = []
        for probe in started:
            for reader in probe.readers:
                reader.join(HANG_GUARD_SEC)
            if any(reader.is_alive() for reader in probe.readers):
                # Closing a stream would wait for the read blocked on it: leave it be.
                held_open.append(probe.process.pid)
                continue
            for stream in (probe.process.stdin, probe.process.stdout, probe.process.stderr):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
        assert not leftover, f"diskprobe processes left behind: {leftover}"
        assert not held_open, f"stdout/stderr of diskprobe {held_open} still open"


def _wait_first_batch(probe: Diskprobe) -> None:
    probe.wait_for(lambda: len(probe.batches()) >= 1, HANG_GUARD_SEC, "no first batch")


def _close_stdin_and_wait(probe: Diskprobe) -> None:
    """EOF on diskprobe's stdin (Telegraf stops or reloads): it exits 0. The statfs still
    hangs meanwhile, so a diskprobe that waited for it would run into the hang guard."""
    assert probe.process.stdin is not None
    probe.process.stdin.close()
    try:
        code = probe.process.wait(HANG_GUARD_SEC)
    except subprocess.TimeoutExpired:
        pytest.fail(
            f"diskprobe still running {HANG_GUARD_SEC:g}s after EOF on stdin: "
            f"threads {_task_states(probe.process.pid)}, stderr: {''.join(probe.stderr)}"
        )
    assert code == 0, "".join(probe.stderr)


def test_loop_keeps_batching_and_reports_the_hung_mount_in_every_batch(
    hung_mount: HungMount, start_diskprobe: Callable[[], Diskprobe]
) -> None:
    path = hung_mount.path
    probe = start_diskprobe()
    _wait_first_batch(probe)
    worker = probe.worker()
    hung_mount.wait_call_from(worker.pid)
    probe.wait_for(
        lambda: len(probe.batches()) >= BATCHES, HANG_GUARD_SEC, f"fewer than {BATCHES} batches"
    )
    # The batches came while the first batch's request still hangs: none waited for it.
    hung_mount.assert_still_hung(worker.pid)

    batches = probe.batches()
    for number, batch in enumerate(batches):
        hung, root = batch.fs(path), batch.fs("/")
        assert hung is not None and _unresponsive(hung.fields), (number, hung)
        # Seconds since the first point that found it hung, rounded: both are the points' own
        # timestamps, so this holds however late a batch came.
        since = (hung.time_ns - batches[0].fs(path).time_ns) / 1e9  # type: ignore[union-attr]
        unresponsive_sec = hung.fields["unresponsive_sec"]
        assert isinstance(unresponsive_sec, int), (number, hung)
        assert abs(unresponsive_sec - since) <= 1, (number, hung, since)
        assert hung.tags["fstype"] == FSTYPE
        assert root is not None and root.fields["responsive"] is True, (number, root)
        assert all(root.fields[name] for name in SIZE_FIELDS), (number, root)
        assert any(p.measurement == "diskprobe_io" for p in batch.points), number
    # The first batch (no prime for filesystems) gave the mount the whole timeout: a lower
    # bound, which no slow machine can make false. How long the later ones took is the
    # benchmark's (bench_hung_mount.py); that they do not wait for the stuck call again is
    # test_collector_reports_the_hung_mount_and_waits_for_it_only_once's.
    duration = batches[0].agent("filesystems").fields["duration_ms"]
    assert isinstance(duration, float) and duration >= LOOP_TIMEOUT_MS, duration
    stamps = [batch.agent("io").time_ns for batch in batches]
    assert stamps == sorted(set(stamps)), stamps  # one batch after the other, none repeated
    # One call, made by the first batch through the worker: never probed again while it is
    # outstanding, and never by diskprobe itself.
    assert hung_mount.calls_from(worker.pid) == 1
    assert hung_mount.calls_from(probe.process.pid) == 0
    assert probe.find_workers() == {worker}  # still the same worker
    warnings = probe.warnings(path)
    assert len(warnings) == 1 and f"within {LOOP_STAT_TIMEOUT}" in warnings[0], probe.stderr
    assert not [line for line in probe.stderr if line.startswith("E! ")], probe.stderr

    # With the statfs still stuck (no abort first), EOF on stdin ends diskprobe; the worker
    # it leaves behind, still stuck, is freed by the finalizer's abort.
    _close_stdin_and_wait(probe)
    hung_mount.assert_still_hung(worker.pid)


def test_exit_is_not_held_up_by_a_statfs_stuck_in_the_kernel(
    hung_mount: HungMount, start_diskprobe: Callable[[], Diskprobe]
) -> None:
    probe = start_diskprobe()
    _wait_first_batch(probe)
    worker = probe.worker()
    hung_mount.wait_call_from(worker.pid)
    assert hung_mount.calls_from(worker.pid) == 1  # the statfs that is stuck is the worker's
    # The worker cannot hold up Telegraf: its own session (no signal to diskprobe's group
    # reaches it) and none of diskprobe's stdio pipes.
    assert os.getsid(worker.pid) == worker.pid
    stdio = {os.readlink(f"/proc/{probe.process.pid}/fd/{fd}") for fd in (0, 1, 2)}
    assert all(target.startswith("pipe:") for target in stdio), stdio
    assert not stdio & _fd_targets(worker.pid), (stdio, _fd_targets(worker.pid))

    _close_stdin_and_wait(probe)
    # It exited while its worker still waits in the kernel: it did not wait for that.
    hung_mount.assert_still_hung(worker.pid)
    # Nothing else holds diskprobe's stdout and stderr: both reach EOF.
    for reader in probe.readers:
        reader.join(HANG_GUARD_SEC)
    assert not any(reader.is_alive() for reader in probe.readers), "stdout/stderr still open"
