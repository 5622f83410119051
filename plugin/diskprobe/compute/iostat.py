"""iostat -x from two /proc/diskstats samples, with sysstat's formulas.

Mirrors sysstat rd_stats.c compute_ext_disk_stats() and iostat.c write_ext_stat():
  r/s = d(reads) / itv                 r_await = d(read_ms) / d(reads), 0.0 without reads
  rkB/s = d(read_sectors) * 512 / itv  rareq-sz = d(read_sectors) * 512 / d(reads)
  aqu-sz = d(weighted_ms) / itv / 1000 %util = d(io_ms) / itv / 10 (itv in seconds here)
  await = (d(read_ms) + d(write_ms) + d(discard_ms)) / (d(reads) + d(writes) + d(discards))
Flushes are kept out of `await`, as iostat does. Fields the kernel lacks are omitted.
"""

from __future__ import annotations

from operator import sub
from typing import Sequence

from diskprobe.compute.counters import counter_deltas
from diskprobe.metric import FieldValue
from diskprobe.sources.diskstats import (
    DISCARD_MS,
    DISCARD_SECTORS,
    DISCARDS,
    DISCARDS_MERGED,
    FLUSH_MS,
    FLUSHES,
    IN_FLIGHT,
    IO_MS,
    READ_MS,
    READ_SECTORS,
    READS,
    READS_MERGED,
    WEIGHTED_MS,
    WITH_DISCARDS,
    WITH_FLUSHES,
    WRITE_MS,
    WRITE_SECTORS,
    WRITES,
    WRITES_MERGED,
)

SECTOR_BYTES = 512  # /proc/diskstats counts 512-byte sectors whatever the device's block size

# Which counters the kernel keeps in 32 bits. genhd.c diskstats_show() (5.5+, sample):
#   "%lu %lu %lu %u " "%lu %lu %lu %u " "%u %u %u " "%lu %lu %lu %u " "%lu %u"
#   ios, merges, sectors: unsigned long (64-bit on 64-bit kernels, 32-bit on 32-bit ones);
#   read/write/discard/flush ms, io_ticks (jiffies_to_msecs), time_in_queue: unsigned int.
MS_COUNTERS = frozenset({READ_MS, WRITE_MS, IO_MS, WEIGHTED_MS, DISCARD_MS, FLUSH_MS})
GAUGES = frozenset({IN_FLIGHT})
# io_ms (io_ticks) is wall time with I/O in flight: it cannot grow faster than the clock.
# The slack covers jiffy steps (10 ms at HZ=100) and the time between the kernel's snapshot
# and ours; older kernels also book a long I/O's whole time at its completion, which then
# reads as a jump: skipped once rather than reported as util 500 %.
IO_MS_TOLERANCE = 1.25
IO_MS_SLACK_MS = 10.0
# The other ms counters add up time per request: at most elapsed x requests in flight.
MAX_QUEUE_DEPTH = 65536


def disk_deltas(
    previous: Sequence[int], current: Sequence[int], elapsed_sec: float, long_bits: int = 64
) -> list[int] | None:
    """Counter deltas of one device over `elapsed_sec` (> 0), or None when they are no
    interval's activity: a reset (driver reload, another device under the name) or a jump
    no disk can make. A decrease is unwrapped only where the kernel keeps 32 bits."""
    deltas = list(map(sub, current, previous))
    if min(deltas) < 0:  # inline above: the common case (all grew) costs no second call
        unwrapped = counter_deltas(
            previous, current, GAUGES, MS_COUNTERS if long_bits > 32 else None
        )
        if unwrapped is None:
            return None
        deltas = unwrapped
    elapsed_ms = elapsed_sec * 1000.0
    if deltas[IO_MS] > elapsed_ms * IO_MS_TOLERANCE + IO_MS_SLACK_MS:
        return None
    busy_ms = elapsed_ms * MAX_QUEUE_DEPTH
    if deltas[READ_MS] > busy_ms or deltas[WRITE_MS] > busy_ms or deltas[WEIGHTED_MS] > busy_ms:
        return None
    if len(deltas) > DISCARD_MS and deltas[DISCARD_MS] > busy_ms:
        return None
    if len(deltas) > FLUSH_MS and deltas[FLUSH_MS] > busy_ms:
        return None
    return deltas


