"""diskprobe_io: /proc/diskstats deltas turned into iostat -x rates, one point per device."""

from __future__ import annotations

import fnmatch
import os
import zlib
from typing import NamedTuple

from diskprobe.collectors.base import BaseCollector, Collection, CollectorContext
from diskprobe.collectors.io_failslow import FailSlowWatch
from diskprobe.compute.iostat import GAUGES, counter_fields, disk_deltas, iostat_fields
from diskprobe.compute.peers import peer_group
from diskprobe.config import IoConfig
from diskprobe.metric import FieldValue, Metric
from diskprobe.schema.io import IO
from diskprobe.sources.blockinfo import BlockInfo, read_block_info
from diskprobe.sources.diskstats import (
    IN_FLIGHT,
    DiskStat,
    kernel_long_bits,
    line_key,
    parse_diskstats_parts,
    read_diskstats_text,
)

MEASUREMENT = IO.name
__all__ = ["GAUGES", "MEASUREMENT", "IoCollector"]  # GAUGES: kept importable from here
INFO_REFRESH_SEC = 3600.0  # re-read model/serial hourly (staggered): udev may fill them late


class _CachedInfo(NamedTuple):
    numbers: tuple[int, ...]  # DiskStat[:2], (major, minor): another device, read afresh
    info: BlockInfo
    tags: dict[str, str]  # shared by every point of this device: never mutated downstream
    read_at: float
    peer_group: str | None  # fail-slow: whom it is compared with; None: not judged


