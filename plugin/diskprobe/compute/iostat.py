"""iostat -x from two /proc/diskstats samples, with sysstat's formulas.

Mirrors sysstat rd_stats.c compute_ext_disk_stats() and iostat.c write_ext_stat():
  r/s = d(reads) / itv                 r_await = d(read_ms) / d(reads), 0.0 without reads
  rkB/s = d(read_sectors) * 512 / itv  rareq-sz = d(read_sectors) * 512 / d(reads)
  aqu-sz = d(weighted_ms) / itv / 1000 %util = d(io_ms) / itv / 10 (itv in seconds here)
  await = (d(read_ms) + d(write_ms) + d(discard_ms)) / (d(reads) + d(writes) + d(discards))
Flushes are kept out of `await`, as iostat does. Fields the kernel lacks are omitted.
"""

from __future__ import annotations

from typing import Sequence

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
