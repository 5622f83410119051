"""SMART alerts per drive (host, serial): defect counters that grew in a day, diskprobe's
verdict, and the NVMe controller's own warnings, wear and spare."""

from __future__ import annotations

from dashgen.build import alert_query, last_value
from dashgen.model import CRIT, WARN, Alert, Level
from dashgen.query import Select
from dashgen.refs import SMART

GROUP, EVERY = "diskprobe-smart", "5m"
DRIVE = ("host", "serial")  # the labels of a drive's alert


def _smart_last(field: str) -> Select:
    return last_value(SMART, SMART.f(field), DRIVE)


def _growth(field: str) -> Select:
    f = SMART.f(field)
    return alert_query(SMART, f"last({f}) - first({f})", DRIVE)


def _sector_growth_alerts() -> list[Alert]:
    """Reallocated and pending sectors that grew in the last 24 h: media being lost now."""
    return [
        Alert(
            uid="diskprobe-reallocated-growth",
            group=GROUP,
            title="Reallocated sectors grew",
            query=_growth("reallocated_sectors"),
            window="24h",
            levels=(Level(WARN, "gt", (0,)),),
            pending="0s",
            every=EVERY,
            measure="growth of reallocated_sectors per drive (serial) over 24 h: last - first",
            summary="{host}: drive {serial} reallocated {value} more sectors in the last 24 h",
            why="A drive remapping sectors is losing media; failure rates climb with the count "
            "(Backblaze: 5 Reallocated_Sector_Ct).",
            runbook="Check the drive's backups and RAID/ZFS redundancy now; run a long self-test "
            "(smartctl -t long) and plan a replacement if it keeps growing.",
        ),
        Alert(
            uid="diskprobe-pending-growth",
            group=GROUP,
            title="Pending sectors grew",
            query=_growth("pending_sectors"),
            window="24h",
            levels=(Level(WARN, "gt", (0,)),),
            pending="0s",
            every=EVERY,
            measure="growth of pending_sectors per drive over 24 h: last - first",
            summary="{host}: drive {serial} has {value} more pending (unreadable) sectors "
            "than 24 h ago",
            why="Pending sectors could not be read; the data on them is at risk until they are "
            "rewritten (Backblaze: 197 Current_Pending_Sector).",
            runbook="Find the files on the bad LBAs (smartctl -l selftest, badblocks -b 4096 on "
            "the range), restore them from backup, scrub the array; replace the drive if it "
            "grows again.",
        ),
    ]


def _verdict_alert() -> Alert:
    """diskprobe's own verdict: warn and fail as two severities of one alert."""
    return Alert(
        uid="diskprobe-verdict",
        group=GROUP,
        title="Drive verdict",
        query=_smart_last("verdict_code"),
        window="2h",
        levels=(Level(CRIT, "gt", (1.5,)), Level(WARN, "within_range", (0.5, 1.5))),
        pending="0s",
        every=EVERY,
        measure="last verdict_code per drive in 2 h (0 ok, 1 warn, 2 fail)",
        summary="{host}: drive {serial} verdict code {value} (1 warn, 2 fail)",
        why="diskprobe's verdict combines smartctl's own assessment, NVMe critical warnings "
        "and the Backblaze counters (docs/smart.md: The verdict).",
        runbook="Open the diskprobe health dashboard for the serial: verdict_reasons names "
        "the counters. fail: replace the drive; warn: check backups and watch the trend.",
    )


def _nvme_warning_alerts() -> list[Alert]:
    """What the NVMe controller itself reports: its critical warning bits and its wear."""
    return [
        Alert(
            uid="diskprobe-nvme-critical-warning",
            group=GROUP,
            title="NVMe critical warning",
            query=_smart_last("critical_warning"),
            window="2h",
            levels=(Level(CRIT, "gt", (0,)),),
            pending="0s",
            every=EVERY,
            measure="last NVMe critical_warning per drive in 2 h",
            summary="{host}: NVMe {serial} critical_warning={value}",
            why="The controller itself flags spare exhausted (bit 0), temperature (1), "
            "degraded reliability (2), read-only media (3) or failed volatile backup (4).",
            runbook="Decode the bits (nvme smart-log); bits 2-3: move data off and replace the "
            "drive now; bit 1: check cooling and airflow.",
        ),
        Alert(
            uid="diskprobe-nvme-wear",
            group=GROUP,
            title="NVMe wear",
            query=_smart_last("percentage_used"),
            window="2h",
            levels=(Level(CRIT, "gt", (94.5,)), Level(WARN, "within_range", (79.5, 94.5))),
            pending="0s",
            every=EVERY,
            measure="last NVMe percentage_used per drive in 2 h",
            summary="{host}: NVMe {serial} has used {value} % of its rated endurance",
            why="percentage_used is the vendor's estimate of life used; past 100 the drive is "
            "out of warranty endurance and may go read-only.",
            runbook="Order a replacement; at 95 % schedule the swap, and move write-heavy "
            "scratch or checkpoint data to another drive meanwhile.",
        ),
    ]


def _nvme_spare_alert() -> Alert:
    """The spare left above the drive's own threshold (a difference of two fields)."""
    spare = SMART.f("available_spare_percent")
    spare_threshold = SMART.f("available_spare_threshold_percent")
    return Alert(
        uid="diskprobe-nvme-spare",
        group=GROUP,
        title="NVMe available spare low",
        query=alert_query(SMART, f"last({spare}) - last({spare_threshold})", DRIVE),
        window="2h",
        levels=(Level(CRIT, "lt", (0,)), Level(WARN, "within_range", (-0.5, 10.5))),
        pending="0s",
        every=EVERY,
        measure="last available_spare_percent minus available_spare_threshold_percent "
        "per drive in 2 h",
        summary="{host}: NVMe {serial} spare is {value} points from its threshold",
        why="Spare blocks replace worn-out ones; below the drive's own threshold it raises "
        "critical_warning bit 0 and may soon go read-only.",
        runbook="Replace the drive; until then keep it out of write-heavy duty.",
    )


def smart_alerts() -> list[Alert]:
    """The SMART group's alerts, in the order the alert files and the alert table list them."""
    return [*_sector_growth_alerts(), _verdict_alert(), *_nvme_warning_alerts(),
            _nvme_spare_alert()]
