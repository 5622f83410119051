"""Block devices as the kernel shows them, for the tests' and benchmarks' fake /proc/diskstats:
the kernel's disk names and numbers, its counters' order, its line format, and how it counts
request time.

One place for what the generators share (tests/test_failslow.py, tests/test_failslow_fast.py,
tests/test_io_failslow.py, tests/bench/bench_failslow_synthetic.py, bench_io.py,
budget_disks.py, soak_node.py; the fleet profiles' disk names): each still decides what its
devices do.
"""

from __future__ import annotations

import random
from typing import Iterable

# Counter indexes, in the kernel's order (Documentation/admin-guide/iostats.rst).
READS, READS_MERGED, READ_SECTORS, READ_MS = 0, 1, 2, 3
WRITES, WRITES_MERGED, WRITE_SECTORS, WRITE_MS = 4, 5, 6, 7
IN_FLIGHT, IO_MS, WEIGHTED_MS = 8, 9, 10
DISCARDS, DISCARDS_MERGED, DISCARD_SECTORS, DISCARD_MS, FLUSHES, FLUSH_MS = range(11, 17)
STATS = 17  # counters per line: the 20-field lines of kernel 5.5+
MS_COUNTERS = (READ_MS, WRITE_MS, IO_MS, WEIGHTED_MS, DISCARD_MS, FLUSH_MS)  # 32-bit in the kernel


def sd_name(index: int) -> str:
    """The kernel's SCSI disk names: sda..sdz, sdaa..sdzz, sdaaa..."""
    letters = ""
    index += 1
    while index:
        index, remainder = divmod(index - 1, 26)
        letters = chr(ord("a") + remainder) + letters
    return "sd" + letters


def sd_devno(index: int) -> tuple[int, int]:
    """The kernel's SCSI disk numbers: major 8 for the first 16 disks, then 65-71 (16 disks
    each); 16 minors a disk (its partitions)."""
    block, slot = divmod(index, 16)
    return (8 if block == 0 else 64 + block), slot * 16


def diskstats_line(major: int, minor: int, name: str, counters: Iterable[object]) -> str:
    """One line as the kernel prints it (`%4d %7d %s` and the counters), no newline."""
    return f"{major:4d} {minor:7d} {name} " + " ".join(map(str, counters))


def reads_line(major: int, minor: int, name: str, reads: int, read_ms: int) -> str:
    """A device that only reads, 4 KiB a request, one at a time (its time busy is its read
    time): the 11 counters of the kernels before 4.18."""
    counters = (reads, 0, reads * 8, read_ms, 0, 0, 0, 0, 0, read_ms, read_ms)
    return diskstats_line(major, minor, name, counters)


class RequestTimes:
    """Request time as blk-mq counts it (Linux 5.0 on): each request's time added in
    nanoseconds, the running total shown truncated to whole milliseconds. A request takes its
    device's service time times a uniform 0.8-1.25 noise, drawn from `seed`."""

    def __init__(self, disks: Iterable[str], seed: int | str) -> None:
        self.total_ns = dict.fromkeys(disks, 0)
        self.rng = random.Random(seed)

    def add(self, disk: str, requests: int, service_ms: float) -> int:
        """`requests` more requests on `disk`; its total as diskstats shows it, in ms."""
        for _ in range(requests):
            self.total_ns[disk] += round(service_ms * self.rng.uniform(0.8, 1.25) * 1e6)
        return self.shown_ms(disk)

    def shown_ms(self, disk: str) -> int:
        return self.total_ns[disk] // 1_000_000
