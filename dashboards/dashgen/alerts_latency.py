"""Device latency p99 high: a device whose 99th percentile request latency of one operation
stayed above that operation's limit for 15 minutes while it was busy ([latency],
diskprobe_latency). One alert per operation, each with its limit (P99_LIMIT_MS: change it and
regenerate); discards are not alerted.

Busy: an interval counts only with at least MIN_REQUESTS requests, so an idle disk's one slow
request (its whole p99) never pages. Sustained: per minute the median p99 of its busy
intervals (one odd interval neither makes nor breaks a minute), and the alert's value is the
lowest of those over the window, for devices busy in at least MIN_MINUTES of its minutes: a
device busy for the last 6 minutes only, or that went quiet 7 minutes ago, does not fire.

InfluxQL, in three steps (the window holds the whole condition, as every alert here): the
minutes, their lowest median and their count, the devices with enough minutes. Like the other
TICKscripts on a subquery they meet Kapacitor's known limit (influxdata/kapacitor#1198,
dashboards/README.md); the Grafana rules do not. PromQL samples the same minutes through a
1m subquery; in diskprobe's own Prometheus format a minute counts only while the histogram's
count grew in the last 2 minutes: the format drops an idle device's gauges at the collector's
next run, but a textfile node_exporter still serves after diskprobe stopped repeats the last
busy, high p99.
"""

from __future__ import annotations

from dashgen.build import tags, where_tag
from dashgen.model import WARN, Alert, Level
from dashgen.prom_flavor import Flavor
from dashgen.query import Select
from dashgen.refs import LATENCY, quote
from diskprobe.serializers.prometheus_histogram import NAME as HISTOGRAM

WINDOW = "15m"
STEP = "1m"
MIN_REQUESTS = 100  # an interval with fewer is left out: its p99 is one or two requests
MIN_MINUTES = 10  # of the window's 15 (16 partial) minutes, with at least one busy interval
FRESH = "2m"  # Prometheus format: the histogram's count grew within this (the gauges stay)
# The limits per operation, ms. Why these (docs/dashboards.md): a random read takes 5 to 15 ms
# on a hard drive and well under 1 ms on an NVMe SSD, so a p99 of 100 ms is a queue or a sick
# device on any of them; a write mostly lands in the drive's cache and waits when that cache
# drains; a flush waits for the whole cache to reach the media. A fleet of NVMe only can
# lower them (10, 25, 50), one of slow network disks raise them.
P99_LIMIT_MS = {"read": 100.0, "write": 250.0, "flush": 500.0}
WHY_OP = {
    "read": "A reader waits for every read it issues: a p99 this high stalls data loaders, "
    "databases and page faults one request in a hundred, over and over.",
    "write": "Writes mostly land in the drive's or controller's cache and return at once; "
    "they wait this long when the cache is full and drains to the media, or behind flushes, "
    "and every fsync waits for them.",
    "flush": "A flush returns when the drive's whole volatile write cache is on the media; "
    "fsync-heavy programs (databases, checkpoint writers, journals) wait on each one.",
}
BY = ("host", "device", "op")


def _query(op: str) -> Select:
    """Per minute the median p99 of the busy intervals; per device the lowest minute and the
    count of minutes; the devices with at least MIN_MINUTES."""
    minutes = Select(
        columns=f"median({LATENCY.f('p99_ms')}) AS {quote('p99')}", measurement=LATENCY.name,
        where=(f"{LATENCY.f('requests')} >= {MIN_REQUESTS}", where_tag(LATENCY, "op", op)),
        group_tags=tags(LATENCY, *BY), group_time=STEP, fill="none")  # fmt: skip
    per_device = Select(columns='min("p99") AS "p99", count("p99") AS "minutes"', source=minutes,
                        group_tags=BY)  # fmt: skip
    return Select(columns='"p99" AS "value"', source=per_device,
                  where=(f'"minutes" >= {MIN_MINUTES}',), group_tags=BY)


def _alert(op: str, limit: float) -> Alert:
    return Alert(
        uid=f"diskprobe-latency-p99-{op}",
        group="diskprobe-io",
        title=f"Device latency p99 high ({op})",
        query=_query(op),
        window=WINDOW,
        levels=(Level(WARN, "gt", (limit,)),),
        pending="0s",
        every="1m",
        measure=f"p99_ms of a device's {op}s (host, device, op) over 15 min: per minute the "
        f"median of its intervals with at least {MIN_REQUESTS} requests, the lowest minute, "
        f"for devices with such intervals in at least {MIN_MINUTES} minutes",
        summary=f"{{host}}: {{device}} {op} p99 above {limit:g} ms for 15 minutes (at least "
        "{value} ms in every busy minute)",
        why=f"One {op} in a hundred took over {limit:g} ms, minute after minute, while the "
        f"device served at least {MIN_REQUESTS} {op}s an interval. {WHY_OP[op]} Quieter "
        "intervals are left out: on an idle disk one slow request is the whole p99.",
        runbook="Open the I/O dashboard for the host: the Request latency heatmap and "
        "Latency p50 and p99 for the device. The whole distribution moving up is a queue: "
        "%util, aqu-sz and Top processes by latency (or Pods and containers by latency) name "
        "who loads it; a tail with a fast p50 is the device or its path: compare Slowdown vs "
        "peers, read SMART and dmesg for resets and timeouts.",
    )


def latency_alerts() -> list[Alert]:
    return [_alert(op, limit) for op, limit in P99_LIMIT_MS.items()]


def promql_value(fl: Flavor, op: str) -> str:
    """The alert's value in PromQL (schema units), before the liveness gate: the lowest of
    the window's per-minute samples of p99 where the device was busy, where it was busy in at
    least MIN_MINUTES minutes."""
    match = f'{{op="{op}"}}'
    busy = (f"({fl.instant(LATENCY.name, 'p99_ms', match)}) and "
            f"({fl.metric(LATENCY.name, 'requests')}{match} >= {MIN_REQUESTS})")
    if fl.key == "prometheus":  # a device's gauges outlive its last requests there
        busy += f" and (increase({HISTOGRAM}_count{match}[{FRESH}]) > 0)"
    minutes = f"({busy})[{WINDOW}:{STEP}]"
    return f"min_over_time({minutes}) and count_over_time({minutes}) >= {MIN_MINUTES}"
