"""Per-process storage I/O counters (read_bytes/write_bytes of HOST_PROC/<pid>/io).

The scan over every process reads HOST_PROC/<pid>/io directly (one open+read per process):
psutil.process_iter() + io_counters() costs about three times as much CPU on a host with
thousands of processes (see tests/bench/bench_process_io.py). Everything else (start time to
tell a reused PID, name, user, command line) goes through psutil, for the few winners only.
psutil reads under its own module-global PROCFS_PATH, which `use_roots` points at
HOST_PROC: that is process-wide, for every psutil user in this process.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass

import psutil

from diskprobe.roots import HostRoots
from diskprobe.sources.cgroup_limits import parse_proc_cgroup
from diskprobe.sources.tasks import parse_task_stat
from diskprobe.sources.u64 import parse_u64

CMDLINE_MAX = 256


def use_roots(roots: HostRoots) -> None:
    psutil.PROCFS_PATH = roots.proc


@dataclass
class Scan:
    # The pid as HOST_PROC lists it ("4242") -> the text of its io file, parsed only when it
    # changed. Keys stay strings: int() of every name costs ~0.6 ms a scan at 5,000 processes,
    # and only the few changed ones need their number.
    raw: dict[str, bytes]
    denied: int = 0  # EACCES/EPERM: not ours to read without root or CAP_SYS_PTRACE


# Bytes asked of each io file. The longest possible is 223 (the seven "name: " labels, 76 bytes,
# and seven 20-digit u64 values with their newlines); under 480 a bytes object of this size
# comes from Python's small-object allocator instead of malloc: os.read(fd, 1024) cost ~2 ms
# more a scan at 5,000 processes (CPU of both loops, measured in turn in one process).
IO_READ_SIZE = 400


# /proc/<pid>/io, always in this order (fs/proc/base.c do_io_accounting):
#   rchar: 1948  wchar: 0  syscr: 7  syscw: 0  read_bytes: 4096  write_bytes: 0
#   cancelled_write_bytes: 0            (one "name: value" per line)
# None: no read_bytes in it (a kernel without task I/O accounting); MalformedIo: a value that is
# no u64 counter ("read_bytes: x", 1e400, 400 digits): that process is left out, not the scan.


class MalformedIo(ValueError):
    """/proc/<pid>/io has read_bytes/write_bytes, but not as counters."""


def parse_proc_io(data: bytes) -> tuple[int, int] | None:
    words = data.split()
    if len(words) >= 12 and words[8] == b"read_bytes:" and words[10] == b"write_bytes:":
        read, write = words[9], words[11]
    else:
        values = dict(zip(words[::2], words[1::2]))
        if b"read_bytes:" not in values or b"write_bytes:" not in values:
            return None
        read, write = values[b"read_bytes:"], values[b"write_bytes:"]
    # Digits only: int() would also take "+5", "1_0" and " 5 "; the kernel prints %llu.
    read_bytes, write_bytes = parse_u64(read), parse_u64(write)
    if read_bytes is None or write_bytes is None:
        raise MalformedIo(f"read_bytes {read[:40]!r}, write_bytes {write[:40]!r}")
    return read_bytes, write_bytes


def parse_rchar(data: bytes) -> int | None:
    """rchar, the first line of the same file (per thread under task/<tid>/io): bytes read
    through read(2), pread(2), readv(2), sendfile(2)..., from files and pipes alike, whether
    or not storage was touched. None when absent or no u64 counter."""
    words = data.split(None, 2)
    return parse_u64(words[1]) if len(words) >= 2 and words[0] == b"rchar:" else None


def scan_io(roots: HostRoots) -> Scan:
    """Every process's io file; processes that exit meanwhile (ENOENT, ESRCH) are left out."""
    raw: dict[str, bytes] = {}
    denied = 0
    proc_fd = os.open(roots.proc, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in os.listdir(proc_fd):
            if not name.isdigit():
                continue
            try:  # inline, no helper call: this loop runs once per process on the host
                fd = os.open(name + "/io", os.O_RDONLY, dir_fd=proc_fd)
                try:
                    raw[name] = os.read(fd, IO_READ_SIZE)
                finally:
                    os.close(fd)
            except OSError as error:
                denied += error.errno in (errno.EACCES, errno.EPERM)
    finally:
        os.close(proc_fd)
    return Scan(raw, denied)


def start_ticks(roots: HostRoots, pid: int) -> int | None:
    """Field 22 of HOST_PROC/<pid>/stat (clock ticks after boot), None when the PID is gone or
    its stat is garbled (tasks.parse_task_stat: the one parser of that file).

    With the PID it names one process for the host's lifetime; psutil's create_time() adds
    a boot time rounded to the second, so the raw ticks are compared instead.
    """
    try:
        with open(roots.proc_path(str(pid), "stat"), "rb") as file:
            data = file.read(4096)
    except OSError:
        return None
    stat = parse_task_stat(data)
    return stat.start_ticks if stat is not None else None


def read_io_bytes(roots: HostRoots, pid: int) -> tuple[int, int] | None:
    """read_bytes, write_bytes of /proc/<pid>/io (storage I/O), None when unreadable."""
    try:
        with open(roots.proc_path(str(pid), "io"), "rb", buffering=0) as file:
            data = file.read(IO_READ_SIZE)
        return parse_proc_io(data) if data else None
    except (OSError, MalformedIo):
        return None


@dataclass
class Details:
    name: str
    user: str
    cmdline: str | None
    cgroup: str | None


def process_details(roots: HostRoots, pid: int, started: int, with_cmdline: bool) -> Details | None:
    """Name, user, command line and cgroup; None when the PID is gone or now another process."""
    try:
        process = psutil.Process(pid)
        with process.oneshot():
            name = process.name()
            user = _user(process)
            cmdline = _cmdline(process) if with_cmdline else None
    except psutil.Error:  # gone (NoSuchProcess, ZombieProcess) or AccessDenied
        return None
    except (LookupError, ValueError, OSError):
        # psutil's own parsing of a malformed file (a /proc/<pid>/stat of 22 fields: its
        # IndexError ended the whole collection every batch): only this process is left out
        return None
    if start_ticks(roots, pid) != started:
        return None  # the PID now belongs to another process
    return Details(name, user, cmdline, read_cgroup(roots, pid))


def _user(process: psutil.Process) -> str:
    try:
        return process.username()  # psutil falls back to the uid when it has no name
    except (KeyError, psutil.AccessDenied):
        return str(process.uids().real)


def _cmdline(process: psutil.Process) -> str | None:
    try:
        text = " ".join(process.cmdline())
    except psutil.AccessDenied:
        return None
    # `python -c "...multi-line..."`: control characters become spaces, so every metric
    # stays one line of line protocol for line-based readers.
    return " ".join(text.split())[:CMDLINE_MAX] or None


def read_cgroup(roots: HostRoots, pid: int) -> str | None:
    try:
        path = roots.proc_path(str(pid), "cgroup")
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            return parse_proc_cgroup(f.read()).path
    except OSError:
        return None
