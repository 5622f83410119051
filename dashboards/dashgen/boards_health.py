"""diskprobe health: SMART verdict history, growing defect counters, NVMe wear, temperatures."""

from __future__ import annotations

from dashgen.build import LAST_READ_RANGE, series, table, where_tag
from dashgen.model import Dashboard, Panel, Variable
from dashgen.refs import SMART

FILTERS = ("host", "serial")
BY = ("host", "serial")
NVME = (where_tag(SMART, "protocol", "nvme"),)


def last_reads_table(title: str, description: str, fields: tuple[tuple[str, str], ...],
                     by: tuple[str, ...], filters: tuple[str, ...], repeat: str = "") -> Panel:
    """Each drive's last SMART read in the last day, worst verdict first: a column per
    (field, title) of `fields`, verdict_code among them."""
    target, columns = table(
        SMART, tuple(("last", SMART.f(name), "", heading) for name, heading in fields),
        by=by, filters=filters,
    )
    return Panel(
        title=title,
        description=description,
        kind="table",
        targets=(target,),
        width=24,
        height=9,
        columns=columns,
        sort_by="verdict_code",
        sort_desc=True,
        verdict_mapping=True,
        repeat=repeat,
        time_from=LAST_READ_RANGE,
    )


def _now() -> Panel:
    return last_reads_table(
        "Drives now, worst first",
        "The last SMART read in the last day of each drive; verdict_code 2 fail, 1 warn, 0 ok.",
        (("verdict_code", "code"), ("verdict", "verdict"), ("verdict_reasons", "reasons"),
         ("reallocated_sectors", "reallocated"), ("pending_sectors", "pending"),
         ("percentage_used", "NVMe used"), ("temperature_c", "temperature")),
        by=("host", "serial", "device", "model", "protocol", "media"),
        filters=FILTERS,
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


def _per_drive(function: str, name: str, title: str, description: str,
               where: tuple[str, ...] = (), width: int = 12) -> Panel:
    """`function` of the SMART field `name` over time, a line per drive."""
    return Panel(
        title=title,
        description=description,
        kind="timeseries",
        targets=(series(SMART, function, ((SMART.f(name), ""),), BY, FILTERS, where=where,
                        legend="$tag_host $tag_serial"),),
        width=width,
    )


def _spare() -> Panel:
    f = SMART.f
    return Panel(
        title="NVMe available spare",
        description=(
            "Spare capacity left, and the threshold below which the drive itself "
            "raises critical_warning bit 0."
        ),
        kind="timeseries",
        targets=(series(SMART, "last", ((f("available_spare_percent"), "spare"),
                                        (f("available_spare_threshold_percent"), "threshold")),
                        BY, FILTERS, where=NVME),),
    )


def _panels() -> tuple[Panel, ...]:
    return (
        _now(),
        _history(),
        _per_drive("max", "reallocated_sectors", "Reallocated sectors",
                   "ATA 5 Reallocated_Sector_Ct: any growth is a drive remapping bad media."),
        _per_drive("max", "pending_sectors", "Pending sectors",
                   "ATA 197 Current_Pending_Sector: unreadable sectors waiting for a rewrite."),
        _per_drive("last", "percentage_used", "NVMe wear (percentage_used)",
                   "The drive's estimate of its rated endurance used; 100 is end of life.",
                   where=NVME),
        _spare(),
        _per_drive("last", "temperature_c", "Temperature",
                   "Drive temperature at each SMART read.", width=24),
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
        panels=_panels(),
        time_from="now-7d",
        refresh="5m",
    )
