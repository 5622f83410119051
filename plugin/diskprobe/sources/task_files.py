"""The per-thread files a job's sampler reads every tick, kept open and re-read with pread.

`/proc/<pid>/task/<tid>/stat` and `.../syscall` are seq_files: a pread at offset 0 makes the
kernel print them again, so an open descriptor serves every later sample. Opening each time
costs a path walk through /proc and two more system calls: for a 64-thread process (stat and
syscall of each thread), 1.6 ms of CPU a sample against 0.44 ms with kept descriptors
(measured here; tests/bench/bench_jobs.py). A descriptor names its task, not its number: once
the thread exits, pread fails with ESRCH even if the tid is reused, and the entry is dropped.

At most `max_open` descriptors are kept (the agent raises its soft RLIMIT_NOFILE towards the
hard limit at start, lifecycle.py); past that, files are opened, read and closed each time.
"""

from __future__ import annotations

import os

from diskprobe.roots import HostRoots
from diskprobe.sources.procio import IO_READ_SIZE, parse_rchar
from diskprobe.sources.tasks import Syscall, TaskStat, parse_syscall, parse_task_stat
from diskprobe.sources.u64 import parse_u64

DEFAULT_MAX_OPEN = 2048
SIZES = {"stat": 4096, "syscall": 512, "io": IO_READ_SIZE, "schedstat": 128}
Key = tuple[int, int, str]  # (pid, tid, file name)


class TaskFiles:
    def __init__(self, roots: HostRoots, max_open: int = DEFAULT_MAX_OPEN) -> None:
        self._roots, self.max_open = roots, max_open
        self._open: dict[Key, int] = {}

    def read(self, pid: int, tid: int, name: str) -> bytes | None:
        """The file's text now; None when the thread is gone or the file is refused."""
        key = (pid, tid, name)
        fd = self._open.get(key)
        if fd is None:
            fd = self._open_file(key)
            if fd is None:
                return None
        try:
            data = os.pread(fd, SIZES[name], 0)
        except OSError:  # ESRCH: the thread ended; EACCES: no more right to read it
            data = b""
        if key not in self._open:
            os.close(fd)
        elif not data:
            self._close(key)
        return data or None

    def _open_file(self, key: Key) -> int | None:
        pid, tid, name = key
        path = self._roots.proc_path(str(pid), "task", str(tid), name)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        if len(self._open) < self.max_open:
            self._open[key] = fd
        return fd

    def stat(self, pid: int, tid: int) -> TaskStat | None:
        data = self.read(pid, tid, "stat")
        return parse_task_stat(data) if data else None

    def syscall(self, pid: int, tid: int) -> Syscall | str | None:
        data = self.read(pid, tid, "syscall")
        return parse_syscall(data.decode("ascii", "replace")) if data else None

    def runs(self, pid: int, tid: int) -> int | None:
        """How many times the thread was put on a CPU (schedstat's third number); None when
        unknown (gone, or the kernel keeps no schedstats: "0 0 0")."""
        data = self.read(pid, tid, "schedstat")
        words = data.split() if data else []
        return parse_u64(words[2]) or None if len(words) == 3 else None

    def rchar(self, pid: int, tid: int) -> int | None:
        """Bytes the thread read through read(2) and friends (files, pipes), None if unknown."""
        data = self.read(pid, tid, "io")
        return parse_rchar(data) if data else None

    def forget(self, pid: int, tid: int | None = None) -> None:
        """Close what is kept for one thread, or for every thread of a process."""
        for key in [key for key in self._open if key[0] == pid and tid in (None, key[1])]:
            self._close(key)

    def _close(self, key: Key) -> None:
        fd = self._open.pop(key, None)
        if fd is not None:
            os.close(fd)

    def close(self) -> None:
        for key in list(self._open):
            self._close(key)

    @property
    def kept(self) -> int:
        return len(self._open)
