"""The block devices of budget_host.SyntheticHost: their sysfs and udev entries, the SMART case
each drive replays through tests/fake_smartctl, and their counters as /proc/diskstats lines.

Counters move by what the host's processes read and write on each device; the time counters
stay possible: io_ticks (time busy) never grows faster than the time that passed, which the
real diskprobe checks (a jump beyond it is taken for a counter reset, and no rates come).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from fleet_host_types import Disk

from kernel_diskstats import diskstats_line

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "smart-json"

SERVICE_MS = {"nvme": 0.08, "sd": 6.0, "vd": 0.4, "rb": 1.5}  # per request, by name prefix


@dataclass
class HostCounters:
    """Cumulative block-device counters (bytes, ios, ms) per whole disk or partition."""

    values: dict[tuple[int, int], list[float]] = field(default_factory=dict)
    step_ms: dict[tuple[int, int], float] = field(default_factory=dict)  # service time, this step

    def add(self, devno: tuple[int, int], read: float, write: float, service_ms: float) -> None:
        row = self.values.setdefault(devno, [0.0] * 7)
        rios, wios = read / 65536 + 1, write / 131072 + 1
        row[0] += rios
        row[1] += read
        row[2] += rios * service_ms
        row[3] += wios
        row[4] += write
        row[5] += wios * service_ms
        self.step_ms[devno] = self.step_ms.get(devno, 0.0) + (rios + wios) * service_ms

    def busy(self, real_dt: float) -> None:
        """Time busy (io_ticks) never passes the time elapsed (diskprobe takes a jump beyond
        it for a counter reset): requests overlap (queue depth ~4), at most 60 % busy."""
        for devno, service_ms in self.step_ms.items():
            self.values[devno][6] += min(0.6 * real_dt * 1000, service_ms / 4)
        self.step_ms.clear()


def _counters(row: list[float]) -> list[int]:
    """The 17 counters of a row of HostCounters (bytes to 512-byte sectors)."""
    rios, rbytes, rms, wios, wbytes, wms, busy = (int(v) for v in row)
    return [rios, 0, rbytes // 512, rms, wios, 0, wbytes // 512, wms, 0,
            busy, rms + wms, 0, 0, 0, 0, 0, 0]  # fmt: skip


def diskstats_text(disks: dict[str, tuple[int, int]], counters: HostCounters,
                   partitioned: tuple[Disk, ...]) -> str:  # fmt: skip
    """Every device in number order, its partitions after it (a share of its counters: 90 %
    on the root or data partition), then four idle loop devices (snaps, excluded by default)."""
    lines = []
    for name, (major, minor) in sorted(disks.items(), key=lambda item: item[1]):
        row = counters.values.get((major, minor), [0.0] * 7)
        lines.append(diskstats_line(major, minor, name, _counters(row)))
        disk = next((d for d in partitioned if d.name == name), None)
        for suffix in disk.partitions if disk else ():
            part_minor = minor + int("".join(c for c in suffix if c.isdigit()))
            share = 0.9 if suffix in ("p2", "1") else 0.02
            lines.append(diskstats_line(major, part_minor, name + suffix,
                                        _counters([v * share for v in row])))  # fmt: skip
    for index in range(4):
        lines.append(diskstats_line(7, index, f"loop{index}", _counters([1.0] * 7)))
    return "".join(line + "\n" for line in lines)


def add_block(sys_root: Path, run: Path, name: str, major: int, minor: int, parent: str | None,
              disk: Disk | None) -> None:  # fmt: skip
    """A block device in sysfs (/sys/class/block, /sys/dev/block) and, for a disk with a
    model, its queue's rotational flag and its udev entry (model, serial)."""
    directory = sys_root / "devices" / "virtual" / "block" / (parent or "") / name
    directory.mkdir(parents=True, exist_ok=True)
    if parent is not None:
        (directory / "partition").write_text("1\n")
    link = sys_root / "class" / "block" / name
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.is_symlink():
        link.symlink_to(directory)
    dev = sys_root / "dev" / "block" / f"{major}:{minor}"
    if not dev.is_symlink():
        dev.symlink_to(directory)
    if disk is not None and disk.model:
        (directory / "queue").mkdir(exist_ok=True)
        (directory / "queue" / "rotational").write_text("1\n" if name[:2] == "sd" else "0\n")
        udev = f"E:ID_MODEL={disk.model.replace(' ', '_')}\nE:ID_SERIAL_SHORT={disk.serial}\n"
        (run / "udev" / "data" / f"b{major}:{minor}").write_text(udev)


def write_smart_case(smart: Path, disk: Disk) -> None:
    """The golden case `disk` replays, with its own serial and device path."""
    case = smart / disk.name
    case.mkdir()
    document = json.loads((GOLDEN / disk.smart_case / "response.json").read_text())
    path = f"/dev/{disk.name[:-2]}" if disk.smart_type == "nvme" else f"/dev/{disk.name}"
    document["serial_number"] = disk.serial
    if isinstance(document.get("device"), dict):
        document["device"]["name"] = document["device"]["info_name"] = path
    (case / "response.json").write_text(json.dumps(document))
    (case / "device").write_text(f"{path} -d {disk.smart_type}\n")
