"""The evidence around a watch: the devices' counters and the job's cgroup counters read
before and after it, page-fault waits placed on a device, and the cgroup limits reached."""

from __future__ import annotations

from dataclasses import dataclass

from diskprobe.collectors.job_process import Process
from diskprobe.compute.iostat import disk_deltas, iostat_fields
from diskprobe.metric import FieldValue
from diskprobe.roots import HostRoots
from diskprobe.sources.cgroup_limits import JobCgroup, Limit, cgroup_counters, job_cgroup, limits_on
from diskprobe.sources.cgroups import DevNo, whole_disk
from diskprobe.sources.diskstats import (
    READ_MS,
    READ_SECTORS,
    READS,
    WRITE_MS,
    WRITES,
    DiskStat,
    parse_diskstats,
    read_diskstats_text,
)
from diskprobe.sources.file_places import FilePlaces, Place
from diskprobe.sources.tasks import OpenFile

THROTTLE_REACHED = 0.5  # the job's rate is at least half its limit: the limit holds it back
RATE_INDEX = {"rbps": 0, "wbps": 1, "riops": 2, "wiops": 3}  # into the cgroup counters


@dataclass
class Snapshot:
    """Counters that the watch's seconds turn into rates."""

    disks: dict[str, DiskStat]
    cgroup: JobCgroup | None
    cgroup_counters: dict[DevNo, tuple[int, ...]]

    @classmethod
    def take(cls, roots: HostRoots, main_pid: int | None) -> Snapshot:
        """The devices' counters, and those of main_pid's cgroup (None: no cgroup)."""
        try:
            disks = parse_diskstats(read_diskstats_text(roots))
        except OSError:
            disks = {}
        cgroup = job_cgroup(roots, main_pid) if main_pid is not None else None
        return cls(disks, cgroup, cgroup_counters(cgroup) if cgroup else {})


def device_figures(name: str, before: Snapshot, after: Snapshot, seconds: float
                   ) -> dict[str, FieldValue] | None:  # fmt: skip
    """iostat -x of the device over the watch, and its average awaits since boot."""
    first, last = before.disks.get(name), after.disks.get(name)
    if first is None or last is None:
        return None
    return counter_figures(first.counters, last.counters, seconds)


def counter_figures(first: tuple[int, ...], last: tuple[int, ...], seconds: float
                    ) -> dict[str, FieldValue] | None:  # fmt: skip
    """iostat -x from one device's counters read `seconds` apart, and its average awaits
    since boot (None: no time, or counters that went back)."""
    deltas = disk_deltas(first, last, seconds) if seconds > 0 else None
    if deltas is None:
        return None
    figures = iostat_fields(deltas, last, seconds)
    reads, writes = last[READS], last[WRITES]
    figures["read_await_ms_since_boot"] = last[READ_MS] / reads if reads else 0.0
    figures["write_await_ms_since_boot"] = last[WRITE_MS] / writes if writes else 0.0
    return figures


def place_faults(process: Process, places: FilePlaces, before: Snapshot, after: Snapshot) -> None:
    """A process's page-fault waits go to the mapped file's device that read the most."""
    if not (process.main.faults or process.others.faults):
        return
    by_device: dict[tuple[int, int], list[tuple[int, str]]] = {}
    for path, (devno, size) in (process.mapped or {}).items():
        by_device.setdefault(devno, []).append((size, path))
    place = Place(None)
    if by_device:
        devno = max(by_device, key=lambda dev: (_read_sectors(places, dev, before, after),
                                                sum(size for size, _ in by_device[dev])))
        size, path = max(by_device[devno])
        located = places.locate(process.pid, OpenFile(path, devno, 0, True, False))
        place = located.place if located else place
        process.fault_paths = [path for _, path in sorted(by_device[devno], reverse=True)[:5]]
    process.main.place_faults(place)
    process.others.place_faults(place)


def _read_sectors(places: FilePlaces, devno: DevNo, before: Snapshot, after: Snapshot) -> int:
    name = places.device_name(devno)
    first, last = before.disks.get(name), after.disks.get(name)
    return last.counters[READ_SECTORS] - first.counters[READ_SECTORS] if first and last else 0


@dataclass(frozen=True)
class Throttle:
    limit: Limit
    rate: float  # the cgroup's rate over the watch, in the limit's unit

    @property
    def reached(self) -> float:
        return self.rate / self.limit.value


def throttles(roots: HostRoots, devices: dict[Place, DevNo], before: Snapshot, after: Snapshot,
              seconds: float) -> dict[Place, Throttle]:  # fmt: skip
    """The places whose device the job's cgroup limits, with the limit most reached."""
    if after.cgroup is None or seconds <= 0:
        return {}
    found: dict[Place, Throttle] = {}
    for place, devno in devices.items():
        disk = whole_disk(roots, devno)
        for limit in limits_on(after.cgroup, {devno, disk}):
            last = after.cgroup_counters.get(limit.device)
            # v1 on 6.10+ counts a device only once it has a limit and I/O: absent is zero
            first = before.cgroup_counters.get(limit.device) or (0,) * len(last or ())
            index = RATE_INDEX[limit.key]
            rate = (last[index] - first[index]) / seconds if last else 0.0
            throttle = Throttle(limit, rate)
            if place not in found or throttle.reached > found[place].reached:
                found[place] = throttle
    return found
