"""Block-device counters of budget_host.SyntheticHost, as /proc/diskstats lines.

Counters move by what the host's processes read and write on each device; the time counters
stay possible: io_ticks (time busy) never grows faster than the time that passed, which the
real diskprobe checks (a jump beyond it is taken for a counter reset, and no rates come).
"""

from __future__ import annotations

from dataclasses import dataclass, field

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


def diskstats_line(major: int, minor: int, name: str, row: list[float]) -> str:
    rios, rbytes, rms, wios, wbytes, wms, busy = (int(v) for v in row)
    fields = [rios, 0, rbytes // 512, rms, wios, 0, wbytes // 512, wms, 0,
              busy, rms + wms, 0, 0, 0, 0, 0, 0]  # fmt: skip
    return f"{major:4d} {minor:7d} {name} " + " ".join(map(str, fields)) + "\n"
