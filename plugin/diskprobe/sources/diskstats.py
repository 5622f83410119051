"""/proc/diskstats: the file's text, and one line already split as `line.split(None, 3)`.

The loop over the lines is IoCollector.collect()'s own (it skips the parse of an excluded
or unchanged line): `read_diskstats_text` then `parse_diskstats_parts` for each line left.

Line formats by kernel (after `major minor name`):
  11 stats, before 4.18:  "   8       0 sda 3462 1109 219406 1550 ..." (14 fields in all)
  15 stats, 4.18+:        + discards, discards merged, sectors discarded, ms discarding (18)
  17 stats, 5.5+:         + flushes, ms flushing (20)
  more in future kernels: extras are ignored.
  4 stats, 2.6 partitions: "   3    1 hda1 35486 38030 38030 38030" (7 fields): skipped.
An incomplete trailing group (sysstat's 17-field sample "sds" has 3+14) counts as absent.
Kernel counters are at most u64 (genhd.c prints %lu / %u): a larger or negative number, or a
name with a NUL (it would reach sysfs paths), makes the line unusable, never the whole file.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from diskprobe.roots import HostRoots
from diskprobe.sources.u64 import U64_LIMIT, parse_u64

# Indexes into DiskStat.counters (the kernel's order, see Documentation/admin-guide/iostats.rst).
READS, READS_MERGED, READ_SECTORS, READ_MS = 0, 1, 2, 3
WRITES, WRITES_MERGED, WRITE_SECTORS, WRITE_MS = 4, 5, 6, 7
IN_FLIGHT, IO_MS, WEIGHTED_MS = 8, 9, 10
DISCARDS, DISCARDS_MERGED, DISCARD_SECTORS, DISCARD_MS = 11, 12, 13, 14
FLUSHES, FLUSH_MS = 15, 16

BASE_STATS = 11
WITH_DISCARDS = 15
WITH_FLUSHES = 17


class DiskStat(NamedTuple):
    """One device's line: its numbers and the cumulative counters (11, 15 or 17 of them)."""

    major: int
    minor: int
    name: str
    counters: tuple[int, ...]


def _stat_count(available: int) -> int:
    """How many leading stats to keep: only whole groups the kernel defines."""
    if available >= WITH_FLUSHES:
        return WITH_FLUSHES
    if available >= WITH_DISCARDS:
        return WITH_DISCARDS
    return BASE_STATS


def parse_counters(numbers: str) -> tuple[int, ...] | None:
    """The counters after `major minor name` ("3462 1109 219406 ..."); None when unusable."""
    tokens = numbers.split()
    available = len(tokens)
    if available != WITH_FLUSHES:  # 5.5+ lines (the common case) are taken whole
        if available < BASE_STATS:
            return None
        tokens = tokens[: _stat_count(available)]
    try:
        counters = tuple(map(int, tokens))
    except ValueError:  # also a number of more than 4300 digits (int's own limit)
        return None
    # One bound check per line: a 400-digit "counter" would overflow the float rates later.
    return counters if min(counters) >= 0 and max(counters) < U64_LIMIT else None


def parse_diskstats_parts(parts: list[str]) -> DiskStat | None:
    """A line already split as `line.split(None, 3)`: major, minor, name, the counters."""
    if len(parts) < 4:
        return None
    major, minor = parse_u64(parts[0]), parse_u64(parts[1])  # ASCII digits only
    if major is None or minor is None:
        return None
    counters = parse_counters(parts[3])
    if counters is None or "\0" in parts[2]:
        return None
    return DiskStat(major, minor, parts[2], counters)


def line_key(line: str) -> str:
    """What a skipped line is remembered by: its device name, so a counter that changes
    every cycle is not a new message every cycle (and the set of keys stays bounded)."""
    parts = line.split(None, 3)
    return parts[2] if len(parts) >= 3 else "(short line)"


def read_diskstats_text(roots: HostRoots) -> str:
    with open(roots.proc_path("diskstats"), encoding="utf-8", errors="surrogateescape") as f:
        return f.read()


def kernel_long_bits() -> int:
    """The running kernel's `unsigned long` width (ios, merges and sectors are that wide).

    From uname, not from this Python: a 32-bit userland (or container) may run on a 64-bit
    kernel. 64-bit machines say so ("x86_64", "aarch64", "ppc64le", "riscv64"), but s390x.
    """
    machine = os.uname().machine
    return 64 if "64" in machine or machine == "s390x" else 32


def read_device_counters(roots: HostRoots, name: str) -> tuple[int, ...] | None:
    """One device's counters from sysfs, without reading every device's line: its `stat`
    file holds the counters of its /proc/diskstats line, in the same order,

      /sys/class/block/sda/stat:  "    3462     1109   219406     1550 ..."

    for a whole disk and a partition alike (/sys/class/block/sda1/stat). sysfs spells a "/"
    in a kernel name as "!" (cciss/c0d0). None: no such device, or an unusable file."""
    if name in ("", ".", "..") or "\0" in name:
        return None
    path = roots.sys_path("class", "block", name.replace("/", "!"), "stat")
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            text = f.read(4096)
    except OSError:
        return None
    return parse_counters(text)


def parse_diskstats(text: str) -> dict[str, DiskStat]:
    """Every usable line of the file, by device name (a whole-file read for one-off tools)."""
    stats = (parse_diskstats_parts(line.split(None, 3)) for line in text.splitlines())
    return {stat.name: stat for stat in stats if stat is not None}
