"""Measurements, fields and tags, checked against diskprobe's schema when a query is built.

`IO.f("util_percent")` returns the field (name and schema unit) or raises `SchemaError`:
a field renamed or removed in `plugin/diskprobe/schema/` breaks generation, not a dashboard.
"""

from __future__ import annotations

from dataclasses import dataclass

from diskprobe import schema
from diskprobe.schema import MEASUREMENTS

# Telegraf adds `host` to every point it receives from an input (`omit_hostname = false`).
TELEGRAF_TAGS = ("host",)


class SchemaError(KeyError):
    """A query names a measurement, field or tag the schema does not have."""


@dataclass(frozen=True)
class External:
    """A measurement diskprobe does not write but the dashboards read (from Telegraf)."""

    name: str
    tags: tuple[str, ...]
    fields: tuple[tuple[str, str], ...]  # (name, unit in the schema's notation)


# Telegraf's inputs.nvidia_smi (plugins/inputs/nvidia_smi): one point per GPU.
NVIDIA_SMI = External(
    name="nvidia_smi",
    tags=("host", "index", "name", "uuid", "pstate", "compute_mode"),
    fields=(("utilization_gpu", "%"), ("utilization_memory", "%"), ("temperature_gpu", "°C")),
)
EXTERNAL: dict[str, External] = {NVIDIA_SMI.name: NVIDIA_SMI}


def quote(name: str) -> str:
    """An InfluxQL identifier in double quotes."""
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True)
class Field:
    measurement: str
    name: str
    unit: str

    def __str__(self) -> str:
        return quote(self.name)


class Measurement:
    """A measurement of diskprobe's schema (or an allowed external one)."""

    def __init__(self, name: str) -> None:
        self.name = name
        spec = next((m for m in MEASUREMENTS if m.name == name), None)
        if spec is not None:
            self._fields = {f.name: f.unit for f in spec.fields}
            self._tags = {t.name for t in spec.tags} | set(TELEGRAF_TAGS)
        elif name in EXTERNAL:
            self._fields = dict(EXTERNAL[name].fields)
            self._tags = set(EXTERNAL[name].tags)
        else:
            raise SchemaError(f"measurement {name!r} is not in diskprobe's schema")

    def f(self, name: str) -> Field:
        """The field `name`; SchemaError if the measurement has no such field."""
        if name not in self._fields:
            raise SchemaError(f"{self.name} has no field {name!r}")
        return Field(self.name, name, self._fields[name])

    def tag(self, name: str) -> str:
        """The tag `name`, quoted; SchemaError if the measurement has no such tag."""
        if name not in self._tags:
            raise SchemaError(f"{self.name} has no tag {name!r}")
        return quote(name)

    def has_tag(self, name: str) -> bool:
        return name in self._tags


def same_unit(*fields: Field) -> str:
    """The one unit all `fields` share (a panel axis has one unit)."""
    units = {f.unit for f in fields}
    if len(units) != 1:
        raise ValueError(f"fields with different units on one axis: {fields}")
    return units.pop()


# Schema unit -> Grafana unit id (public/app/core/utils/... `getValueFormats`).
GRAFANA_UNITS = {
    "1/s": "iops",
    "B/s": "Bps",
    "B": "bytes",
    "ms": "ms",
    "s": "s",
    "%": "percent",
    "°C": "celsius",
    "h": "h",
    "min": "m",
    "us/s": "µs",  # stall microseconds per second of wall time
    "d": "d",  # days: Grafana scales them to weeks and years
    "%/year": "percent",  # afr_percent: the column title says "per year"
    "epoch_ms": "dateTimeAsIso",  # dashgen's own: a Unix time in ms (a `since` column)
}


def grafana_unit(unit: str) -> str:
    """Counts, sectors, requests, bitmasks and unitless values show as plain numbers."""
    return GRAFANA_UNITS.get(unit, "none")


# Schema unit -> Chronograf axis (suffix, base): base "2" formats bytes with binary prefixes.
CHRONOGRAF_AXES = {
    "1/s": ("/s", "10"),
    "B/s": ("B/s", "2"),
    "B": ("B", "2"),
    "ms": (" ms", "10"),
    "s": (" s", "10"),
    "%": ("%", "10"),
    "°C": (" °C", "10"),
    "h": (" h", "10"),
    "min": (" min", "10"),
    "us/s": (" µs/s", "10"),
    "d": (" d", "10"),
    "%/year": ("%/yr", "10"),
    "1/d": ("/d", "10"),  # the *_per_day growth rates
    "ratio": ("x", "10"),  # slowdown_ratio: times the peers' await
}


def chronograf_axis(unit: str) -> tuple[str, str]:
    return CHRONOGRAF_AXES.get(unit, ("", "10"))


IO = Measurement(schema.IO.name)
FS = Measurement(schema.FS.name)
SMART = Measurement(schema.SMART.name)
AGENT = Measurement(schema.AGENT.name)
PRESSURE = Measurement(schema.PRESSURE.name)
PROCESS_IO = Measurement(schema.PROCESS_IO.name)
CGROUP_IO = Measurement(schema.CGROUP_IO.name)
TRAINING = Measurement(schema.TRAINING.name)  # written by the training job, not the agent
JOB = Measurement(schema.JOB.name)  # the agent's own watch of every training job
LATENCY = Measurement(schema.LATENCY.name)  # [latency]: block request latency (eBPF)
LATENCY_BUCKET = Measurement(schema.LATENCY_BUCKET.name)
PROCESS_LATENCY = Measurement(schema.PROCESS_LATENCY.name)
CGROUP_LATENCY = Measurement(schema.CGROUP_LATENCY.name)
GPU = Measurement(NVIDIA_SMI.name)
