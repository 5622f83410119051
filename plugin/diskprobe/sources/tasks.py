"""Tasks (threads) of watched processes, for `diskprobe diagnose`: their state, CPU time and
the system call each one is blocked in, under HOST_PROC.

`read_x(roots, ...)` is `parse_x(text)` on a file under the injected root; every reader
returns None when the task is gone (it can end between two reads) or the file is refused.

Permissions (fs/proc/base.c): `stat` and `task/` are readable by anyone; `syscall` and the
`fd/` links need PTRACE_MODE_ATTACH (the same user and ptrace_scope 0, or root, or
CAP_SYS_PTRACE): without them the state is known but not what a task waits on.
"""

from __future__ import annotations

import os
import stat as modes
from dataclasses import dataclass

from diskprobe.roots import HostRoots
from diskprobe.sources.procio import IO_READ_SIZE, MalformedIo, parse_proc_io
from diskprobe.sources.u64 import parse_u64

RUNNING = "running"  # /proc/<tid>/syscall of a task on a CPU: no syscall to report


@dataclass(frozen=True)
class TaskStat:
    """One line of /proc/<pid>/task/<tid>/stat, the fields diagnose uses."""

    state: str  # R running, S sleeping, D uncompleted I/O or other uninterruptible wait, ...
    ppid: int
    major_faults: int
    cpu_ticks: int  # utime + stime, in clock ticks
    start_ticks: int  # with the pid, names one process for the host's lifetime
    blkio_ticks: int | None  # delayacct_blkio_ticks (field 42): None on old kernels


# /proc/<tid>/stat (proc(5)), after "pid (comm) ": the comm may hold spaces and ")", so the
# fields start after the last ")":
#   4242 (python3) D 4200 4242 4200 0 -1 4194304 1090 0 12 0 310 25 ... 0 0 0 18 ...
#   state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
STATE, PPID, MAJFLT, UTIME, STIME, STARTTIME, BLKIO_TICKS = 0, 1, 9, 11, 12, 19, 39


def parse_task_stat(data: bytes) -> TaskStat | None:
    """None for a line too short or with a field that is no counter (a malformed file)."""
    close = data.rfind(b")")
    fields = data[close + 2 :].split() if close >= 0 else []
    if len(fields) <= STARTTIME:
        return None
    numbers = [parse_u64(fields[index].decode("ascii", "replace"))
               for index in (PPID, MAJFLT, UTIME, STIME, STARTTIME)]  # fmt: skip
    if None in numbers:
        return None
    ppid, majflt, utime, stime, start = (int(number or 0) for number in numbers)
    blkio = parse_u64(fields[BLKIO_TICKS].decode("ascii", "replace")) \
        if len(fields) > BLKIO_TICKS else None  # fmt: skip
    state = fields[STATE].decode("ascii", "replace")[:1]
    return TaskStat(state, ppid, majflt, utime + stime, start, blkio)


def _read(path: str, size: int = 4096) -> bytes | None:
    try:
        with open(path, "rb", buffering=0) as handle:
            return handle.read(size)
    except OSError:  # gone (ENOENT, ESRCH), refused (EACCES, EPERM)
        return None


def read_task_stat(roots: HostRoots, pid: int, tid: int) -> TaskStat | None:
    data = _read(roots.proc_path(str(pid), "task", str(tid), "stat"))
    return parse_task_stat(data) if data else None


def read_comm(roots: HostRoots, pid: int) -> str:
    """The process's name ("" when gone); bytes that are no UTF-8 kept as surrogates."""
    data = _read(roots.proc_path(str(pid), "comm"), 64)
    return data.decode("utf-8", "surrogateescape").strip() if data else ""


def read_io_bytes(roots: HostRoots, pid: int) -> tuple[int, int] | None:
    """read_bytes, write_bytes of /proc/<pid>/io (storage I/O), None when unreadable."""
    data = _read(roots.proc_path(str(pid), "io"), IO_READ_SIZE)
    try:
        return parse_proc_io(data) if data else None
    except MalformedIo:
        return None


def list_threads(roots: HostRoots, pid: int) -> list[int]:
    """The thread ids of one process ([] when it is gone)."""
    try:
        names = os.listdir(roots.proc_path(str(pid), "task"))
    except OSError:
        return []
    return [int(name) for name in names if name.isdigit() and name.isascii()]


