"""The latency histogram in Prometheus's own form: diskprobe_latency_bucket's points (`total`:
requests up to `le` since start, and `sum_sec` on the +Inf point) become one histogram family,

  # TYPE diskprobe_latency_seconds histogram
  diskprobe_latency_seconds_bucket{device="nvme0n1",op="read",le="0.0005"} 812
  diskprobe_latency_seconds_bucket{device="nvme0n1",op="read",le="+Inf"} 1024
  diskprobe_latency_seconds_sum{device="nvme0n1",op="read"} 0.5123
  diskprobe_latency_seconds_count{device="nvme0n1",op="read"} 1024

cumulative since start. A bucket that got no point lately (nothing at or below it moved) keeps
its last total; a bound never seen for a device-operation takes the total below it, so every
series has every bound, ascending, as histogram_quantile() wants them.
"""

from __future__ import annotations

import math
from typing import Callable, Iterable, Protocol

from diskprobe.metric import Metric
from diskprobe.schema.latency import LATENCY_BUCKET
from diskprobe.schema.types import FieldSpec

NAME = "diskprobe_latency_seconds"
HEAD = (f"# HELP {NAME} Block request latency from its start to its completion (diskprobe "
        f"latency, cumulative since start; {LATENCY_BUCKET.name} total and sum_sec)\n"
        f"# TYPE {NAME} histogram")  # fmt: skip
# In the histogram, not as families of their own.
FIELDS = frozenset((LATENCY_BUCKET.name, field) for field in ("count", "total", "sum_sec"))


class Series(Protocol):
    @property
    def metric(self) -> Metric: ...

    @property
    def labels(self) -> str: ...  # rendered tags, without braces


def _bound(le: str) -> float:
    try:
        return math.inf if le == "+Inf" else float(le)
    except ValueError:
        return math.nan


Label = Callable[[str, str], str]  # (name, value) -> name="escaped value"


def render(buckets: Iterable[Series], label: Label) -> list[str]:
    """The family's lines, or [] without a bucket point."""
    groups: dict[tuple[str, str], dict[str, int]] = {}
    labels: dict[tuple[str, str], str] = {}
    sums: dict[tuple[str, str], object] = {}
    for item in buckets:
        tags, total = item.metric.tags, item.metric.fields.get("total")
        if not isinstance(total, int) or "le" not in tags:
            continue
        key = (tags.get("device", ""), tags.get("op", ""))
        groups.setdefault(key, {})[tags["le"]] = total
        labels[key] = ",".join(part for part in item.labels.split(",")
                               if not part.startswith("le="))  # fmt: skip
        if tags["le"] == "+Inf":
            sums[key] = item.metric.fields.get("sum_sec")
    bounds = sorted({le for group in groups.values() for le in group}, key=_bound)
    lines: list[str] = []
    for key, group in sorted(groups.items()):
        lines += _series(labels[key], group, bounds, sums.get(key), label)
    return [HEAD, *lines] if lines else []


def _series(labels: str, group: dict[str, int], bounds: list[str], summed: object,
            label: Label) -> list[str]:  # fmt: skip
    lines, carried = [], 0
    for le in [*(b for b in bounds if b != "+Inf"), "+Inf"]:
        carried = max(carried, group.get(le, carried))
        lines.append(f"{NAME}_bucket{{{labels},{label('le', le)}}} {carried}")
    if isinstance(summed, float) and math.isfinite(summed):
        lines.append(f"{NAME}_sum{{{labels}}} {summed!r}")
    lines.append(f"{NAME}_count{{{labels}}} {carried}")
    return lines


def table_row(measurement: str, field: FieldSpec) -> str:
    """telegraf/prometheus.md's row of a field the histogram carries."""
    names = {"total": (f"`{NAME}_bucket` (`le`), `{NAME}_count` (+Inf)", "counter"),
             "sum_sec": (f"`{NAME}_sum` (from the +Inf point)", "counter"),
             "count": ("none: the interval's count, for InfluxDB's heatmap", "")}  # fmt: skip
    name, kind = names[field.name]
    return (f"| `{measurement}` | `{field.name}` | {field.unit} | {name} | histogram "
            f"{kind} | as is |").replace("histogram  |", "|")
