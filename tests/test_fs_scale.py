"""diskprobe_fs at Kubernetes-node scale (issue #15): batched statfs, the mount table re-read
only when it changed.

* The statfs helper takes many paths per request and answers them in a few lines, each
  answer what os.statvfs gives for that path (or its errno), and a call that hangs in the
  helper does not hold up the calls queued behind it (the watchdog hands them to a fresh
  scanner thread); the hung call is answered when it returns. The real hung-FUSE cases are in
  test_fs_hung_mount.py.
* MountWatch: a regular file (fixtures) is read each time but parsed only when it changed; a
  real mountinfo is polled, so a mount made or removed between two collects is seen at the
  next one (root: run in a private mount and PID namespace via unshare).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

import pytest

from diskprobe.roots import HostRoots
from diskprobe.sources import statfs_worker
from diskprobe.sources.latch import Latch
from diskprobe.sources.mount_watch import MountWatch
from diskprobe.sources.mountinfo import read_mountinfo
from diskprobe.sources.statfs import StatCall, WorkerStatfs, _Helper

from ci import HANG_GUARD_SEC, skip_or_fail
from helpers import FIXTURES

STABLE = ("f_bsize", "f_frsize", "f_blocks", "f_files", "f_namemax")  # no free counts: they move


def _answers(stream: IO[bytes], wanted: int, got: list[list[Any]], lines: list[int]) -> None:
    """Reads answer lines into `got` until `wanted` answers came or the stream ends."""
    while len(got) < wanted:
        line = stream.readline()
        if not line:
            return
        got += json.loads(line)
        lines[0] += 1


def test_worker_answers_many_paths_in_one_request_like_statvfs(tmp_path: Path) -> None:
    dirs = [tmp_path / f"d{index}" for index in range(1500)]
    for directory in dirs:
        directory.mkdir()
    paths = [*map(str, dirs), str(tmp_path / "missing"), "/"]
    worker = subprocess.Popen(
        [sys.executable, "-m", "diskprobe.sources.statfs_worker"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )  # fmt: skip
    assert worker.stdin is not None and worker.stdout is not None
    try:
        assert json.loads(worker.stdout.readline()) == {"ready": True}
        worker.stdin.write(json.dumps({"id": 100, "paths": paths}).encode() + b"\n")
        worker.stdin.flush()
        answers: list[list[Any]] = []
        lines = [0]
        reader = threading.Thread(target=_answers, args=(worker.stdout, len(paths), answers, lines))
        reader.start()
        reader.join(HANG_GUARD_SEC)  # an old helper answers nothing: this fails below, no hang
    finally:
        worker.stdin.close()
    assert worker.wait(HANG_GUARD_SEC) == 0
    reader.join(HANG_GUARD_SEC)
    by_id = {answer[0]: answer for answer in answers}
    assert len(answers) == len(by_id) == len(paths)  # each call answered once
    assert sorted(by_id) == list(range(100, 100 + len(paths)))
    assert lines[0] <= 3  # batched: not a line per path
    for call_id, path in enumerate(paths, 100):
        answer = by_id[call_id]
        if path.endswith("missing"):
            assert answer[1:] == [2, os.strerror(2)]  # [id, errno, strerror]
            continue
        got, expected = os.statvfs_result(answer[1]), os.statvfs(path)
        assert [getattr(got, name) for name in STABLE] == [getattr(expected, n) for n in STABLE]


class _Output:
    """sys.stdout stand-in: the helper writes whole lines to .buffer under its lock."""

    def __init__(self) -> None:
        self.buffer = self
        self.lines: list[list[list[Any]]] = []

    def write(self, line: bytes) -> None:
        self.lines.append(json.loads(line))

    def flush(self) -> None:
        pass

    def answered(self) -> dict[int, list[Any]]:
        return {answer[0]: answer for line in list(self.lines) for answer in line}


def test_a_hung_call_does_not_hold_up_the_calls_behind_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    release = threading.Event()
    entered = threading.Event()
    real = statfs_worker._statvfs

    def statvfs(call_id: int, path: str) -> list[object]:
        if path == "/hung":
            entered.set()
            release.wait()  # like a statfs on a wedged FUSE daemon: until it answers, for ever
        return real(call_id, "/" if path == "/hung" else path)

    output = _Output()
    monkeypatch.setattr(statfs_worker, "_statvfs", statvfs)
    monkeypatch.setattr(sys, "stdout", output)
    helper = statfs_worker.Helper()
    try:
        helper.add([(1, "/"), (2, "/hung"), (3, "/"), (4, "/nonexistent/x"), (5, "/")])
        # The calls queued behind the hung one are answered while it still hangs: the watchdog
        # handed them to a fresh scanner. Were they held up behind it, they would never be
        # answered before the release, and this waits until the hang guard.
        deadline = time.monotonic() + HANG_GUARD_SEC
        while len(output.answered()) < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        answered = output.answered()
        assert entered.is_set() and not release.is_set()
        assert sorted(answered) == [1, 3, 4, 5], answered  # all but the hung one
        assert answered[4][1] == 2  # ENOENT
        helper.add([(6, "/")])  # later requests go to the fresh scanner
        deadline = time.monotonic() + HANG_GUARD_SEC
        while 6 not in output.answered() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert 6 in output.answered()
        assert 2 not in output.answered()  # still hung
    finally:
        release.set()  # the hung call returns: its answer still comes, once
    deadline = time.monotonic() + HANG_GUARD_SEC
    while 2 not in output.answered() and time.monotonic() < deadline:
        time.sleep(0.01)
    late = os.statvfs_result(output.answered()[2][1])
    assert late.f_blocks == os.statvfs("/").f_blocks
    assert sum(answer[0] == 2 for line in output.lines for answer in line) == 1


def test_regular_file_is_parsed_again_only_when_it_changed(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "gentoo_large" / "proc", tmp_path / "proc")
    roots = HostRoots(proc=str(tmp_path / "proc"))
    watch = MountWatch(roots)
    first = watch.changed()
    assert first is not None and first == read_mountinfo(roots)
    assert watch.changed() is None  # same bytes: nothing to parse, the caller keeps its choice
    table = tmp_path / "proc" / "1" / "mountinfo"
    lines = table.read_text().splitlines(keepends=True)
    table.write_text("".join(lines[:-1]))  # the last mount left
    second = watch.changed()
    assert second is not None and second == first[:-1]
    assert watch.changed() is None


CHILD = """
import json, os, subprocess, sys, tempfile, time
from diskprobe.roots import HostRoots
from diskprobe.sources import mount_watch
from diskprobe.sources.latch import Latch
from diskprobe.sources.mount_watch import MountWatch
now = [0.0]
watch = MountWatch(HostRoots(), clock=lambda: now[0])
seen = [watch.changed() is not None, watch.changed() is None]
point = tempfile.mkdtemp()
subprocess.run(["mount", "-t", "tmpfs", "scale-test", point], check=True)
mounts = watch.changed()
seen += [mounts is not None and point in [m.mount_point for m in mounts], watch.changed() is None]
subprocess.run(["umount", point], check=True)
mounts = watch.changed()
seen += [mounts is not None and point not in [m.mount_point for m in mounts]]
now[0] += mount_watch.MAX_AGE_SEC  # the safety net re-reads: same bytes, still None
seen += [watch.changed() is None, watch._fd is not None]
print(json.dumps(seen))
"""


def test_a_real_table_is_polled_and_mounts_are_seen_at_the_next_collect() -> None:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        skip_or_fail("needs root and unshare: mounts a tmpfs in a private namespace")
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "--pid", "--fork", "--mount-proc",
         sys.executable, "-c", CHILD],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [True] * 7


def test_a_malformed_answer_fails_only_its_own_call() -> None:
    # The helper's answer lines carry up to 1,000 answers: one that does not parse must not
    # take the others of its line with it (they would time out as hung mounts).
    good = list(os.statvfs("/"))
    process = subprocess.Popen(["true"])
    process.wait()
    helper = _Helper(process)
    calls = {call_id: StatCall() for call_id in range(5)}
    helper.calls.update(calls)
    lines = [
        json.dumps([[0, good], ["x", good], [1, "bogus"], 7, [2, 13, "Permission denied"]]),
        "not json",
        json.dumps([[3, good[:3]], [4, good]]),
    ]
    stream = io.BytesIO("".join(line + "\n" for line in lines).encode())
    WorkerStatfs()._read(helper, stream)
    assert list(calls[0].result) == good  # type: ignore[arg-type]
    assert list(calls[4].result) == good  # type: ignore[arg-type]
    assert isinstance(calls[2].result, OSError) and calls[2].result.errno == 13
    for bad in (1, 3):
        result = calls[bad].result
        assert isinstance(result, OSError) and "malformed answer" in str(result), result


def test_the_latch_is_an_event_set_once_however_many_set_or_wait() -> None:
    # StatCall.done: set by whichever thread finishes the call (the helper's reader, or the
    # writer failing the request), waited for by probe() with a deadline.
    latch = Latch()
    timed_out: list[bool] = []
    # In a thread: a wait that ignored its timeout would block for ever (nothing sets the
    # latch yet), and the hang guard ends that.
    waiter = threading.Thread(target=lambda: timed_out.append(latch.wait(0.05)), daemon=True)
    started = time.monotonic()
    waiter.start()
    waiter.join(HANG_GUARD_SEC)
    took = time.monotonic() - started
    assert not waiter.is_alive(), "wait(0.05) on an unset latch did not return"
    assert timed_out == [False] and not latch.is_set()
    # It did wait (a lower bound: no slow machine makes it false; 0.04 for the clocks' grain).
    assert took >= 0.04, took
    woken: list[bool] = []
    # No timeout: a waiter that missed its wake-up would never return, and the join fails.
    waiters = [threading.Thread(target=lambda: woken.append(latch.wait()), daemon=True)
               for _ in range(8)]  # fmt: skip
    setters = [threading.Thread(target=latch.set) for _ in range(8)]  # all at once: no raise
    for thread in waiters + setters:
        thread.start()
    deadline = time.monotonic() + HANG_GUARD_SEC  # every waiter wakes, not just the first
    for thread in waiters + setters:
        thread.join(max(0.0, deadline - time.monotonic()))
    assert not any(thread.is_alive() for thread in waiters + setters)
    assert woken == [True] * 8 and latch.is_set() and latch.wait(0) and latch.wait()
    latch.set()  # once more, later: still no error
    assert latch.wait(0)