class IoCollector(BaseCollector[IoConfig]):
    """Keeps the previous sample per device; each collect() yields rates since then."""

    name = "io"
    needs_prime = True

    def __init__(
        self, config: IoConfig, context: CollectorContext, *, long_bits: int | None = None
    ) -> None:
        super().__init__(config, context)
        # name -> (its raw line, parsed): an identical line next time means an idle device.
        # Every device in _previous was sampled by the same collect(), at _previous_at.
        self._previous: dict[str, tuple[str, DiskStat]] = {}
        self._previous_at: float | None = None
        self._selected: dict[str, bool] = {}
        self._info: dict[str, _CachedInfo] = {}
        self._idle_templates: dict[int, dict[str, FieldValue]] = {}
        self._long_bits = long_bits or kernel_long_bits()
        self._skipped: set[str] = set()  # keys of the lines skipped last time (logged once)
        self._unreadable = False  # the file had no device line: W! said, I! due on recovery
        self._fail_slow = FailSlowWatch(config, context.state_store(), context.log)

    def _name_selected(self, name: str) -> bool:
        selected = self._selected.get(name)
        if selected is None:
            included = not self.config.devices or any(
                fnmatch.fnmatchcase(name, pattern) for pattern in self.config.devices
            )
            excluded = any(fnmatch.fnmatchcase(name, pattern) for pattern in self.config.exclude)
            selected = self._selected[name] = included and not excluded
        return selected

    def _read_info(self, stat: DiskStat, now: float) -> _CachedInfo:
        info = read_block_info(self._roots, stat.name, stat.major, stat.minor)
        # Stagger refreshes by name, so thousands of devices seen at once are not all
        # re-read in one cycle an hour later.
        staggered = zlib.crc32(os.fsencode(stat.name)) % 1000  # a name of any bytes
        read_at = now - staggered * INFO_REFRESH_SEC / 1000
        tags = self._tags(stat.name, info)
        group = peer_group(
            stat.name, info.model, info.rotational, info.is_partition, self.config.peer_groups
        )
        cached = _CachedInfo(stat[:2], info, tags, read_at, group)
        self._info[stat.name] = cached
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

    # collect() runs every interval over thousands of lines on a busy node, so the common
    # cases are short and inline: an excluded name costs one split, an unchanged line (an
    # idle device) a string comparison and a copy of the zero template.
    def collect(self) -> Collection:
        """One pass over the file: a point per selected device, with rates since the last."""
        text = read_diskstats_text(self._roots)
        now, time_ns = self._clock.monotonic(), self._clock.wall_ns()
        stale = now - INFO_REFRESH_SEC
        elapsed = now - self._previous_at if self._previous_at is not None else 0.0
        metrics: list[Metric] = []
        current: dict[str, tuple[str, DiskStat]] = {}
        seen: set[str] = set()
        skipped: list[str] = []
        judged: dict[str, tuple[str, dict[str, FieldValue]]] = {}
        selected, previous, infos = self._selected, self._previous, self._info
        partitions, counters = self.config.partitions, self.config.counters
        lines = text.splitlines()
        for line in lines:
            parts = line.split(None, 3)
            if len(parts) != 4:
                skipped.append(line)  # blank ones are left out after the loop
                continue
            name = parts[2]
            # The name first: excluded devices (often most of them) cost no int parsing.
            chosen = selected.get(name)
            if not (self._name_selected(name) if chosen is None else chosen):
                continue
            before = previous.get(name)
            if before is not None and before[0] == line:
                stat, rates = before[1], self._idle_rates(before[1], elapsed)
            else:
                parsed = parse_diskstats_parts(parts)
                if parsed is None:
                    skipped.append(line)
                    continue
                stat, rates = parsed, self._rates(parsed, before, elapsed)
            seen.add(name)
            cached = infos.get(name)
            if cached is None or cached.read_at < stale or cached.numbers != stat[:2]:
                cached = self._read_info(stat, now)
            if cached.info.is_partition and not partitions:
                continue
            current[name] = (line, stat)
            fields = self._with_counters(stat, rates) if counters else rates
            if fields:
                metrics.append(Metric(MEASUREMENT, cached.tags, fields, time_ns))
                if cached.peer_group is not None:
                    judged[name] = (cached.peer_group, fields)
        self._fail_slow.judge(time_ns / 1e9, judged)
        self._previous, self._previous_at = current, now
        self._after_pass(text, len(lines), seen, skipped)
        return Collection(metrics=metrics, items=len(current))

    def _after_pass(self, text: str, line_count: int, seen: set[str], skipped: list[str]) -> None:
        """Once per collect(), after the loop: what to say about bad lines, what to forget."""
        skipped = [line for line in skipped if line.strip()]  # a blank line is no bad line
        if skipped or self._skipped:
            self._note_skipped(skipped)
        if (not seen and (skipped or not text.strip())) or self._unreadable:
            self._note_unreadable(bool(seen), len(skipped))
        if len(self._info) > 2 * len(seen) + 64 or len(self._selected) > 2 * line_count + 64:
            # Devices come and go (loop, dm): forget the ones no longer present. Excluded
            # names (loop* by default) are only in _selected, so it is bounded on its own.
            self._info = {name: info for name, info in self._info.items() if name in seen}
            self._selected.clear()

    def _note_skipped(self, lines: list[str]) -> None:
        """One D! per device when its line turns bad, not every cycle it stays bad; only
        the keys of this cycle are kept, so the set cannot outgrow the file."""
        keys = {line_key(line): line for line in lines}
        for key, line in keys.items():
            if key not in self._skipped:
                self._log.debug(f"diskstats: skipping {line.strip()[:200]!r}")
        self._skipped = set(keys)

    def _note_unreadable(self, readable: bool, skipped: int) -> None:
        """Item-less diskstats (empty, binary, all garbage) is said once, and so is the end."""
        path = self._roots.proc_path("diskstats")
        if readable and self._unreadable:
            self._unreadable = False
            self._log.info(f"io: {path} has device lines again; {MEASUREMENT} resumes")
        elif not readable and not self._unreadable:
            self._unreadable = True
            what = f"{skipped} unreadable lines" if skipped else "it is empty"
            self._log.warn(f"io: no device line in {path} ({what}); no {MEASUREMENT} points")

    @staticmethod
    def _with_counters(stat: DiskStat, rates: dict[str, FieldValue]) -> dict[str, FieldValue]:
        fields = counter_fields(stat.counters)
        fields["in_flight"] = stat.counters[IN_FLIGHT]
        fields.update(rates)
        return fields

    def _idle_rates(self, stat: DiskStat, elapsed: float) -> dict[str, FieldValue]:
        """Nothing moved: the rates are the zero template's (as computed, exactly)."""
        if elapsed <= 0:
            return {}
        rates = dict(self._idle_fields(stat.counters))
        rates["in_flight"] = stat.counters[IN_FLIGHT]
        rates["interval_sec"] = elapsed
        return rates

    def _rates(
        self, stat: DiskStat, before: tuple[str, DiskStat] | None, elapsed: float
    ) -> dict[str, FieldValue]:
        if before is None or elapsed <= 0:
            return {}
        earlier = before[1]
        if earlier.major != stat.major or earlier.minor != stat.minor:
            return {}  # the same name, another device: it starts afresh
        if len(earlier.counters) != len(stat.counters):
            return {}
        deltas = disk_deltas(earlier.counters, stat.counters, elapsed, self._long_bits)
        if deltas is None:
            self._log.debug(
                f"io: counters of {stat.name} were reset (they went back, or jumped more than "
                f"{elapsed:.3g}s of I/O allows); no rates this interval"
            )
            return {}
        return iostat_fields(deltas, stat.counters, elapsed)

    def _idle_fields(self, counters: tuple[int, ...]) -> dict[str, FieldValue]:
        template = self._idle_templates.get(len(counters))
        if template is None:
            zeros = [0] * len(counters)
            template = self._idle_templates[len(counters)] = iostat_fields(zeros, counters, 1.0)
        return template
