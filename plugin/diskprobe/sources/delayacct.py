"""Time blocked on block I/O per process, from the kernel's delay accounting.

Field 42 of stat, delayacct_blkio_ticks, is the time a task waited for block I/O to complete
(and for swap-in), in clock ticks, counted when each wait ends. The kernel counts it only while
delay accounting is on: `kernel.task_delayacct = 1` (a sysctl since 5.14, off by default
there; before 5.14 on unless booted with `nodelayacct`). /proc/<pid>/stat shows the thread
group leader's own value, not its threads' sum (fs/proc/array.c do_task_stat), so a
multi-threaded process is read per thread (task/<tid>/stat): a thread that exited takes its
count with it. Two artefacts of turning the sysctl on while processes run (seen on 6.18): a
process started before never gets a count (its field stays 0), and a wait in progress at that
moment ends with a count of the whole uptime; the collector caps a process's wait at its
number of threads.
"""

from __future__ import annotations

import os

from diskprobe.roots import HostRoots
from diskprobe.sources.tasks import list_threads, read_task_stat

TICKS_PER_SEC = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def delay_accounting(roots: HostRoots) -> bool | None:
    """kernel.task_delayacct as HOST_PROC shows it; None when there is no such sysctl (a kernel
    before 5.14: on unless booted with nodelayacct, or built without it)."""
    try:
        with open(roots.proc_path("sys", "kernel", "task_delayacct"), "rb") as file:
            value = file.read(16).strip()
    except OSError:
        return None
    return value == b"1"


def process_blkio_ticks(roots: HostRoots, pid: int) -> tuple[int, int] | None:
    """(the sum of delayacct_blkio_ticks over the process's threads, how many threads were
    read); None when it is gone or its stat has no field 42."""
    total, threads = 0, 0
    for tid in list_threads(roots, pid) or [pid]:
        stat = read_task_stat(roots, pid, tid)
        if stat is not None and stat.blkio_ticks is not None:
            total, threads = total + stat.blkio_ticks, threads + 1
    return (total, threads) if threads else None
