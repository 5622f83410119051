"""statvfs that cannot hang the loop, nor keep diskprobe from exiting.

A statfs on a dead NFS server or a wedged FUSE daemon blocks in the kernel and cannot be
cancelled. Worse, a process with a thread blocked in FUSE cannot finish exiting: the
exiting thread waits, unkillable, for the FUSE answer, so Telegraf's stop or reload would
hang on diskprobe. So the calls run in a helper process (statfs_worker); diskprobe waits at
most `timeout` for each answer and can always exit, leaving a stuck helper behind that holds
none of Telegraf's pipes. A collect sends all its paths in one request and gets the answers
back a few lines at a time (at 10,000 mounts one round trip per path cost more than the
statfs calls); the helper keeps a hung mount from delaying the others (statfs_worker).

A mount whose call timed out is "stuck": it keeps its one outstanding call and is not
probed again until that call returns.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import select
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Protocol, Sequence, Union

from diskprobe.sources.latch import Latch

StatResult = Union[os.statvfs_result, OSError]
WORKER_START_TIMEOUT = 10.0


@dataclass
class StatCall:
    done: Latch = field(default_factory=Latch)
    result: StatResult | None = None

    def finish(self, result: StatResult) -> None:
        self.result = result
        self.done.set()


class StatfsBackend(Protocol):
    def start(self, path: str) -> StatCall: ...

    def start_many(self, paths: Sequence[str]) -> list[StatCall]: ...

    def close(self) -> None: ...


class ThreadStatfs:
    """Calls in threads of this process: for tests that inject the OS call."""

    def __init__(self, statvfs: Callable[[str], os.statvfs_result] = os.statvfs) -> None:
        self._statvfs = statvfs

    def start(self, path: str) -> StatCall:
        call = StatCall()

        def _run() -> None:
            try:
                call.finish(self._statvfs(path))
            except OSError as error:
                call.finish(error)

        threading.Thread(target=_run, name=f"statfs {path}", daemon=True).start()
        return call

    def start_many(self, paths: Sequence[str]) -> list[StatCall]:
        return [self.start(path) for path in paths]

    def close(self) -> None:
        pass


@dataclass
class _Helper:
    """One helper process and the calls sent to it: a helper that dies fails only its own."""

    process: subprocess.Popen[bytes]
    calls: dict[int, StatCall] = field(default_factory=dict)


class WorkerStatfs:
    """Calls in a helper process: a JSON line {"id", "paths"} out per collect, lines of
    [id, stat] and [id, errno, strerror] answers back (statfs_worker)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next_id = 0
        self._helper: _Helper | None = None

    @property
    def helper_process(self) -> subprocess.Popen[bytes] | None:
        """The current helper (for diagnostics and tests)."""
        return self._helper.process if self._helper is not None else None

    def _spawn(self) -> _Helper:
        process = subprocess.Popen(
            [sys.executable, "-m", "diskprobe.sources.statfs_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            close_fds=True,
            start_new_session=True,  # keeps Telegraf's signals to our group away from it
        )
        assert process.stdout is not None
        # Wait (bounded) for the helper to be up, so its start-up never eats into the first
        # probe's timeout and marks healthy mounts unresponsive.
        if select.select([process.stdout], [], [], WORKER_START_TIMEOUT)[0]:
            process.stdout.readline()
        helper = _Helper(process)
        reader = threading.Thread(
            target=self._read,
            args=(helper, process.stdout),
            name="statfs-worker-reader",
            daemon=True,
        )
        reader.start()
        return helper

    def _read(self, helper: _Helper, stream: IO[bytes]) -> None:
        for line in stream:
            try:
                # [[7, [f_bsize, ...]], [8, 13, "Permission denied"]]: see statfs_worker.
                answers = json.loads(line)
            except ValueError:
                continue
            if not isinstance(answers, list):
                continue
            with self._lock:  # one bad answer costs its own call, not the line's others
                calls = [helper.calls.pop(_answer_id(answer), None) for answer in answers]
            for call, answer in zip(calls, answers):
                if call is not None:
                    call.finish(_result(answer))
        # This helper is gone: its unanswered calls will never be answered. Calls already
        # sent to a replacement helper are not its to fail.
        with self._lock:
            lost, helper.calls = helper.calls, {}
        for call in lost.values():
            call.finish(OSError(errno.EIO, "statfs helper process exited"))

    def start(self, path: str) -> StatCall:
        return self.start_many([path])[0]

    def start_many(self, paths: Sequence[str]) -> list[StatCall]:
        """One request line for all of `paths` (ids first, first + 1, ...), each call
        answered on its own."""
        calls = [StatCall() for _ in paths]
        if not calls:
            return calls
        with self._lock:
            if self._helper is None or self._helper.process.poll() is not None:
                self._helper = self._spawn()
            helper = self._helper
            first = self._next_id
            self._next_id += len(calls)
            helper.calls.update(zip(range(first, self._next_id), calls))
        stdin = helper.process.stdin
        assert stdin is not None
        try:
            stdin.write(json.dumps({"id": first, "paths": list(paths)}).encode() + b"\n")
            stdin.flush()
        except OSError as error:
            with self._lock:
                for call_id in range(first, first + len(calls)):
                    helper.calls.pop(call_id, None)
            for call in calls:
                call.finish(error)
        return calls

    def close(self) -> None:
        """End of input tells the helper to exit; it is not waited for (it may be stuck)."""
        with self._lock:
            helper, self._helper = self._helper, None
        if helper is not None and helper.process.stdin is not None:
            with contextlib.suppress(OSError):
                helper.process.stdin.close()


def _answer_id(answer: Any) -> int:
    """The call id an answer is for; -1 (no call) when it has none."""
    if isinstance(answer, list) and answer and type(answer[0]) is int:
        return answer[0]
    return -1


def _result(answer: list[Any]) -> StatResult:
    """[id, stat] or [id, errno, strerror] (statfs_worker) as statvfs would give it; an
    answer of another shape fails its call (EIO) rather than the reader thread."""
    try:
        if len(answer) == 2:
            return os.statvfs_result(tuple(answer[1]))
        return OSError(int(answer[1]), str(answer[2]))
    except (ValueError, TypeError, IndexError):
        return OSError(errno.EIO, f"statfs helper: malformed answer {str(answer)[:80]}")


class StatfsProber:
    """Owns the outstanding calls; probe() returns results for mounts that answered in time."""

    def __init__(self, timeout: float, backend: StatfsBackend | None = None) -> None:
        self.timeout = timeout
        self._backend: StatfsBackend = backend if backend is not None else WorkerStatfs()
        self._pending: dict[str, StatCall] = {}

    def probe(self, paths: Sequence[str]) -> dict[str, StatResult | None]:
        """path -> statvfs result, the OSError it raised, or None when it did not answer."""
        results: dict[str, StatResult | None] = {}
        fresh: list[str] = []
        for path in paths:
            pending = self._pending.get(path)
            if pending is not None and not pending.done.is_set():
                results[path] = None  # still stuck: no second call, and no waiting for it
            else:
                # New, or a stuck mount whose old call has returned: probe it afresh.
                self._pending.pop(path, None)
                fresh.append(path)
        calls = dict(zip(fresh, self._backend.start_many(fresh)))  # one round trip for all
        if len(self._pending) > len(paths):  # answered calls of mounts that left the table
            wanted = set(paths)
            self._pending = {p: c for p, c in self._pending.items()
                             if p in wanted or not c.done.is_set()}  # fmt: skip
        deadline = time.monotonic() + self.timeout
        for path, call in calls.items():
            if call.done.wait(max(0.0, deadline - time.monotonic())):
                results[path] = call.result
            else:
                self._pending[path] = call
                results[path] = None
        return results

    def stuck(self) -> list[str]:
        return [path for path, call in self._pending.items() if not call.done.is_set()]

    def close(self) -> None:
        self._backend.close()
