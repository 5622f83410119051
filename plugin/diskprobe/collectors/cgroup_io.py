"""diskprobe_cgroup_io: I/O per cgroup and device, from deltas of the cgroup's counters.

Both cgroup v2 io.stat and v1 blkio.throttle.*_recursive counters are hierarchical: a parent
counts its whole subtree, so reporting them per level would count every byte once per
ancestor (and "busiest first" would always pick the root, kubepods.slice, the QoS slice...).
Each point therefore carries the cgroup's OWN I/O: its subtree rate minus the subtree rates
of its children measured in the same interval (clamped at 0). Points add up to the host total
without double counting; a pod's total is `sum by pod_uid`. I/O of children that appeared or
vanished within the interval, or that lie below max_depth, is credited to the deepest walked
ancestor. On v1, buffered writeback is charged to the root cgroup ("/") by the kernel.

Since Linux 6.10 v1 blk-throttle (and so its statistics) is only set up on a device once some
cgroup has a throttle limit on it: without one the v1 counters stay at zero.
"""

from __future__ import annotations

import os

from diskprobe.collectors.base import BaseCollector, Collection, CollectorContext
from diskprobe.compute.cgroup_tags import cgroup_tags
from diskprobe.config import CgroupIoConfig
from diskprobe.metric import FieldValue, Metric
from diskprobe.schema.cgroup_io import CGROUP_IO
from diskprobe.sources.cgroups import (
    DISCARD_BYTES,
    READ_BYTES,
    WRITE_BYTES,
    DeviceNames,
    DevNo,
    Hierarchy,
    find_hierarchy,
    parse_counters_text,
    read_counters_text,
    read_text,
    walk_cgroups,
)
from diskprobe.sources.pressure import parse_pressure

MEASUREMENT = CGROUP_IO.name
RATE_FIELDS = (
    "read_bytes_per_sec",
    "write_bytes_per_sec",
    "reads_per_sec",
    "writes_per_sec",
    "discard_bytes_per_sec",  # v2 only: v1 tuples are one shorter, so it is never emitted
)
Deltas = dict[DevNo, tuple[int, ...]]  # counter increases in the interval, per device
Sample = tuple[str, dict[DevNo, tuple[int, ...]]]  # (raw text, parsed counters)


def subtree_deltas(
    before: dict[DevNo, tuple[int, ...]], after: dict[DevNo, tuple[int, ...]]
) -> Deltas:
    """Per-device increases; a device whose counters went backwards (reset) is skipped once."""
    increases: Deltas = {}
    for devno, current in after.items():
        previous = before.get(devno, (0,) * len(current))
        deltas = tuple(cur - prev for cur, prev in zip(current, previous))
        if len(previous) == len(current) and min(deltas) >= 0 and max(deltas) > 0:
            increases[devno] = deltas
    return increases


def _bytes(deltas: Deltas) -> int:
    return sum(d[READ_BYTES] + d[WRITE_BYTES] + sum(d[DISCARD_BYTES:]) for d in deltas.values())


def own_deltas(subtree: dict[str, Deltas]) -> dict[str, Deltas]:
    """Subtract each cgroup's subtree increases from its nearest measured ancestor's (see
    above), in whole counts: subtracted as rates (floats), a parent whose children did all of
    its I/O kept 1e-14 to 1e-7 bytes/s of rounding and was reported as a busy cgroup, a
    series that came and went with nothing changing (kubepods QoS slices, system.slice)."""
    own = {path: dict(rates) for path, rates in subtree.items()}
    for path, rates in subtree.items():
        ancestor = path
        while ancestor and (ancestor := os.path.dirname(ancestor)) not in own:
            pass
        parent = own.get(ancestor) if path else None
        if parent is None:
            continue
        for devno, child in rates.items():
            if devno in parent:
                parent[devno] = tuple(max(0, p - c) for p, c in zip(parent[devno], child))
    return own


