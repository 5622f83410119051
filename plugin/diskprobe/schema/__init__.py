"""The metric schema as data: every measurement, tag and field, with type, unit and meaning.

Tests hold emitted metrics, the README's metric overview, docs/metrics.md and the dashboards
to it.
"""

from __future__ import annotations

from diskprobe.schema.agent import AGENT
from diskprobe.schema.cgroup_io import CGROUP_IO
from diskprobe.schema.fs import FS
from diskprobe.schema.io import IO
from diskprobe.schema.job import JOB
from diskprobe.schema.latency import CGROUP_LATENCY, LATENCY, LATENCY_BUCKET, PROCESS_LATENCY
from diskprobe.schema.pressure import PRESSURE
from diskprobe.schema.process_io import PROCESS_IO
from diskprobe.schema.smart import SMART, SMART_ATTR
from diskprobe.schema.training import TRAINING
from diskprobe.schema.types import (
    COUNTER,
    FIELD_TYPES,
    GAUGE,
    MEASUREMENT_PREFIX,
    FieldSpec,
    MeasurementSpec,
    TagSpec,
)

__all__ = [
    "AGENT",
    "CGROUP_IO",
    "CGROUP_LATENCY",
    "COUNTER",
    "FIELD_TYPES",
    "FS",
    "GAUGE",
    "IO",
    "JOB",
    "LATENCY",
    "LATENCY_BUCKET",
    "MEASUREMENTS",
    "MEASUREMENT_PREFIX",
    "PRESSURE",
    "PROCESS_IO",
    "PROCESS_LATENCY",
    "SMART",
    "SMART_ATTR",
    "TRAINING",
    "FieldSpec",
    "MeasurementSpec",
    "TagSpec",
    "measurement",
    "render_markdown",
]

MEASUREMENTS: tuple[MeasurementSpec, ...] = (
    IO,
    FS,
    SMART,
    SMART_ATTR,
    PRESSURE,
    PROCESS_IO,
    CGROUP_IO,
    LATENCY,
    LATENCY_BUCKET,
    PROCESS_LATENCY,
    CGROUP_LATENCY,
    JOB,
    TRAINING,
    AGENT,
)
_BY_NAME = {spec.name: spec for spec in MEASUREMENTS}


def measurement(name: str) -> MeasurementSpec:
    """The spec of measurement `name`; KeyError if the schema has none."""
    return _BY_NAME[name]


def render_markdown() -> str:
    """docs/metrics.md's field tables, generated from the schema."""
    lines: list[str] = []
    for spec in MEASUREMENTS:
        lines += [f"### `{spec.name}`", "", spec.description, "", "Tags:", ""]
        lines += [f"- `{tag.name}`: {tag.description}" for tag in spec.tags]
        lines += ["", "| field | type | unit | description |", "| --- | --- | --- | --- |"]
        lines += [f"| `{f.name}` | {f.type} | {f.unit} | {f.description} |" for f in spec.fields]
        lines.append("")
    return "\n".join(lines)
