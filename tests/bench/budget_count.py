"""Counting for bench_fleet_budget.py: series in both data models, bytes, churn, and what the
Telegraf tag recipes of telegraf/diskprobe-fleet-tags.conf leave.

The two data models, from the line protocol diskprobe emits:
* InfluxDB: one series per measurement + tag set (the series key); fields are not series.
* Prometheus / VictoriaMetrics: VictoriaMetrics' InfluxDB line-protocol endpoint makes one
  series per field, named `<measurement>_<field>`, labelled with the tags: integers and floats
  as they are, a boolean as 1 or 0, and a STRING field too, as the number it parses as, else
  0 (measured on Debian's victoria-metrics: "ok" became 0, "12.5" 12.5). So every field is a
  series there; tests/test_bench_fleet_budget.py holds this against a real VictoriaMetrics.

The recipes themselves, read from the shipped conf file and applied as Telegraf applies them:
budget_recipes.py.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable

from budget_recipes import Recipe, removed_bytes

from lineproto import Point, parse_line

SeriesKey = tuple[str, tuple[tuple[str, str], ...]]
SMART = ("diskprobe_smart", "diskprobe_smart_attr")
GROWING = ("process", "user", "cgroup", "pod_uid", "container_id", "path", "device", "serial",
           "id", "version")  # fmt: skip


@dataclass
class Emitted:
    """One line as emitted: its point and its size on the wire (with the newline)."""

    point: Point
    size: int
    keys: Keys | None = None  # the point's series keys, computed once for every recipe


@dataclass
class Keys:
    """A point's series: InfluxDB, VictoriaMetrics (string fields apart) and diskprobe's
    own Prometheus exposition; residue: a cgroup_io point with every rate under 0.001/s."""

    influx: SeriesKey
    prom: list[SeriesKey]
    strings: list[SeriesKey]
    expo: list[SeriesKey]
    residue: bool


def point_keys(point: Point) -> Keys:
    key = influx_key(point)
    strings, expo = [], []
    for name, value in point.fields.items():
        if isinstance(value, str):
            strings.append((f"{point.measurement}_{name}", key[1]))
            labels = tuple(sorted({**point.tags, name: value}.items()))
            expo.append((f"{point.measurement}_{name}_info", labels))
        else:
            expo.append((f"{point.measurement}_{name}", key[1]))
    residue = point.measurement == "diskprobe_cgroup_io" and all(
        abs(float(v)) < 1e-3 for k, v in point.fields.items() if k.endswith("_per_sec"))
    return Keys(key, prom_keys(point), strings, expo, residue)


def parse_batch(lines: Iterable[str]) -> list[Emitted]:
    return [Emitted(parse_line(line), len(line.encode()) + 1) for line in lines]


def influx_key(point: Point) -> SeriesKey:
    return point.measurement, tuple(sorted(point.tags.items()))


def prom_keys(point: Point) -> list[SeriesKey]:
    """VictoriaMetrics' series for one line: one per field, string fields included."""
    tags = tuple(sorted(point.tags.items()))
    return [(f"{point.measurement}_{name}", tags) for name in point.fields]


