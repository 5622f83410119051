"""What one task is doing at one sample, from its state letter and its blocked system call.

  R                                  -> running
  S/D in read/write/sync on a file   -> a file wait on the file's place (S counts only on a
                                        remote filesystem: FUSE waits interruptibly)
  D outside any call ("-1 sp pc")    -> a page fault: an mmap'ed file being read
  D in open/stat/getdents            -> a metadata wait (the path is in the task's memory:
                                        placed by the directory fd when there is one)
  ioctl on /dev/nvidia*, /dev/accel* -> the accelerator: compute, not idle
  S in futex                         -> sleeping, on a thread of its own process (a lock, a
                                        condition: the runtime's pool running the step)
  D in anything else                 -> blocked (a kernel lock, memory reclaim...)
  S in anything else                 -> sleeping (poll, pipe, socket: waiting on another task)
Without the right to read /proc/<tid>/syscall, a D task counts as a file wait on an unknown
place (D is I/O most of the time) and an S task as sleeping: `unreadable` counts those.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from diskprobe.compute.syscalls import CallKind, call_kind
from diskprobe.roots import HostRoots
from diskprobe.sources.file_places import FilePlaces, Located, Place, is_accelerator
from diskprobe.sources.task_files import TaskFiles
from diskprobe.sources.tasks import RUNNING, OpenFile, read_open_file

UNKNOWN = Place(None)
FD_LIMIT = 1 << 31  # an argument above it is no fd (AT_FDCWD, -100, reads as 0xffffff9c)


@dataclass(frozen=True)
class Seen:
    kind: str  # running, accelerator, file, fault, blocked, sleeping, thread_wait
    direction: str = "read"
    place: Optional[Place] = None
    path: Optional[str] = None
    located: Optional[Located] = None


RUN, SLEEP, BLOCK, FAULT = Seen("running"), Seen("sleeping"), Seen("blocked"), Seen("fault")
THREAD_WAIT = Seen("thread_wait")  # sleeping in futex: on a thread of its own process
FUTEXES = frozenset({"futex", "futex_waitv"})
DIRECTIONS = {"read": "read", "meta": "read", "async": "read", "write": "write", "sync": "write"}


class Classifier:
    def __init__(self, roots: HostRoots, machine: str, places: FilePlaces,
                 files: TaskFiles | None = None) -> None:  # fmt: skip
        self._roots, self._machine, self.places = roots, machine, places
        self.files = files or TaskFiles(roots)
        self.unreadable = 0  # samples whose blocked call could not be read (permissions)

    def classify(self, pid: int, tid: int, state: str) -> Seen:
        if state == "R":
            return RUN
        if state not in ("S", "D"):  # stopped, traced, zombie, idle
            return SLEEP
        call = self.files.syscall(pid, tid)
        if call is None:
            self.unreadable += 1
            return Seen("file", place=UNKNOWN) if state == "D" else SLEEP
        if call == RUNNING:
            return RUN
        assert not isinstance(call, str)
        if call.number == -1:
            return FAULT if state == "D" else SLEEP
        kind = call_kind(self._machine, call.number)
        fd = call.args[kind.fd_arg] if kind.fd_arg is not None else None
        file = None
        if fd is not None and fd < FD_LIMIT:
            file = read_open_file(self._roots, pid, fd,
                                  lambda mount: self.places.fstype(pid, mount))  # fmt: skip
        return self._by_kind(pid, state, kind, file)

    def _by_kind(self, pid: int, state: str, kind: CallKind, file: OpenFile | None) -> Seen:
        blocked = BLOCK if state == "D" else SLEEP
        if kind.kind == "ioctl":
            return Seen("accelerator") if file and is_accelerator(file) else blocked
        if kind.name in FUTEXES:
            return THREAD_WAIT if state == "S" else blocked
        direction = DIRECTIONS.get(kind.kind)
        if direction is None:
            return blocked
        if file is None:  # a path call, sync(), msync(), io_uring: no fd to place it by
            no_fd = kind.fd_arg is None  # (a call that has one but named no open file: gone)
            return Seen("file", direction, UNKNOWN) if state == "D" and no_fd else blocked
        if not (file.is_regular or file.is_device or kind.kind == "meta"):
            return blocked  # a pipe, a socket, an eventfd: waiting on another task
        located = self.places.locate(pid, file)
        if located is None:  # /proc, tmpfs: no storage behind it
            return blocked
        if state == "D" or located.place.remote:
            return Seen("file", direction, located.place, file.path, located)
        return SLEEP
