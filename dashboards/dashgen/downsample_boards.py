"""diskprobe history: a year of the downsampled series (retention policy diskprobe_1y).

A board of its own rather than a retention-policy switch on the others: the downsampled
series are not the raw ones (a 5-minute mean and a `_max`, a daily SMART maximum, fail-slow as
counted intervals), so its panels ask what a year can answer: the worst verdict per day, the
defect counters' daily maxima, %util's mean and peaks, how long each device was fail-slow,
each volume's fill rate and soonest forecast. Every field it reads is checked against what
the continuous queries keep (downsample.kept_fields).
"""

from __future__ import annotations

from dashgen.build import series, table
from dashgen.downsample import LONG_RP, kept_fields
from dashgen.model import Dashboard, Panel, Variable
from dashgen.refs import FS, IO, SMART, Field, Measurement


def kept(measurement: Measurement, name: str) -> Field:
    """Field `name` of `measurement` in the long retention policy, with its raw field's unit."""
    raw = kept_fields(measurement.name).get(name)
    if raw is None:
        raise KeyError(f"{measurement.name}: {name!r} is not kept in {LONG_RP}")
    return Field(measurement.name, name, measurement.f(raw).unit)


def _verdicts() -> Panel:
    return Panel(
        title="Worst verdict per day",
        description="Each drive's worst SMART verdict_code of the day (0 ok, 1 warn, 2 fail).",
        kind="state-timeline",
        targets=(series(SMART, "max", ((kept(SMART, "verdict_code"), "verdict"),),
                        ("host", "serial"), ("host", "serial"), fill="none",
                        legend="$tag_host $tag_serial"),),
        width=24,
        verdict_mapping=True,
    )


def _defects() -> Panel:
    fields = ((kept(SMART, "reallocated_sectors"), "reallocated"),
              (kept(SMART, "pending_sectors"), "pending"))
    return Panel(
        title="Reallocated and pending sectors, daily maximum",
        description="The defect counters' daily maxima: a step up is new damage.",
        kind="timeseries",
        targets=(series(SMART, "max", fields, ("host", "serial"), ("host", "serial")),),
    )


def _util() -> Panel:
    mean = series(IO, "mean", ((kept(IO, "util_percent"), "mean"),), ("host", "device"),
                  ("host", "device"))
    peak = series(IO, "max", ((kept(IO, "util_percent_max"), "peak"),), ("host", "device"),
                  ("host", "device"))
    return Panel(
        title="%util: mean and peak",
        description="The mean of the 5-minute means, and the highest 10 s sample in each bucket.",
        kind="timeseries",
        targets=(mean, peak),
    )


def _fail_slow() -> Panel:
    target, columns = table(
        IO, (("sum", kept(IO, "fail_slow_intervals"), "fail_slow_intervals", "fail-slow intervals"),
             ("max", kept(IO, "slowdown_ratio_max"), "slowdown_ratio_max", "worst slowdown")),
        by=("host", "device", "model", "serial"), filters=("host", "device"),
        where=('"fail_slow_intervals" > 0',))
    return Panel(
        title="Devices fail-slow in the range",
        description="Collection intervals each device was judged fail-slow, over the range.",
        kind="table", targets=(target,), columns=columns, width=12,
        sort_by="fail_slow_intervals", sort_desc=True)


def _volumes() -> Panel:
    target, columns = table(
        FS, (("mean", kept(FS, "fill_rate_bytes_per_sec"), "", "fill rate"),
             ("min", kept(FS, "time_to_full_sec_min"), "time_to_full_sec", "soonest full"),
             ("max", kept(FS, "used_percent_max"), "used_percent", "most used")),
        by=("host", "path"), filters=("host",))
    return Panel(
        title="Volumes: fill rate and soonest time to full",
        description="Mean hourly fill rate, the soonest hourly forecast and the fullest hour.",
        kind="table", targets=(target,), columns=columns, width=12,
        sort_by="time_to_full_sec")


def history() -> Dashboard:
    return Dashboard(
        slug="diskprobe-history",
        title="diskprobe history (a year, downsampled)",
        description=f"Reads the downsampled retention policy {LONG_RP}: "
                    "dashboards/downsampling/influxdb-1x.iql creates it.",
        variables=(Variable("host", SMART.name, offers_all=False),
                   Variable("serial", SMART.name, ("host",)),
                   Variable("device", IO.name, ("host",))),
        panels=(_verdicts(), _defects(), _util(), _fail_slow(), _volumes()),
        time_from="now-365d",
        refresh="1h",
    )
