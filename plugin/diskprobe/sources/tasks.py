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
from typing import Callable

from diskprobe.roots import HostRoots
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
    arg_start: int | None = None  # field 48: moves at every exec (0 without ptrace rights)


# /proc/<tid>/stat (proc(5)), after "pid (comm) ": the comm may hold spaces and ")", so the
# fields start after the last ")":
#   4242 (python3) D 4200 4242 4200 0 -1 4194304 1090 0 12 0 310 25 ... 0 0 0 18 ...
#   state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
STATE, PPID, MAJFLT, UTIME, STIME, STARTTIME, BLKIO_TICKS, ARG_START = 0, 1, 9, 11, 12, 19, 39, 45


def parse_task_stat(data: bytes) -> TaskStat | None:
    """The one parser of /proc/<pid>/stat and /proc/<pid>/task/<tid>/stat (process_io,
    diagnose, the job watch, the in-job meter). Strict: None for a line too short or with one
    of the fields read that is no counter; its callers leave that process (or thread) out."""
    close = data.rfind(b")")
    fields = data[close + 2 :].split() if close >= 0 else []
    if len(fields) <= STARTTIME:
        return None
    numbers = [parse_u64(fields[index].decode("ascii", "replace"))
               for index in (PPID, MAJFLT, UTIME, STIME, STARTTIME)]  # fmt: skip
    if None in numbers:
        return None
    ppid, majflt, utime, stime, start = (int(number or 0) for number in numbers)
    blkio, arg_start = (parse_u64(fields[index].decode("ascii", "replace"))
                        if len(fields) > index else None for index in (BLKIO_TICKS, ARG_START))
    state = fields[STATE].decode("ascii", "replace")[:1]
    return TaskStat(state, ppid, majflt, utime + stime, start, blkio, arg_start)


def _read(path: str, size: int = 4096) -> bytes | None:
    try:
        with open(path, "rb", buffering=0) as handle:
            return handle.read(size)
    except OSError:  # gone (ENOENT, ESRCH), refused (EACCES, EPERM)
        return None


def read_task_stat(roots: HostRoots, pid: int, tid: int) -> TaskStat | None:
    data = _read(roots.proc_path(str(pid), "task", str(tid), "stat"))
    return parse_task_stat(data) if data else None


def read_comm(roots: HostRoots, pid: int, tid: int | None = None) -> str:
    """The process's (or one thread's) name ("" when gone); bytes that are no UTF-8 kept as
    surrogates."""
    task = ("task", str(tid)) if tid is not None else ()
    data = _read(roots.proc_path(str(pid), *task, "comm"), 64)
    return data.decode("utf-8", "surrogateescape").strip() if data else ""


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
    device: tuple[int, int]  # st_dev: the filesystem's device number ((0, 0): by mount_id)
    inode: int
    is_regular: bool  # a file in a filesystem (not a pipe, a socket, an anonymous inode)
    is_device: bool  # a block or character device node (its own rdev in rdevice)
    rdevice: tuple[int, int] = (0, 0)
    mount_id: int | None = None  # fdinfo's mnt_id: the mount, without touching the file


# /proc/<pid>/fdinfo/<fd> (3.15+; ino since 5.14):
#   pos:	0
#   flags:	0100000
#   mnt_id:	24
#   ino:	3
def parse_fdinfo(text: str) -> tuple[int | None, int]:
    """mnt_id (None when absent) and ino (0 when absent)."""
    values = dict(line.partition(":")[::2] for line in text.splitlines())
    mount_id, inode = parse_u64(values.get("mnt_id", "").strip()), parse_u64(
        values.get("ino", "").strip())  # fmt: skip
    return mount_id, inode or 0


DEVICE_FS = ("devtmpfs", "tmpfs")  # where device nodes live: stat() there cannot hang


def read_open_file(roots: HostRoots, pid: int, fd: int,
                   fstype_of: Callable[[int], str | None]) -> OpenFile | None:  # fmt: skip
    """The fd's path and mount (fdinfo's mnt_id), never a stat() of a file on a data
    filesystem: on a hard NFS mount whose server is gone, that stat would hang the watch
    the way the job hangs. Only a node on devtmpfs/tmpfs (/dev) is stat()ed, for its rdev.
    `fstype_of(mount_id)` is the process's mount table's answer."""
    link = roots.proc_path(str(pid), "fd", str(fd))
    try:
        path = os.readlink(link)
        info_text = _read(roots.proc_path(str(pid), "fdinfo", str(fd)), 1024) or b""
    except (OSError, ValueError):
        return None
    if not path.startswith("/"):  # pipe:[123], socket:[456], anon_inode:[eventfd]
        return OpenFile(path, (0, 0), 0, False, False)
    mount_id, inode = parse_fdinfo(info_text.decode("ascii", "replace"))
    if mount_id is None:  # a kernel before 3.15: stat() is all there is
        return _stat_open_file(link, path)
    if fstype_of(mount_id) in DEVICE_FS:
        found = _stat_open_file(link, path)
        return OpenFile(path, (0, 0), inode, not (found and found.is_device),
                        bool(found and found.is_device), found.rdevice if found else (0, 0),
                        mount_id)  # fmt: skip
    return OpenFile(path, (0, 0), inode, True, False, (0, 0), mount_id)


def _stat_open_file(link: str, path: str) -> OpenFile | None:
    try:
        info = os.stat(link)
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
