"""A training job's own counters, for the in-job meter (integrations/input_wait.py): the
storage bytes its processes read and the CPU time its loaders ran, under HOST_PROC.

What each file gives, and why several are needed:
- `/proc/<pid>/io` read_bytes: bytes the process's threads submitted to block devices (the
  kernel counts them at submit_bio, page faults and readahead included). A live child
  process's reads (a PyTorch DataLoader worker) are in the child's own file only; the
  parent's grows by them only once it reaps the child. So the job's reads are its process's
  plus those of its live descendants.
- `/proc/<pid>/stat` utime+stime: every thread of the process, ended ones included; reaped
  children go to cutime/cstime, which are not read. `/proc/<pid>/task/<tid>/stat`: the loop's
  own thread, to tell it from the others (a loader thread, Keras's PyDataset workers).
- descendants: `parent_map` (one stat read per process on the host), which is why the meter
  asks for them only in a window that waited for its input.
Delay accounting (`delayacct_blkio_ticks`) would say how long reads waited, but it is off by
default (kernel.task_delayacct=0); the wait is estimated from the device's counters instead
(compute/job_input.py).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from diskprobe.roots import HostRoots
from diskprobe.sources.procio import read_io_bytes
from diskprobe.sources.tasks import parent_map, parse_task_stat, read_task_stat

ProcessKey = tuple[int, int]  # (pid, start time in clock ticks): a reused PID is another key
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class ProcessCounters:
    read_bytes: int | None  # read_bytes of its io file; None: unreadable (no task accounting)
    cpu_ticks: int  # utime + stime of all its threads, in clock ticks


@dataclass(frozen=True)
class JobLook:
    """One look at the job at a window's close."""

    at_ticks: int  # CLOCK_BOOTTIME in clock ticks: the clock of the start times in stat
    own: ProcessCounters | None  # the job's process (None: its files could not be read)
    loop_tid: int  # the thread running the training loop (the one closing the window)
    loop_cpu_ticks: int | None  # its utime + stime
    family: dict[ProcessKey, ProcessCounters] | None  # live descendants; None: not looked at


def boot_ticks() -> int:
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * CLOCK_TICKS)


def process_counters(roots: HostRoots, pid: int) -> tuple[int, ProcessCounters] | None:
    """(start ticks, counters) of one process; None when it is gone or its stat unreadable."""
    try:
        with open(roots.proc_path(str(pid), "stat"), "rb", buffering=0) as handle:
            stat = parse_task_stat(handle.read(4096))
    except OSError:  # gone (ENOENT, ESRCH) or refused
        return None
    if stat is None:
        return None
    io = read_io_bytes(roots, pid)
    return stat.start_ticks, ProcessCounters(io[0] if io else None, stat.cpu_ticks)


def descendants(parents: dict[int, int], pid: int) -> list[int]:
    """Every process below `pid` (children, their children...), from pid -> ppid."""
    children: dict[int, list[int]] = {}
    for child, parent in parents.items():
        children.setdefault(parent, []).append(child)
    found: dict[int, None] = {}  # in the order met; a set's membership test
    todo = list(children.get(pid, []))
    while todo:
        child = todo.pop()
        if child != pid and child not in found:  # a table with a cycle must not loop
            found[child] = None
            todo.extend(children.get(child, []))
    return list(found)


def look_at_job(roots: HostRoots, pid: int, loop_tid: int, with_family: bool) -> JobLook:
    """The job's process and the loop's thread (three small reads); with `with_family`, its
    live descendants too (a scan of every process's stat, then two reads each)."""
    at = boot_ticks()
    own = process_counters(roots, pid)
    loop = read_task_stat(roots, pid, loop_tid)
    family: dict[ProcessKey, ProcessCounters] | None = None
    if with_family:
        family = {}
        for child in descendants(parent_map(roots), pid):
            found = process_counters(roots, child)
            if found is not None:
                family[(child, found[0])] = found[1]
    return JobLook(at, own[1] if own else None, loop_tid, loop.cpu_ticks if loop else None,
                   family)  # fmt: skip
