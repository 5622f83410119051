"""diskprobe health: SMART verdict history, growing defect counters, NVMe wear, temperatures."""

from __future__ import annotations

from dashgen.build import LAST_READ_RANGE, series, table, where_tag
from dashgen.model import Dashboard, Panel, Variable
from dashgen.refs import SMART

FILTERS = ("host", "serial")
BY = ("host", "serial")
NVME = (where_tag(SMART, "protocol", "nvme"),)


def _now() -> Panel:
    f = SMART.f
    target, columns = table(
        SMART,
        (
            ("last", f("verdict_code"), "", "code"),
            ("last", f("verdict"), "", "verdict"),
            ("last", f("verdict_reasons"), "", "reasons"),
            ("last", f("reallocated_sectors"), "", "reallocated"),
            ("last", f("pending_sectors"), "", "pending"),
            ("last", f("percentage_used"), "", "NVMe used"),
            ("last", f("temperature_c"), "", "temperature"),
        ),
        by=("host", "serial", "device", "model", "protocol", "media"),
        filters=FILTERS,
    )
    return Panel(
        title="Drives now, worst first",
        description="The last SMART read in the last day of each drive; verdict_code 2 fail, "
        "1 warn, 0 ok.",
        kind="table",
        targets=(target,),
        width=24,
        height=9,
        columns=columns,
        sort_by="verdict_code",
        sort_desc=True,
        verdict_mapping=True,
        time_from=LAST_READ_RANGE,
    )


def _history() -> Panel:
    return Panel(
        title="Verdict history",
        description="verdict_code per drive over time (0 ok, 1 warn, 2 fail), one row per serial.",
        kind="state-timeline",
        targets=(
            series(SMART, "last", ((SMART.f("verdict_code"), "verdict"),), BY, FILTERS,
                   fill="previous", legend="$tag_host $tag_serial"),
        ),
        width=24,
        verdict_mapping=True,
    )


def _counter(name: str, title: str, description: str) -> Panel:
    return Panel(
        title=title,
        description=description,
        kind="timeseries",
        targets=(series(SMART, "max", ((SMART.f(name), ""),), BY, FILTERS,
                        legend="$tag_host $tag_serial"),),
    )


def _nvme() -> tuple[Panel, ...]:
    f = SMART.f
    return (
        Panel(
            title="NVMe wear (percentage_used)",
            description="The drive's estimate of its rated endurance used; 100 is end of life.",
            kind="timeseries",
            targets=(series(SMART, "last", ((f("percentage_used"), ""),), BY, FILTERS,
                            where=NVME, legend="$tag_host $tag_serial"),),
        ),
        Panel(
            title="NVMe available spare",
            description=(
                "Spare capacity left, and the threshold below which the drive itself "
                "raises critical_warning bit 0."
            ),
            kind="timeseries",
            targets=(series(SMART, "last", ((f("available_spare_percent"), "spare"),
                                            (f("available_spare_threshold_percent"),
                                             "threshold")),
                            BY, FILTERS, where=NVME),),
        ),
    )


def health() -> Dashboard:
    return Dashboard(
        slug="diskprobe-health",
        title="diskprobe: drive health",
        description=f"SMART and NVMe health from {SMART.name}, per drive serial.",
        # Opens on every host (Grafana's "All", Chronograf's `.*`): the worst drive of any
        # host heads "Drives now".
        variables=(Variable("host", SMART.name, chronograf_all=True),
                   Variable("serial", SMART.name, ("host",))),
        panels=(
            _now(),
            _history(),
            _counter("reallocated_sectors", "Reallocated sectors",
                     "ATA 5 Reallocated_Sector_Ct: any growth is a drive remapping bad media."),
            _counter("pending_sectors", "Pending sectors",
                     "ATA 197 Current_Pending_Sector: unreadable sectors waiting for a rewrite."),
            *_nvme(),
            Panel(
                title="Temperature",
                description="Drive temperature at each SMART read.",
                kind="timeseries",
                targets=(series(SMART, "last", ((SMART.f("temperature_c"), ""),), BY, FILTERS,
                                legend="$tag_host $tag_serial"),),
                width=24,
            ),
        ),
        time_from="now-7d",
        refresh="5m",
    )