class CgroupIoCollector(BaseCollector[CgroupIoConfig]):
    """Keeps the previous counters per cgroup; each collect() yields the busiest cgroups."""

    name = "cgroup_io"
    needs_prime = True

    def __init__(self, config: CgroupIoConfig, context: CollectorContext) -> None:
        super().__init__(config, context)
        self._hierarchy: Hierarchy | None = None
        self._previous: dict[str, Sample] = {}
        self._previous_at = 0.0
        self._devices = DeviceNames(self._roots)
        self._tags: dict[str, dict[str, str]] = {}
        self._bad: set[str] = set()  # cgroups with a malformed counter line last cycle

    def _find(self) -> Hierarchy | None:
        if self._hierarchy is None:
            self._hierarchy = find_hierarchy(self._roots)
            if self._hierarchy is None and self._log.first_time("cgroup_io:none"):
                self._log.info(
                    f"cgroup_io: no cgroup v2 io controller nor v1 blkio under "
                    f"{self._roots.sys_path('fs', 'cgroup')}; cgroup_io stays idle"
                )
        return self._hierarchy

    def collect(self) -> Collection:
        hierarchy = self._find()
        if hierarchy is None:
            return Collection()
        now, time_ns = self._clock.monotonic(), self._clock.wall_ns()
        elapsed, previous = now - self._previous_at, self._previous
        current: dict[str, Sample] = {}
        subtree: dict[str, Deltas] = {}
        bad: set[str] = set()
        for path in walk_cgroups(hierarchy.root, self.config.max_depth):
            text = read_counters_text(hierarchy, path)
            if text is None:
                continue
            before = previous.get(path)
            if before is not None and before[0] == text:  # idle: no parsing, no rates
                current[path] = before
                if path in self._bad:
                    bad.add(path)
                continue
            rejected: list[str] = []
            current[path] = (text, parse_counters_text(hierarchy.version, text, rejected))
            if rejected:
                self._note_rejected(path, rejected, bad)
            if before is not None and elapsed > 0:
                deltas = subtree_deltas(before[1], current[path][1])
                if deltas:
                    subtree[path] = deltas
        self._previous, self._previous_at = current, now
        self._bad = bad  # this cycle's only: bounded by the cgroups there are
        if len(self._tags) > 2 * len(current) + 64:
            self._tags.clear()
        metrics = self._metrics(hierarchy, own_deltas(subtree), elapsed, time_ns)
        return Collection(metrics=metrics, items=len(current))

    def _note_rejected(self, path: str, lines: list[str], bad: set[str]) -> None:
        """One D! when a cgroup's counters turn bad (not every cycle they stay bad)."""
        bad.add(path)
        if path not in self._bad:
            self._log.debug(
                f"cgroup_io: /{path}: device lines that are no counters left out: "
                f"{lines[0][:200]!r}" + (f" and {len(lines) - 1} more" if len(lines) > 1 else "")
            )

    def _metrics(
        self, hierarchy: Hierarchy, own: dict[str, Deltas], elapsed: float, time_ns: int
    ) -> list[Metric]:
        busy = {path: deltas for path, deltas in own.items() if any(map(any, deltas.values()))}
        ranked = sorted(busy, key=lambda path: (-_bytes(busy[path]), path))
        metrics = []
        for path in ranked[: self.config.max_cgroups]:
            pressure = self._pressure(hierarchy, path)
            for devno, deltas in sorted(busy[path].items()):
                if not any(deltas):
                    continue
                tags = dict(self._cgroup_tags(path), device=self._devices.name(devno))
                rates = (delta / elapsed for delta in deltas)
                fields: dict[str, FieldValue] = dict(zip(RATE_FIELDS, rates))
                fields.update(pressure)
                metrics.append(Metric(MEASUREMENT, tags, fields, time_ns))
        return metrics

    def _cgroup_tags(self, path: str) -> dict[str, str]:
        tags = self._tags.get(path)
        if tags is None:
            tags = self._tags[path] = cgroup_tags(path)
        return tags

    def _pressure(self, hierarchy: Hierarchy, path: str) -> dict[str, FieldValue]:
        if hierarchy.version != 2:
            return {}
        text = read_text(os.path.join(hierarchy.root, path, "io.pressure")) or ""
        pressure = parse_pressure(text)  # the same format as HOST_PROC/pressure/io
        if pressure is None:
            return {}
        fields: dict[str, FieldValue] = {"some_avg10": pressure.some.avg10}
        if pressure.full is not None:
            fields["full_avg10"] = pressure.full.avg10
        return fields
