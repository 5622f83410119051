"""diskprobe_io: /proc/diskstats deltas turned into iostat -x rates, one point per device."""

from __future__ import annotations

import fnmatch
import time
import zlib
from dataclasses import dataclass
from typing import Callable

from diskprobe.collectors.base import Collection
from diskprobe.compute.counters import counter_deltas
from diskprobe.compute.iostat import counter_fields, iostat_fields
from diskprobe.config import IoConfig
from diskprobe.log import Logger
from diskprobe.metric import FieldValue, Metric
from diskprobe.roots import HostRoots
from diskprobe.sources.blockinfo import BlockInfo, read_block_info
from diskprobe.sources.diskstats import (
    IN_FLIGHT,
    DiskStat,
    parse_diskstats_line,
    read_diskstats_text,
)

MEASUREMENT = "diskprobe_io"
GAUGES = frozenset({IN_FLIGHT})
INFO_REFRESH_SEC = 3600.0  # re-read model/serial hourly (staggered): udev may fill them late


@dataclass
class _Previous:
    line: str  # the raw line: an identical line next time means an idle device
    stat: DiskStat
    monotonic: float


@dataclass
class _CachedInfo:
    info: BlockInfo
    tags: dict[str, str]
    read_at: float


class IoCollector:
    """Keeps the previous sample per device; each collect() yields rates since then."""

    name = "io"
    needs_prime = True

    def __init__(
        self,
        config: IoConfig,
        roots: HostRoots,
        log: Logger,
        monotonic: Callable[[], float] = time.monotonic,
        wall_ns: Callable[[], int] = time.time_ns,
    ) -> None:
        self.config = config
        self.interval = config.interval
        self._roots = roots
        self._log = log
        self._monotonic = monotonic
        self._wall_ns = wall_ns
        self._previous: dict[str, _Previous] = {}
        self._selected: dict[str, bool] = {}
        self._info: dict[tuple[str, int, int], _CachedInfo] = {}
        self._idle_templates: dict[int, dict[str, FieldValue]] = {}

    def _name_selected(self, name: str) -> bool:
        selected = self._selected.get(name)
        if selected is None:
            included = not self.config.devices or any(
                fnmatch.fnmatchcase(name, pattern) for pattern in self.config.devices
            )
            excluded = any(fnmatch.fnmatchcase(name, pattern) for pattern in self.config.exclude)
            selected = self._selected[name] = included and not excluded
        return selected

    def _device_info(self, stat: DiskStat, now: float) -> _CachedInfo:
        key = (stat.name, stat.major, stat.minor)
        cached = self._info.get(key)
        if cached is None or now - cached.read_at > INFO_REFRESH_SEC:
            info = read_block_info(self._roots, stat.name, stat.major, stat.minor)
            # Stagger refreshes by name, so thousands of devices seen at once are not all
            # re-read in one cycle ten minutes later.
            read_at = now - (zlib.crc32(stat.name.encode()) % 1000) * INFO_REFRESH_SEC / 1000
            cached = self._info[key] = _CachedInfo(info, self._tags(stat.name, info), read_at)
        return cached

    def _tags(self, name: str, info: BlockInfo) -> dict[str, str]:
        tags = {"device": name}
        wanted = self.config.device_tags
        if "model" in wanted and info.model:
            tags["model"] = info.model
        if "serial" in wanted and info.serial:
            tags["serial"] = info.serial
        if info.dm_name:
            tags["dm_name"] = info.dm_name
        return tags

    def close(self) -> None:
        pass

    def collect(self) -> Collection:
        text = read_diskstats_text(self._roots)
        now, time_ns = self._monotonic(), self._wall_ns()
        metrics: list[Metric] = []
        previous, current, seen = self._previous, {}, set()
        for line in text.splitlines():
            parts = line.split(None, 3)
            # The name first: excluded devices (often most of them) cost no int parsing.
            if len(parts) == 4 and not self._name_selected(parts[2]):
                continue
            before = previous.get(parts[2]) if len(parts) == 4 else None
            idle = before is not None and before.line == line
            stat = before.stat if idle and before else parse_diskstats_line(line)
            if stat is None:
                if line.strip():
                    self._log.debug_once(f"diskstats-skip:{line}", f"diskstats: skipping {line!r}")
                continue
            seen.add(stat.name)
            cached = self._device_info(stat, now)
            if cached.info.is_partition and not self.config.partitions:
                continue
            current[stat.name] = _Previous(line, stat, now)
            fields = self._fields(stat, before, now, idle)
            if fields:
                metrics.append(Metric(MEASUREMENT, dict(cached.tags), fields, time_ns))
        self._previous = current
        if len(self._info) > 2 * len(seen) + 64:
            # Devices come and go (loop, dm): forget the ones no longer present.
            self._info = {k: v for k, v in self._info.items() if k[0] in seen}
            self._selected.clear()
        return Collection(metrics=metrics, items=len(current))

    def _fields(
        self, stat: DiskStat, before: _Previous | None, now: float, idle: bool
    ) -> dict[str, FieldValue]:
        fields: dict[str, FieldValue] = {}
        if self.config.counters:
            fields.update(counter_fields(stat.counters))
            fields["in_flight"] = stat.counters[IN_FLIGHT]
        if before is None or (before.stat.major, before.stat.minor) != (stat.major, stat.minor):
            return fields
        elapsed = now - before.monotonic
        if elapsed <= 0 or len(before.stat.counters) != len(stat.counters):
            return fields
        if idle:  # nothing moved: the rates are the zero template's (as computed, exactly)
            fields.update(self._idle_fields(stat.counters))
            fields["in_flight"] = stat.counters[IN_FLIGHT]
            fields["interval_sec"] = elapsed
            return fields
        deltas = counter_deltas(before.stat.counters, stat.counters, GAUGES)
        if deltas is None:
            self._log.debug(f"io: counters of {stat.name} went backwards (reset); skipping once")
            return fields
        fields.update(iostat_fields(deltas, stat.counters, elapsed))
        return fields

    def _idle_fields(self, counters: tuple[int, ...]) -> dict[str, FieldValue]:
        template = self._idle_templates.get(len(counters))
        if template is None:
            zeros = [0] * len(counters)
            template = self._idle_templates[len(counters)] = iostat_fields(zeros, counters, 1.0)
        return template
