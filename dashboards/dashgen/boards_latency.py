"""Block request latency on the I/O board ([latency], off by default: docs/latency.md): a
heatmap of every request of the selected devices over time, each device's p50 and p99 per
operation, and who waited: the processes and the pods, containers or services by the latency
of the requests they submitted, beside "Who waits on disk" (processes.py).

The heatmap reads diskprobe_latency_bucket's `count` (the interval's requests in each bucket,
not cumulative over `le`) as Grafana's heatmap over InfluxDB wants it: one series per bucket,
named by its upper bound (`le`, seconds). Chronograf has no heatmap: its board has the
p50/p99 lines and a bar cell of the buckets of the last minute's intervals.
"""

from __future__ import annotations

from dashgen.build import agg, tags
from dashgen.model import Column, Panel, Target
from dashgen.query import AUTO, Select
from dashgen.refs import (
    CGROUP_LATENCY,
    LATENCY,
    LATENCY_BUCKET,
    PROCESS_LATENCY,
    quote,
    same_unit,
)

FILTERS = ("host", "device")
HEATMAP_STEP = "1m"  # a column of the heatmap: six of diskprobe's 10 s intervals, never 1.5
BAR_RANGE = "1m"  # Chronograf's bars: the last minute, one group of bars per interval
BAR_STEP = "10s"  # diskprobe's default interval
WHO = "the task that submitted each request (not the one running when it completed)"


def _buckets(group_time: str, fill: str) -> Select:
    count = LATENCY_BUCKET.f("count")
    return Select(columns=agg("sum", count, "requests"), measurement=LATENCY_BUCKET.name,
                  filters=tags(LATENCY_BUCKET, *FILTERS), group_tags=tags(LATENCY_BUCKET, "le"),
                  group_time=group_time, fill=fill)  # fmt: skip


def _bar_cell() -> Panel:
    return Panel(
        title="Latency buckets, last minute",
        description=(
            f"Requests per latency bucket ({LATENCY_BUCKET.name}.count, one bar per upper "
            f"bound `le` in seconds) of the selected devices in each {BAR_STEP} interval of "
            f"the last {BAR_RANGE}: the rightmost group is the last interval's histogram. "
            "Chronograf orders the bars by the bound's text (+Inf first, 10 before 2.5)."
        ),
        kind="bar",
        targets=(Target(_buckets(BAR_STEP, "none"), LATENCY_BUCKET.f("count").unit, "$tag_le"),),
        time_from=BAR_RANGE,
    )


def heatmap() -> Panel:
    """sum("count") per bucket and column: the buckets of a column add up to the requests of
    its intervals (diskprobe_latency.requests), whatever the devices and operations."""
    return Panel(
        title="Request latency heatmap",
        description=(
            f"Every block request of the selected devices (reads, writes, discards and "
            f"flushes), from {LATENCY_BUCKET.name}: per column ({HEATMAP_STEP} at least) the "
            "requests in each latency bucket (rows: upper bound `le`, seconds), timed in the "
            "kernel from the request's start to its completion. A band rising or a second band "
            "appearing is requests queueing or a device slowing; pick one device in `device` "
            "for its own. Needs [latency] enabled = true (docs/latency.md)."
        ),
        kind="heatmap",
        targets=(Target(_buckets(AUTO, "0"), LATENCY_BUCKET.f("count").unit, "$tag_le"),),
        min_interval=HEATMAP_STEP,
        rows_unit="s",  # `le`: seconds, as Prometheus writes a bucket's bound
        chronograf_cells=(_bar_cell(),),
    )