@dataclass
class Tally:
    """What one run emitted, batch by batch, under one recipe."""

    warmup: int  # batches before churn is counted
    influx_seen: dict[SeriesKey, int] = field(default_factory=dict)  # key -> first batch
    real_seen: dict[SeriesKey, int] = field(default_factory=dict)  # ... with real I/O (below)
    prom_seen: dict[SeriesKey, int] = field(default_factory=dict)
    prom_strings: set[SeriesKey] = field(default_factory=set)  # of string fields (stored as 0)
    # diskprobe's own Prometheus exposition (--format prometheus): a string field is an
    # `_info` series with the text as a label, so each new text is a new series.
    expo_seen: dict[SeriesKey, int] = field(default_factory=dict)
    per_batch: list[dict[str, float]] = field(default_factory=list)
    # measurement -> lines and bytes: after the warm-up; SMART's over the whole run
    lines: Counter[str] = field(default_factory=Counter)
    size: Counter[str] = field(default_factory=Counter)
    peak: Counter[str] = field(default_factory=Counter)  # measurement -> most series in a batch
    collisions: int = 0  # points of one batch with the same series key and timestamp
    total_lines: int = 0  # every line of every batch counted, before the recipe
    total_bytes: int = 0
    # cgroup_io points whose every rate is under 0.001/s: a cgroup with no I/O of its own,
    # reported for the float residue of its subtree's rates minus its children's before
    # cgroup_io subtracted whole counter deltas (none since; still counted apart, to show it).
    # Tag values are counted without them, and `real_seen` holds the series that had another
    # point.
    residues: int = 0
    values_seen: dict[str, dict[str, int]] = field(default_factory=dict)  # tag -> value -> batch

    def add(self, index: int, batch: list[Emitted], recipe: Recipe) -> None:
        influx: set[SeriesKey] = set()
        prom: set[SeriesKey] = set()
        stamped: Counter[tuple[SeriesKey, int]] = Counter()
        lines = size = 0
        per_measurement: Counter[str] = Counter()
        for emitted in batch:
            self.total_lines += 1
            self.total_bytes += emitted.size
            point = recipe.apply(emitted.point)
            if point is None:
                continue
            if point is emitted.point:  # untouched: the keys every recipe shares
                emitted.keys = keys = emitted.keys or point_keys(point)
                line_size = emitted.size
            else:
                keys = point_keys(point)
                line_size = emitted.size - removed_bytes(emitted.point, point)
            residue, key = keys.residue, keys.influx
            self.residues += residue
            stamped[(key, point.time_ns)] += 1
            self.influx_seen.setdefault(key, index)
            if not residue:
                self.real_seen.setdefault(key, index)
            smart = point.measurement in SMART  # per read cycle (30 min), counted apart
            for series in keys.prom:
                self.prom_seen.setdefault(series, index)
            if not smart:
                prom.update(keys.prom)
            self.prom_strings.update(keys.strings)
            for series in keys.expo:
                self.expo_seen.setdefault(series, index)
            for tag in GROWING if not residue else ():
                if tag in point.tags:
                    self.values_seen.setdefault(tag, {}).setdefault(point.tags[tag], index)
            if not smart:
                per_measurement[point.measurement] += key not in influx
                influx.add(key)
                lines += 1
                size += line_size
            if smart or index >= self.warmup:
                self.lines[point.measurement] += 1
                self.size[point.measurement] += line_size
        self.collisions += sum(count - 1 for count in stamped.values())
        for measurement, count in per_measurement.items():
            self.peak[measurement] = max(self.peak[measurement], count)
        self.per_batch.append({"influx": len(influx), "prom": len(prom), "lines": lines,
                               "bytes": size})  # fmt: skip

    def new_after_warmup(self, seen: dict[SeriesKey, int]) -> Counter[str]:
        """Series first seen after the warm-up, by measurement (Prometheus: by metric name's
        measurement prefix)."""
        counts: Counter[str] = Counter()
        for (name, _tags), first in seen.items():
            if first >= self.warmup:
                counts[_measurement(name)] += 1
        return counts

    def new_values(self) -> dict[str, int]:
        return {tag: sum(1 for first in values.values() if first >= self.warmup)
                for tag, values in self.values_seen.items()}  # fmt: skip


def _measurement(name: str) -> str:
    known = ("diskprobe_smart_attr", "diskprobe_smart", "diskprobe_process_io",
             "diskprobe_cgroup_io", "diskprobe_pressure", "diskprobe_agent", "diskprobe_io",
             "diskprobe_fs")  # fmt: skip
    return next((m for m in known if name == m or name.startswith(m + "_")), name)
