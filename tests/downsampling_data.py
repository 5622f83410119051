"""Back-filled raw data for the downsampling tests, and what each continuous query must make
of it, computed here in Python from the same points (not by InfluxDB).

Every field of every kept measurement gets a value of its schema type, seeded: gauges wander,
counters only grow, SMART counters grow by the day, `verdict` matches `verdict_code`,
`fail_slow` comes and goes in episodes, strings take a few values. Points go through
diskprobe's own Metric and InfluxSerializer.
"""

from __future__ import annotations

import random
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Union

from diskprobe.metric import Metric
from diskprobe.schema import COUNTER, measurement
from diskprobe.serializers.influx import InfluxSerializer

DASHBOARDS = Path(__file__).resolve().parent.parent / "dashboards"
if str(DASHBOARDS) not in sys.path:
    sys.path.insert(0, str(DASHBOARDS))

from dashgen.downsample import ContinuousQuery  # noqa: E402

Value = Union[float, int, bool, str]
SEC = 10**9
DURATION_NS = {"s": SEC, "m": 60 * SEC, "h": 3600 * SEC, "d": 86400 * SEC}
HOSTS = ("node01", "node02")
# measurement -> (series tag sets, seconds between points, hours of data)
LAYOUT: dict[str, tuple[tuple[dict[str, str], ...], int, int]] = {
    "diskprobe_io": (({"device": "sda", "model": "HGST", "serial": "A1"},
                      {"device": "nvme0n1", "model": "Samsung", "serial": "N1"}), 30, 4),
    "diskprobe_fs": (({"path": "/", "device": "sda1", "fstype": "ext4", "mode": "rw"},), 300, 30),
    "diskprobe_smart": (({"device": "sda", "model": "HGST", "serial": "A1", "protocol": "ATA",
                          "media": "hdd"},), 3600, 72),
    "diskprobe_smart_attr": (({"device": "sda", "serial": "A1", "id": "5",
                               "name": "Reallocated_Sector_Ct"},), 3600, 72),
    "diskprobe_pressure": (({},), 30, 1),
    "diskprobe_training": (({"job": "resnet", "rank": "0", "pod": "p0", "device": "nvme0n1"},),
                           60, 2),
    "diskprobe_agent": (({"collector": "io", "version": "1.0"},), 60, 3),
}
VERDICTS = ("ok", "warn", "fail")
WORDS = ("disk", "compute", "loader_cpu", "mixed")


def duration_ns(text: str) -> int:
    return int(text[:-1]) * DURATION_NS[text[-1]]


def _value(rng: random.Random, kind: str, type_: str, step: int, name: str) -> Value:
    if type_ == "bool":
        return rng.random() < 0.3 if name != "responsive" else rng.random() < 0.9
    if type_ == "str":
        return rng.choice(WORDS[:3]) if step % 7 else rng.choice(WORDS)
    if kind == COUNTER:
        return step * 1000 + rng.randint(0, 999)
    if type_ == "int":
        return rng.randint(0, 50) + step // 24
    return round(rng.uniform(0.0, 100.0), 3)


def raw_points(end_ns: int, seed: int = 7) -> list[Metric]:
    """Every kept measurement's points for HOSTS, ending before `end_ns`."""
    rng = random.Random(seed)
    metrics: list[Metric] = []
    for name, (series, every_s, hours) in LAYOUT.items():
        spec = measurement(name)
        count = hours * 3600 // every_s
        for host in HOSTS:
            for tags in series:
                for step in range(count):
                    fields = {f.name: _value(rng, f.kind, f.type, step, f.name)
                              for f in spec.fields}
                    if name == "diskprobe_smart":
                        code = min(2, step // 30) if host == HOSTS[0] else rng.choice((0, 0, 1))
                        fields.update(verdict_code=code, verdict=VERDICTS[code],
                                      verdict_reasons=f"reason {step}")
                    if name == "diskprobe_io":
                        fields["fail_slow"] = (step // 20) % 3 == 2 and tags["device"] == "sda"
                    time_ns = end_ns - (count - step) * every_s * SEC
                    metrics.append(Metric(name, {**tags, "host": host}, fields, time_ns))
    return metrics


def line_protocol(metrics: list[Metric]) -> bytes:
    return InfluxSerializer().serialize(metrics).encode()


@dataclass(frozen=True)
class Window:
    tags: tuple[tuple[str, str], ...]
    start_ns: int


def _aggregate(function: str, points: list[tuple[int, Value]]) -> Value | frozenset[Value]:
    values = [v for _, v in sorted(points, key=lambda p: p[0])]
    if function == "mean":
        return sum(float(v) for v in values) / len(values)
    if function == "max":
        return max(values)
    if function == "min":
        return min(values)
    if function == "last":
        return values[-1]
    if function == "count":
        return len(values)
    if function == "sum":
        return sum(values)  # type: ignore[arg-type]
    if function == "mode":  # the set of most frequent values: a tie may go either way
        counts = Counter(values)
        top = max(counts.values())
        return frozenset(v for v, n in counts.items() if n == top)
    raise ValueError(function)


def expected(query: ContinuousQuery, metrics: list[Metric]) -> dict[Window, dict[str, object]]:
    """What `query` writes: per series and window, alias -> value (a frozenset: any of them)."""
    every = duration_ns(query.every)
    windows: dict[Window, list[Metric]] = {}
    for metric in metrics:
        if metric.measurement != query.measurement:
            continue
        if query.where:
            field, value = query.where.replace('"', "").split(" = ")
            if metric.fields.get(field) is not (value == "true"):
                continue
        key = Window(tuple(sorted(metric.tags.items())), metric.time_ns // every * every)
        windows.setdefault(key, []).append(metric)
    out: dict[Window, dict[str, object]] = {}
    for key, members in windows.items():
        row: dict[str, object] = {}
        selector = next((c for c in query.columns if c.function == "max"), None)
        if any(not c.function for c in query.columns) and selector is not None:
            top = max(m.fields[selector.field] for m in members)
            chosen = min((m for m in members if m.fields[selector.field] == top),
                         key=lambda m: m.time_ns)  # the earliest point with the maximum
            out[key] = {c.alias: chosen.fields[c.field] for c in query.columns}
            continue
        for column in query.columns:
            points = [(m.time_ns, m.fields[column.field]) for m in members
                      if column.field in m.fields]
            row[column.alias] = _aggregate(column.function, points)
        out[key] = row
    return out
