"""bench_io.py's synthetic Kubernetes node: a generated HOST_PROC / HOST_SYS / HOST_RUN tree whose
/proc/diskstats advances one interval per cycle, the collector's clock, and the figures' format.

~50 % loop devices, ~37 % dm-N (with dm names in /sys), NVMe and SCSI disks with partitions
(model and serial in the udev database), 20-field lines. side_io.py runs the same node.
"""

from __future__ import annotations

import io
import math
import os
import random
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: the shared helpers

from diskprobe.collectors.base import Clock, CollectorContext
from diskprobe.collectors.io import IoCollector
from diskprobe.config import IoConfig
from diskprobe.log import Logger
from diskprobe.roots import HostRoots
from kernel_diskstats import (
    DISCARD_MS,
    DISCARD_SECTORS,
    DISCARDS,
    FLUSH_MS,
    FLUSHES,
    IN_FLIGHT,
    IO_MS,
    MS_COUNTERS,
    READ_MS,
    READ_SECTORS,
    READS,
    READS_MERGED,
    STATS,
    WEIGHTED_MS,
    WRITE_MS,
    WRITE_SECTORS,
    WRITES,
    WRITES_MERGED,
    diskstats_line,
    sd_name,
)

TARGET_DEVICES = 4000
INTERVAL_SEC = 10.0  # the collector's clock advances this much per cycle
FIRST_TIME_NS = 1_700_000_000_000_000_000


@dataclass
class Device:
    major: int
    minor: int
    name: str
    kind: str  # loop, dm, disk, part
    counters: list[int]
    increments: Optional[list[int]]  # per cycle; None: idle, its line never changes
    line: str = ""