def percentiles() -> Panel:
    f = LATENCY.f
    p50, p99 = f("p50_ms"), f("p99_ms")
    by = tags(LATENCY, "host", "device", "op")
    select = Select(columns=", ".join((agg("mean", p50, "p50"), agg("max", p99, "p99"))),
                    measurement=LATENCY.name, filters=tags(LATENCY, *FILTERS), group_tags=by,
                    group_time=AUTO, fill="none")  # fmt: skip
    return Panel(
        title="Latency p50 and p99 per device",
        description=(
            f"Each device's median and 99th percentile latency per operation ({LATENCY.name}: "
            "from the kernel's histogram of the interval's requests, within 25 %). Zoomed out, "
            "a point is the mean p50 and the highest p99 of its intervals, so a spike stays "
            "visible. A p99 far above the p50 is a tail: a few requests wait behind a queue, "
            "a flush or a slow device; the alert Device latency p99 high judges it over 15 "
            "minutes of intervals with at least 100 requests."
        ),
        kind="timeseries",
        targets=(Target(select, same_unit(p50, p99), "$tag_host $tag_device $tag_op $col"),),
    )


def _waits(measurement: str) -> tuple[str, Column, Column]:
    """sum(wait_sec) and sum(requests) over the range, as columns."""
    wait, requests = CGROUP_LATENCY.f("wait_sec"), CGROUP_LATENCY.f("requests")
    if measurement == PROCESS_LATENCY.name:
        wait, requests = PROCESS_LATENCY.f("wait_sec"), PROCESS_LATENCY.f("requests")
    text = ", ".join((agg("sum", wait), agg("sum", requests)))
    return (text, Column(wait.name, wait.unit, "waited (s)"),
            Column(requests.name, requests.unit, "requests"))


def process_table() -> Panel:
    f = PROCESS_LATENCY.f
    text, wait, requests = _waits(PROCESS_LATENCY.name)
    mean = f"sum({f('wait_sec')}) / sum({f('requests')}) * 1000 AS {quote('mean_ms')}"
    select = Select(columns=f"{text}, {mean}", measurement=PROCESS_LATENCY.name,
                    filters=tags(PROCESS_LATENCY, *FILTERS),
                    group_tags=tags(PROCESS_LATENCY, "host", "process", "user", "device", "op"))
    return Panel(
        title="Top processes by latency",
        description=(
            f"The processes (name and user) by the seconds their block requests took, summed "
            f"over the time range ({PROCESS_LATENCY.name}.wait_sec, {WHO}), per device and "
            "operation, with their requests and mean latency. Each interval reports the top "
            "[latency] top_processes per device and operation, so a process counts in the "
            "intervals it was among them. Beside Who waits on disk: that table is time "
            "blocked per process from delay accounting, this one each request's own latency."
        ),
        kind="table",
        targets=(Target(select, wait.unit),),
        columns=(wait, requests, Column("mean_ms", f("mean_ms").unit, "mean")),
        sort_by=wait.name,
        sort_desc=True,
        height=9,
    )


def cgroup_table() -> Panel:
    f = CGROUP_LATENCY.f
    text, wait, requests = _waits(CGROUP_LATENCY.name)
    worst = ", ".join((agg("max", f("p99_ms")), agg("max", f("max_ms"))))
    select = Select(columns=f"{text}, {worst}", measurement=CGROUP_LATENCY.name,
                    filters=tags(CGROUP_LATENCY, *FILTERS),
                    group_tags=tags(CGROUP_LATENCY, "host", "pod_uid", "container_id", "unit",
                                    "cgroup", "device", "op"))  # fmt: skip
    return Panel(
        title="Pods and containers by latency",
        description=(
            f"The pods, containers and systemd services (cgroup v2) by the seconds their block "
            f"requests took, summed over the time range ({CGROUP_LATENCY.name}.wait_sec, by "
            f"{WHO}; buffered writes the kernel's writeback threads submit count as the root "
            "cgroup's), per device and operation, with their requests, their worst interval's "
            "p99 and their longest request. At most [latency] max_cgroups per device and "
            "operation and interval."
        ),
        kind="table",
        targets=(Target(select, wait.unit),),
        columns=(wait, requests, Column("p99_ms", f("p99_ms").unit, "worst p99"),
                 Column("max_ms", f("max_ms").unit, "longest")),
        sort_by=wait.name,
        sort_desc=True,
        height=9,
    )