def parent_map(roots: HostRoots) -> dict[int, int]:
    """pid -> ppid of every process: one stat read each. Used to follow children when the
    kernel has no /proc/<pid>/task/<tid>/children (CONFIG_PROC_CHILDREN is often off)."""
    parents: dict[int, int] = {}
    try:
        names = os.listdir(roots.proc)
    except OSError:
        return parents
    for name in names:
        if name.isdigit() and name.isascii():
            stat = read_task_stat(roots, int(name), int(name))
            if stat is not None:
                parents[int(name)] = stat.ppid
    return parents


# /proc/<tid>/syscall: the number and six arguments (hex), then sp and pc, of the call the
# task is blocked in; "-1 sp pc" when blocked outside any call (a page fault); "running".
#   0 0x3 0x7f495c067000 0x20000 0x7f495c0fab60 0xffffffff 0x0 0x7fff77e8f5c8 0x7f495c1e32ad
@dataclass(frozen=True)
class Syscall:
    number: int  # -1: not in a system call (blocked in a page fault or the scheduler)
    args: tuple[int, ...]


def parse_syscall(text: str) -> Syscall | str | None:
    """Syscall, RUNNING, or None when the text is none of the kernel's forms."""
    words = text.split()
    if words == [RUNNING]:
        return RUNNING
    if not words:
        return None
    try:
        number = int(words[0], 10)
        args = tuple(int(word, 16) for word in words[1:7])
    except ValueError:
        return None
    if number < -1 or (number >= 0 and len(args) < 6):
        return None
    return Syscall(number, args if number >= 0 else ())


def read_syscall(roots: HostRoots, pid: int, tid: int) -> Syscall | str | None:
    data = _read(roots.proc_path(str(pid), "task", str(tid), "syscall"), 512)
    return parse_syscall(data.decode("ascii", "replace")) if data else None


@dataclass(frozen=True)
class OpenFile:
    """What one file descriptor of a process refers to."""

    path: str  # the link's text: "/mnt/data/x.bin", "pipe:[123]", "/dev/nvidia0"
    device: tuple[int, int]  # st_dev: the filesystem's device number
    inode: int
    is_regular: bool
    is_device: bool  # a block or character device node (its own rdev in rdevice)
    rdevice: tuple[int, int] = (0, 0)


def read_open_file(roots: HostRoots, pid: int, fd: int) -> OpenFile | None:
    """stat() through /proc/<pid>/fd/<fd> (the file itself, not the link) and its path."""
    link = roots.proc_path(str(pid), "fd", str(fd))
    try:
        info = os.stat(link)
        path = os.readlink(link)
    except (OSError, ValueError):
        return None
    is_device = modes.S_ISBLK(info.st_mode) or modes.S_ISCHR(info.st_mode)
    return OpenFile(
        path, (os.major(info.st_dev), os.minor(info.st_dev)), info.st_ino,
        modes.S_ISREG(info.st_mode), is_device,
        (os.major(info.st_rdev), os.minor(info.st_rdev)) if is_device else (0, 0),
    )  # fmt: skip


# /proc/<pid>/maps: "7f2a1c000000-7f2a3c000000 r--s 00000000 07:00 12 /mnt/data/train.arrow"
def parse_mapped_files(text: str) -> dict[str, tuple[tuple[int, int], int]]:
    """Mapped files that are not executable code: path -> (st_dev, bytes mapped)."""
    found: dict[str, tuple[tuple[int, int], int]] = {}
    for line in text.splitlines():
        parts = line.split(None, 5)
        if len(parts) < 6 or "x" in parts[1] or not parts[5].startswith("/"):
            continue
        start, _, end = parts[0].partition("-")
        major, _, minor = parts[3].partition(":")
        try:
            size = int(end, 16) - int(start, 16)
            device = (int(major, 16), int(minor, 16))
        except ValueError:
            continue
        previous = found.get(parts[5], (device, 0))[1]
        found[parts[5]] = (device, previous + size)
    return found


def read_mapped_files(roots: HostRoots, pid: int) -> dict[str, tuple[tuple[int, int], int]]:
    data = _read(roots.proc_path(str(pid), "maps"), 4 << 20)
    return parse_mapped_files(data.decode("utf-8", "surrogateescape")) if data else {}


def read_cgroup_procs(directory: str) -> list[int]:
    """The processes of a cgroup directory and of every cgroup below it (v1 or v2)."""
    found: list[int] = []
    for path, _dirs, files in os.walk(directory):
        if "cgroup.procs" in files:
            data = _read(os.path.join(path, "cgroup.procs"), 1 << 20) or b""
            found.extend(int(word) for word in data.split() if word.isdigit())
    return found
