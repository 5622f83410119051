"""Prometheus text exposition format (0.0.4), for node_exporter's textfile collector.

Every name, type and HELP line comes from the schema through one function, `family()`:

- name: `<measurement>_<field>`; measurements already start with `diskprobe_`, so
  diskprobe_io.reads_per_sec is `diskprobe_io_reads_per_second`.
- base units, value scaled to match: ms -> `_seconds` (/1000), `_sec` -> `_seconds`,
  min -> `_seconds` (x60), h -> `_seconds` (x3600), % -> `_ratio` (/100; percentage_used,
  which may exceed 100, becomes `life_used_ratio` and may exceed 1), `_c` -> `_celsius`,
  bytes stay `_bytes`, `_per_sec` rates -> `_per_second` gauges.
- type: the raw cumulative counters (schema kind COUNTER: reads, read_bytes, read_time_ms,
  ..., sent with `counters = true`) are counters named `..._total`; everything else is a
  gauge, and a gauge whose name would end in `_total` drops it (inodes_total ->
  `diskprobe_fs_inodes`).
  SMART lifetime counts stay gauges: they are drive readings taken every `[smart] interval`.
- booleans are 1/0; a string field is `<measurement>_<field>_info{<tags>,<field>="text"} 1`.
- labels are the tags (empty ones dropped; diskprobe_job's `job` is `training_job`: Prometheus
  owns `job`, the scrape's), values escaped as the format says (backslash,
  double quote, newline), after bytes that are not UTF-8 became %XX and a literal % %25
  (serializers/text.py).
- HELP and TYPE once per family, all samples of a family together, families in schema
  order. No timestamps: node_exporter rejects a textfile that carries them. NaN and
  infinity are never written (diskprobe produces none).

A textfile is a snapshot, rewritten every batch, but not every collector reports every batch
(SMART drives only after each read, collectors with their own interval only when due). So
the serializer keeps each series' latest point: a batch in which the io or filesystems
collector ran replaces all of that measurement's series (a removed device disappears at
once); other series (SMART, the agent's points) stay until a newer point replaces them or
they are older than `stale_after` seconds.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from typing import Callable, Iterable, NamedTuple

from diskprobe.metric import FieldValue, Metric
from diskprobe.schema import AGENT, COUNTER, FS, IO, JOB, MEASUREMENTS, FieldSpec, MeasurementSpec
from diskprobe.schema.latency import CGROUP_LATENCY, LATENCY, LATENCY_BUCKET, PROCESS_LATENCY
from diskprobe.serializers import prometheus_histogram as histogram
from diskprobe.serializers.text import system_text

STALE_AFTER = 2 * 3600.0  # four missed reads at the default [smart] interval of 30m
# schema unit: (suffix diskprobe names carry, Prometheus suffix, multiply by, divide by)
UNITS: dict[str, tuple[str, str, int, int]] = {
    "ms": ("_ms", "_seconds", 1, 1000),
    "s": ("_sec", "_seconds", 1, 1),
    "min": ("_minutes", "_seconds", 60, 1),
    "h": ("_hours", "_seconds", 3600, 1),
    "%": ("_percent", "_ratio", 1, 100),
    "%/year": ("_percent", "_ratio", 1, 100),  # an annualized rate: 0.0287 a year
    "°C": ("_c", "_celsius", 1, 1),
    "B": ("_bytes", "_bytes", 1, 1),
    "B/s": ("_per_sec", "_per_second", 1, 1),
    "1/s": ("_per_sec", "_per_second", 1, 1),
    "us/s": ("_us_per_sec", "_seconds_per_second", 1, 1_000_000),
}
RENAMES = {
    "percentage_used": "life_used_percent",  # NVMe's name carries no unit suffix
    "afr_percent": "annualized_failure_percent",  # spelled out where no README is at hand
    # "_count" is a summary's or histogram's suffix (promtool refuses it on a gauge).
    "error_log_count": "error_log_errors",
    "self_test_failed_count": "self_tests_failed",
}
# collector -> what each run replaces (a series it no longer writes is gone; the histogram stays)
SNAPSHOTS = {"io": (IO.name,), "filesystems": (FS.name,), "jobs": (JOB.name,),
             "latency": (LATENCY.name, PROCESS_LATENCY.name, CGROUP_LATENCY.name)}  # fmt: skip
SNAPSHOT_OF = {name: names for names in SNAPSHOTS.values() for name in names}
LABEL_RENAMES = {(JOB.name, "job"): "training_job"}  # Prometheus's own `job` is the scrape's
LABEL_NAME = re.compile(r"(?!__)[a-zA-Z_][a-zA-Z0-9_]*")
CACHE_LIMIT = 50_000


@dataclass(frozen=True)
class Family:
    """One metric family: how one schema field is exposed."""

    measurement: str
    field: str
    name: str
    type: str  # counter | gauge
    help: str
    multiply: int = 1
    divide: int = 1
    info: bool = False  # a string field: the text is label `field`, the value 1

    @property
    def head(self) -> str:
        text = self.help.replace("\\", "\\\\").replace("\n", "\\n")
        return f"# HELP {self.name} {text}\n# TYPE {self.name} {self.type}"

    def value(self, value: FieldValue) -> str | None:
        """Sample text of a numeric field value, in the family's unit; None if unwritable."""
        if isinstance(value, bool):
            return "1" if value else "0"
        if isinstance(value, str):
            return None
        scaled = value * self.multiply
        try:
            if self.divide != 1:
                scaled /= self.divide
            finite = math.isfinite(scaled)
        except OverflowError:  # an integer too large for a float
            return None
        if not finite:
            return None
        return str(scaled) if isinstance(scaled, int) else repr(scaled)