def iostat_fields(
    deltas: Sequence[int], current: Sequence[int], elapsed_sec: float
) -> dict[str, FieldValue]:
    """The diskprobe_io rate fields for one device; `elapsed_sec` must be > 0.

    Runs for every busy device every interval (thousands on a Kubernetes node), so the
    ratios are inline: `x / n if n else 0.0` is iostat's "0.0 without I/O".
    """
    per_sec = 1.0 / elapsed_sec
    reads, writes = deltas[READS], deltas[WRITES]
    read_ms, write_ms = deltas[READ_MS], deltas[WRITE_MS]
    read_bytes = deltas[READ_SECTORS] * SECTOR_BYTES
    write_bytes = deltas[WRITE_SECTORS] * SECTOR_BYTES
    fields: dict[str, FieldValue] = {
        "reads_per_sec": reads * per_sec,
        "writes_per_sec": writes * per_sec,
        "read_merged_per_sec": deltas[READS_MERGED] * per_sec,
        "write_merged_per_sec": deltas[WRITES_MERGED] * per_sec,
        "read_bytes_per_sec": read_bytes * per_sec,
        "write_bytes_per_sec": write_bytes * per_sec,
        "read_await_ms": read_ms / reads if reads else 0.0,
        "write_await_ms": write_ms / writes if writes else 0.0,
        "read_request_bytes": read_bytes / reads if reads else 0.0,
        "write_request_bytes": write_bytes / writes if writes else 0.0,
        "queue_size": deltas[WEIGHTED_MS] * per_sec / 1000.0,
        "util_percent": deltas[IO_MS] * per_sec / 10.0,
        "in_flight": current[IN_FLIGHT],
        "interval_sec": elapsed_sec,
    }
    ios, io_ms = reads + writes, read_ms + write_ms
    if len(deltas) >= WITH_DISCARDS:
        discards, discard_ms = deltas[DISCARDS], deltas[DISCARD_MS]
        discard_bytes = deltas[DISCARD_SECTORS] * SECTOR_BYTES
        ios += discards
        io_ms += discard_ms
        fields["discards_per_sec"] = discards * per_sec
        fields["discard_merged_per_sec"] = deltas[DISCARDS_MERGED] * per_sec
        fields["discard_bytes_per_sec"] = discard_bytes * per_sec
        fields["discard_await_ms"] = discard_ms / discards if discards else 0.0
        fields["discard_request_bytes"] = discard_bytes / discards if discards else 0.0
    if len(deltas) >= WITH_FLUSHES:
        flushes = deltas[FLUSHES]
        fields["flushes_per_sec"] = flushes * per_sec
        fields["flush_await_ms"] = deltas[FLUSH_MS] / flushes if flushes else 0.0
    fields["await_ms"] = io_ms / ios if ios else 0.0
    return fields


# Raw counters for `counters = true`: (field name, counter index, multiplier to bytes).
COUNTER_FIELDS: tuple[tuple[str, int, int], ...] = (
    ("reads", READS, 1),
    ("reads_merged", READS_MERGED, 1),
    ("read_bytes", READ_SECTORS, SECTOR_BYTES),
    ("read_time_ms", READ_MS, 1),
    ("writes", WRITES, 1),
    ("writes_merged", WRITES_MERGED, 1),
    ("write_bytes", WRITE_SECTORS, SECTOR_BYTES),
    ("write_time_ms", WRITE_MS, 1),
    ("io_time_ms", IO_MS, 1),
    ("weighted_io_time_ms", WEIGHTED_MS, 1),
    ("discards", DISCARDS, 1),
    ("discards_merged", DISCARDS_MERGED, 1),
    ("discard_bytes", DISCARD_SECTORS, SECTOR_BYTES),
    ("discard_time_ms", DISCARD_MS, 1),
    ("flushes", FLUSHES, 1),
    ("flush_time_ms", FLUSH_MS, 1),
)


def counter_fields(current: Sequence[int]) -> dict[str, FieldValue]:
    """Cumulative counters as integers, only those this kernel provides."""
    count = len(current)
    return {name: current[index] * scale for name, index, scale in COUNTER_FIELDS if index < count}
