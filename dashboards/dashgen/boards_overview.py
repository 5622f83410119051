"""diskprobe overview: drive verdicts worst first, volumes soonest full first, busiest disks."""

from __future__ import annotations

from dashgen.boards_health import last_reads_table
from dashgen.build import series, table
from dashgen.model import Dashboard, Panel, Variable
from dashgen.refs import AGENT, FS, IO

HOST = ("host",)


def _health() -> Panel:
    return last_reads_table(
        "Drive health on $host, worst first",
        "Last SMART verdict in the last day of every drive (verdict_code 2 fail, 1 warn, "
        "0 ok), sorted worst first; the reasons name the counters behind it (docs/smart.md: "
        "The verdict).",
        (("verdict_code", "code"), ("verdict", "verdict"), ("verdict_reasons", "reasons"),
         ("temperature_c", "temperature"), ("power_on_hours", "power-on")),
        by=("host", "device", "model", "serial"),
        filters=HOST,
        repeat="host",
    )


def _volumes() -> Panel:
    target, columns = table(
        FS,
        (
            ("last", FS.f("time_to_full_sec"), "", "time to full"),
            ("last", FS.f("used_percent"), "", "used"),
            ("last", FS.f("avail_bytes"), "", "available"),
            ("last", FS.f("fill_rate_bytes_per_sec"), "", "fill rate"),
        ),
        by=("host", "path", "device", "fstype"),
        filters=("host", "path"),
    )
    return Panel(
        title="Volumes, soonest full first",
        description=(
            "time_to_full_sec is diskprobe's forecast from the last forecast_window (6 h) of "
            "usage; empty while a volume is flat, shrinking or noisy."
        ),
        kind="table",
        targets=(target,),
        width=24,
        height=9,
        columns=columns,
        sort_by="time_to_full_sec",
    )


def _busiest() -> Panel:
    target, columns = table(
        IO,
        (
            ("mean", IO.f("util_percent"), "", "%util"),
            ("mean", IO.f("await_ms"), "", "await"),
            ("mean", IO.f("queue_size"), "", "aqu-sz"),
        ),
        by=("host", "device"),
        filters=HOST,
    )
    return Panel(
        title="Busiest devices",
        description=(
            "Mean %util, await and queue size over the time range. On NVMe and RAID %util "
            "only says a request was in flight: read it together with await."
        ),
        kind="table",
        targets=(target,),
        width=8,
        height=9,
        columns=columns,
        sort_by="util_percent",
        sort_desc=True,
    )


def _per_device(name: str, title: str, description: str) -> Panel:
    """The mean of the diskprobe_io field `name` over time, a line per device."""
    return Panel(
        title=title,
        description=description,
        kind="timeseries",
        targets=(
            series(IO, "mean", ((IO.f(name), ""),), ("host", "device"), HOST,
                   legend="$tag_host $tag_device"),
        ),
        width=8,
        height=9,
    )


def overview() -> Dashboard:
    return Dashboard(
        slug="diskprobe-overview",
        title="diskprobe: overview",
        description="Drive verdicts, volumes that fill, busiest disks, per host.",
        variables=(Variable("host", AGENT.name, offers_all=False),
                   Variable("path", FS.name, ("host",))),
        panels=(
            _health(), _volumes(), _busiest(),
            _per_device("util_percent", "%util per device",
                        "Share of time with I/O in flight (iostat %util)."),
            _per_device("await_ms", "await per device",
                        "Average time per request, queue plus service (iostat await)."),
        ),
    )