def _increments(rng: random.Random) -> list[int]:
    """Plausible counter increments of one device over one 10 s interval."""
    busy = rng.random()
    reads = int(rng.randint(10, 4000) * busy) + 1
    writes = int(rng.randint(10, 3000) * busy) + 1
    read_ms = reads * rng.randint(1, 8) // 4
    write_ms = writes * rng.randint(1, 12) // 4
    values = [0] * STATS
    values[READS], values[READS_MERGED] = reads, reads // 7
    values[READ_SECTORS], values[READ_MS] = reads * rng.choice((8, 16, 64, 256)), read_ms
    values[WRITES], values[WRITES_MERGED] = writes, writes // 5
    values[WRITE_SECTORS], values[WRITE_MS] = writes * rng.choice((8, 16, 128)), write_ms
    values[IO_MS] = min(int(INTERVAL_SEC * 1000) // 3, (read_ms + write_ms) // 2 + 1)
    values[WEIGHTED_MS] = read_ms + write_ms
    values[DISCARDS] = rng.randint(0, 5)
    values[DISCARD_SECTORS], values[DISCARD_MS] = values[DISCARDS] * 2048, values[DISCARDS]
    values[FLUSHES] = writes // 20
    values[FLUSH_MS] = values[FLUSHES] // 2
    return values


def make_devices(count: int, seed: int) -> list[Device]:
    """~50 % loop, ~37.5 % dm-N, the rest NVMe and SCSI disks with their partitions."""
    rng = random.Random(seed)
    devices: list[Device] = []

    def add(major: int, minor: int, name: str, kind: str, active: float) -> None:
        counters = [rng.randint(0, 10**9) for _ in range(STATS)]
        counters[IN_FLIGHT] = 0
        for index in MS_COUNTERS:
            counters[index] %= 2**31
        increments = _increments(rng) if rng.random() < active else None
        devices.append(Device(major, minor, name, kind, counters, increments))

    for index in range(count // 2):
        add(7, index, f"loop{index}", "loop", active=0.1)  # snaps, images: mostly idle
    for index in range(count * 3 // 8):
        add(253, index, f"dm-{index}", "dm", active=0.5)  # container thin devices, LVs
    nvme = scsi = 0
    while len(devices) < count:
        if nvme <= scsi:
            disk, major, first = f"nvme{nvme}n1", 259, nvme * 4
            parts = [(259, first + p, f"{disk}p{p}") for p in (1, 2, 3)]
            nvme += 1
        else:
            disk, major, first = sd_name(scsi), 8, (scsi * 16) % 256
            parts = [(8, first + p, f"{disk}{p}") for p in (1, 2)]
            scsi += 1
        add(major, first, disk, "disk", active=1.0)
        for part_major, part_minor, part_name in parts:
            if len(devices) < count:
                add(part_major, part_minor, part_name, "part", active=0.9)
    for device in devices:
        device.line = _format(device)
    return devices



def _format(device: Device) -> str:
    return diskstats_line(device.major, device.minor, device.name, device.counters) + "\n"


class SyntheticHost:
    """HOST_PROC, HOST_SYS and HOST_RUN under `root`; advance() writes the next diskstats."""

    def __init__(self, root: Path, devices: list[Device]) -> None:
        self.root, self.devices, self.cycle = root, devices, 0
        for sub in ("proc", "sys", "run"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        self.roots = HostRoots(
            proc=str(root / "proc"), sys=str(root / "sys"), run=str(root / "run")
        )
        self.active = [device for device in devices if device.increments is not None]
        self._write_sys_and_udev()
        self.advance()

    def _write_sys_and_udev(self) -> None:
        """Tags as on a real node: dm names from /sys, model and serial from udev."""
        block = self.root / "sys" / "class" / "block"
        udev = self.root / "run" / "udev" / "data"
        udev.mkdir(parents=True, exist_ok=True)
        for device in self.devices:
            if device.kind == "dm":
                (block / device.name / "dm").mkdir(parents=True)
                pod = f"{device.minor:05d}"
                name = f"docker-253:0-{pod}-pool-snap-{pod}" if device.minor % 3 else f"vg-lv{pod}"
                (block / device.name / "dm" / "name").write_text(name + "\n")
            elif device.kind in ("disk", "part"):
                (block / device.name).mkdir(parents=True)
                if device.kind == "part":
                    (block / device.name / "partition").write_text("1\n")
                model = "Amazon_Elastic_Block_Store" if device.major == 259 else "QEMU_HARDDISK"
                entry = (
                    f"E:ID_MODEL={model}\nE:ID_SERIAL_SHORT=vol0{device.major}{device.minor:x}\n"
                )
                (udev / f"b{device.major}:{device.minor}").write_text(entry)

    def advance(self) -> None:
        """The next interval's /proc/diskstats: the active devices' counters move on."""
        self.cycle += 1
        wave = 1 + self.cycle % 3
        for device in self.active:
            counters, increments = device.counters, device.increments
            assert increments is not None
            for index in range(STATS):
                counters[index] += increments[index] * wave
            counters[IN_FLIGHT] = self.cycle % 5 if increments[READS] > 1000 else 0
            for index in MS_COUNTERS:
                counters[index] %= 2**32  # they wrap in the kernel; the collector copes
            device.line = _format(device)
        path = self.root / "proc" / "diskstats"
        temporary = path.with_suffix(".new")
        temporary.write_text("".join(device.line for device in self.devices))
        os.replace(temporary, path)


class CycleClock:
    """The collector's monotonic clock; the benchmark moves it on by INTERVAL_SEC per cycle."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make_collector(host: SyntheticHost, config: IoConfig, clock: CycleClock) -> IoCollector:
    wall = iter(range(FIRST_TIME_NS, 1 << 62, int(INTERVAL_SEC * 1e9)))
    context = CollectorContext(
        roots=host.roots, log=Logger(io.StringIO()), clock=Clock(clock, lambda: next(wall))
    )
    return IoCollector(config, context)


def next_cycle(host: SyntheticHost, clock: CycleClock) -> None:
    host.advance()
    clock.now += INTERVAL_SEC


# ---------------------------------------------------------------------------------------------
# Statistics


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(fraction * len(ordered)) - 1))]


def summary(values: list[float]) -> str:
    return (
        f"min {min(values):7.2f}  mean {statistics.fmean(values):7.2f}  "
        f"p50 {percentile(values, 0.5):7.2f}  "
        f"p95 {percentile(values, 0.95):7.2f}  max {max(values):7.2f}"
    )