def family(spec: MeasurementSpec, field: FieldSpec) -> Family:
    """The naming function: the Prometheus family for one schema field."""
    base, multiply, divide, note = RENAMES.get(field.name, field.name), 1, 1, ""
    if field.unit in UNITS:
        suffix, prometheus_suffix, multiply, divide = UNITS[field.unit]
        base = (base[: -len(suffix)] if base.endswith(suffix) else base) + prometheus_suffix
        if multiply != 1 or divide != 1:
            note = f", {field.unit} x {multiply}" if multiply != 1 else f", {field.unit} / {divide}"
    name = f"{spec.name}_{base}"  # the schema's names all start with diskprobe_
    if field.type == "str":
        help_ = f"{field.description} (field {field.name}, as label {field.name}; value 1)"
        return Family(spec.name, field.name, f"{name}_info", "gauge", help_, info=True)
    if field.type == "bool":
        note = "; 1 true, 0 false"
    help_ = f"{field.description} (field {field.name}{note})"
    if field.kind == COUNTER:
        return Family(spec.name, field.name, f"{name}_total", "counter", help_, multiply, divide)
    name = name[: -len("_total")] if name.endswith("_total") else name
    return Family(spec.name, field.name, name, "gauge", help_, multiply, divide)


FAMILIES: dict[str, tuple[Family, ...]] = {
    spec.name: tuple(family(spec, field) for field in spec.fields) for spec in MEASUREMENTS
}


def render_table() -> str:
    """The name mapping as a markdown table (telegraf/prometheus.md; a test keeps it equal)."""
    lines = [
        "| measurement | field | unit | Prometheus name | type | value |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for spec in MEASUREMENTS:
        for fam, field in zip(FAMILIES[spec.name], spec.fields):
            if (spec.name, field.name) in histogram.FIELDS:
                lines.append(histogram.table_row(spec.name, field))
                continue
            if fam.info:
                value = f'1, label `{field.name}="..."`'
            elif field.type == "bool":
                value = "1 / 0"
            elif fam.multiply != 1:
                value = f"x {fam.multiply}"
            else:
                value = f"/ {fam.divide}" if fam.divide != 1 else "as is"
            lines.append(
                f"| `{spec.name}` | `{field.name}` | {field.unit} | `{fam.name}` "
                f"| {fam.type} | {value} |"
            )
    return "\n".join(lines) + "\n"


def escape_label_value(text: str) -> str:
    """Valid UTF-8 one-to-one (serializers/text.py), then the format's own escapes."""
    text = system_text(text)
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class _Series(NamedTuple):
    seen: float
    metric: Metric
    labels: str  # rendered tags, without braces


class PrometheusSerializer:
    """Serializes the latest point of every live series; see the module docstring."""

    def __init__(
        self, stale_after: float = STALE_AFTER, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.stale_after = stale_after
        self._clock = clock
        self._series: dict[str, dict[tuple[tuple[str, str], ...], _Series]] = {}
        self._escaped: dict[str, str] = {}

    def _label(self, name: str, value: str) -> str:
        escaped = self._escaped.get(value)
        if escaped is None:
            escaped = self._escaped[value] = escape_label_value(value)
        return f'{name}="{escaped}"'

    def serialize(self, metrics: Iterable[Metric]) -> str:
        now = self._clock()
        batch: dict[str, dict[tuple[tuple[str, str], ...], _Series]] = {}
        replaced: set[str] = set()
        for metric in metrics:
            if metric.measurement not in FAMILIES:
                continue
            collector = metric.tags.get("collector", "")
            if metric.measurement == AGENT.name and collector in SNAPSHOTS:
                replaced.update(SNAPSHOTS[collector])
            tags = tuple(sorted(
                (LABEL_RENAMES.get((metric.measurement, k), k), v)
                for k, v in metric.tags.items() if v and LABEL_NAME.fullmatch(k)
            ))  # fmt: skip
            labels = ",".join(self._label(k, v) for k, v in tags)
            batch.setdefault(metric.measurement, {})[tags] = _Series(now, metric, labels)
        for name in list(batch.keys() & SNAPSHOT_OF.keys()):
            replaced.update(SNAPSHOT_OF[name])
        for name in replaced:
            self._series[name] = {}
        for name, series in batch.items():
            self._series.setdefault(name, {}).update(series)
        for series in self._series.values():
            for key in [key for key, item in series.items() if now - item.seen > self.stale_after]:
                del series[key]
        if len(self._escaped) > CACHE_LIMIT:
            self._escaped.clear()
        return self._render()

    def _render(self) -> str:
        out: list[str] = []
        for spec in MEASUREMENTS:
            series = self._series.get(spec.name)
            if not series:
                continue
            if spec.name == LATENCY_BUCKET.name:
                out += histogram.render(series.values(), self._label)
            for fam in FAMILIES[spec.name]:
                if (spec.name, fam.field) in histogram.FIELDS:
                    continue
                lines = []
                for item in series.values():
                    value = item.metric.fields.get(fam.field)
                    if value is None:
                        continue
                    if fam.info:
                        if isinstance(value, str):
                            label = self._label(fam.field, value)
                            labels = f"{item.labels},{label}" if item.labels else label
                            lines.append(f"{fam.name}{{{labels}}} 1")
                    elif (text := fam.value(value)) is not None:
                        labels = f"{{{item.labels}}}" if item.labels else ""
                        lines.append(f"{fam.name}{labels} {text}")
                if lines:
                    out += [fam.head, *lines]
        return "\n".join(out) + "\n" if out else ""
