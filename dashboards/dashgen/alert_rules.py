"""The alerts, once, for Grafana unified alerting and Kapacitor.

Each query returns one column named "value" per label set (its GROUP BY tags); a Level fires
when that value passes Grafana's threshold operator. The query window holds the whole
condition ("for 15 minutes", "in the last 24 h"), so Grafana and Kapacitor agree without
Grafana's pending period, which only rides out a single bad evaluation.
"""

from __future__ import annotations

from dashgen.alerts_fs import fs_alerts
from dashgen.alerts_latency import latency_alerts
from dashgen.alerts_risk import risk_alerts
from dashgen.alerts_training import training_alerts
from dashgen.build import agg, tags
from dashgen.failslow import fail_slow_alert
from dashgen.model import CRIT, WARN, Alert, Level
from dashgen.query import Select
from dashgen.refs import AGENT, IO, SMART

# "Silent": no diskprobe_agent point in the current 2-minute bucket and the whole one before
# it, over the hosts seen in the last hour: it fires 2 to 4 minutes into a silence. At 1,000
# hosts buckets of diskprobe's 10 s interval took 3.7 s per evaluation (360 a host), 1-minute
# ones 0.72 s but up to 2 s on a busy server, 2-minute ones 0.51 s (docs/fleet.md).
SILENT_BUCKET = "2m"
SILENT_BUCKETS = 2  # the current, partial bucket and the one whole bucket before it
# Device-name classes: diskprobe_io has no media tag (see dashboards/README.md).
NVME_DEVICES = "^nvme[0-9]+n[0-9]+$"  # whole NVMe namespaces, not partitions
OTHER_DISKS = "^(sd[a-z]+|vd[a-z]+|xvd[a-z]+|hd[a-z]+)$"  # whole SCSI/SATA/virtio disks
UTIL_SATURATED = 90.0
AWAIT_MS = {"nvme": 10.0, "other": 50.0}



def _smart_last(field: str) -> Select:
    return Select(
        columns=agg("last", SMART.f(field), "value"),
        measurement=SMART.name,
        group_tags=tags(SMART, "host", "serial"),
    )


def _growth(field: str) -> Select:
    f = SMART.f(field)
    return Select(
        columns=f'last({f}) - first({f}) AS "value"',
        measurement=SMART.name,
        group_tags=tags(SMART, "host", "serial"),
    )


def _smart() -> list[Alert]:
    group, every = "diskprobe-smart", "5m"
    spare = SMART.f("available_spare_percent")
    spare_threshold = SMART.f("available_spare_threshold_percent")
    return [
        Alert(
            uid="diskprobe-reallocated-growth",
            group=group,
            title="Reallocated sectors grew",
            query=_growth("reallocated_sectors"),
            window="24h",
            levels=(Level(WARN, "gt", (0,)),),
            pending="0s",
            every=every,
            measure="growth of reallocated_sectors per drive (serial) over 24 h: last - first",
            summary="{host}: drive {serial} reallocated {value} more sectors in the last 24 h",
            why="A drive remapping sectors is losing media; failure rates climb with the count "
            "(Backblaze: 5 Reallocated_Sector_Ct).",
            runbook="Check the drive's backups and RAID/ZFS redundancy now; run a long self-test "
            "(smartctl -t long) and plan a replacement if it keeps growing.",
        ),
        Alert(
            uid="diskprobe-pending-growth",
            group=group,
            title="Pending sectors grew",
            query=_growth("pending_sectors"),
            window="24h",
            levels=(Level(WARN, "gt", (0,)),),
            pending="0s",
            every=every,
            measure="growth of pending_sectors per drive over 24 h: last - first",
            summary="{host}: drive {serial} has {value} more pending (unreadable) sectors "
            "than 24 h ago",
            why="Pending sectors could not be read; the data on them is at risk until they are "
            "rewritten (Backblaze: 197 Current_Pending_Sector).",
            runbook="Find the files on the bad LBAs (smartctl -l selftest, badblocks -b 4096 on "
            "the range), restore them from backup, scrub the array; replace the drive if it "
            "grows again.",
        ),
        Alert(
            uid="diskprobe-verdict",
            group=group,
            title="Drive verdict",
            query=_smart_last("verdict_code"),
            window="2h",
            levels=(Level(CRIT, "gt", (1.5,)), Level(WARN, "within_range", (0.5, 1.5))),
            pending="0s",
            every=every,
            measure="last verdict_code per drive in 2 h (0 ok, 1 warn, 2 fail)",
            summary="{host}: drive {serial} verdict code {value} (1 warn, 2 fail)",
            why="diskprobe's verdict combines smartctl's own assessment, NVMe critical warnings "
            "and the Backblaze counters (docs/smart.md: The verdict).",
            runbook="Open the diskprobe health dashboard for the serial: verdict_reasons names "
            "the counters. fail: replace the drive; warn: check backups and watch the trend.",
        ),
        Alert(
            uid="diskprobe-nvme-critical-warning",
            group=group,
            title="NVMe critical warning",
            query=_smart_last("critical_warning"),
            window="2h",
            levels=(Level(CRIT, "gt", (0,)),),
            pending="0s",
            every=every,
            measure="last NVMe critical_warning per drive in 2 h",
            summary="{host}: NVMe {serial} critical_warning={value}",
            why="The controller itself flags spare exhausted (bit 0), temperature (1), "
            "degraded reliability (2), read-only media (3) or failed volatile backup (4).",
            runbook="Decode the bits (nvme smart-log); bits 2-3: move data off and replace the "
            "drive now; bit 1: check cooling and airflow.",
        ),
        Alert(
            uid="diskprobe-nvme-wear",
            group=group,
            title="NVMe wear",
            query=_smart_last("percentage_used"),
            window="2h",
            levels=(Level(CRIT, "gt", (94.5,)), Level(WARN, "within_range", (79.5, 94.5))),
            pending="0s",
            every=every,
            measure="last NVMe percentage_used per drive in 2 h",
            summary="{host}: NVMe {serial} has used {value} % of its rated endurance",
            why="percentage_used is the vendor's estimate of life used; past 100 the drive is "
            "out of warranty endurance and may go read-only.",
            runbook="Order a replacement; at 95 % schedule the swap, and move write-heavy "
            "scratch or checkpoint data to another drive meanwhile.",
        ),
        Alert(
            uid="diskprobe-nvme-spare",
            group=group,
            title="NVMe available spare low",
            query=Select(
                columns=f'last({spare}) - last({spare_threshold}) AS "value"',
                measurement=SMART.name,
                group_tags=tags(SMART, "host", "serial"),
            ),
            window="2h",
            levels=(Level(CRIT, "lt", (0,)), Level(WARN, "within_range", (-0.5, 10.5))),
            pending="0s",
            every=every,
            measure="last available_spare_percent minus available_spare_threshold_percent "
            "per drive in 2 h",
            summary="{host}: NVMe {serial} spare is {value} points from its threshold",
            why="Spare blocks replace worn-out ones; below the drive's own threshold it raises "
            "critical_warning bit 0 and may soon go read-only.",
            runbook="Replace the drive; until then keep it out of write-heavy duty.",
        ),
    ]


def _saturated(kind: str, devices: str, title: str) -> Alert:
    inner = Select(
        columns=", ".join((agg("min", IO.f("util_percent"), "util"),
                           agg("mean", IO.f("await_ms"), "await"))),
        measurement=IO.name,
        where=(f"{IO.tag('device')} =~ /{devices}/",),
        group_tags=tags(IO, "host", "device"),
    )
    threshold = AWAIT_MS[kind]
    return Alert(
        uid=f"diskprobe-io-saturated-{kind}",
        group="diskprobe-io",
        title=title,
        query=Select(
            columns='"await" AS "value"',
            source=inner,
            where=(f'"util" > {UTIL_SATURATED:g}',),
            group_tags=("host", "device"),
        ),
        window="15m",
        levels=(Level(WARN, "gt", (threshold,)),),
        pending="0s",
        every="1m",
        measure=f"mean await_ms per device matching /{devices}/ over 15 min, for devices whose "
        f"util_percent stayed above {UTIL_SATURATED:g} the whole time",
        summary="{host}: " + "{device} busy for 15 minutes with await {value} ms",
        why=f"%util above {UTIL_SATURATED:g} for 15 minutes and a mean await above "
        f"{threshold:g} ms. %util alone misleads on NVMe and RAID: it only means at least one "
        "request was in flight, and those devices serve many at once, so 100 % can be far "
        "from their limit; a long await shows requests really queue.",
        runbook="Find the process (iotop -o, pidstat -d 5) and what it reads; for training "
        "jobs compare with the GPU panel, then add loader workers, cache or stage the data on "
        "faster storage, or spread it over more disks.",
    )


def _io() -> list[Alert]:
    return [
        _saturated("nvme", NVME_DEVICES, "NVMe saturated"),
        _saturated("other", OTHER_DISKS, "Disk saturated (HDD/SATA)"),
    ]


def _agent() -> list[Alert]:
    inner = Select(
        columns=f'moving_average(count({AGENT.f("duration_ms")}), {SILENT_BUCKETS}) AS "beats"',
        measurement=AGENT.name,
        group_tags=tags(AGENT, "host"),
        group_time=SILENT_BUCKET,
        fill="0",
    )
    return [
        Alert(
            uid="diskprobe-agent-silent",
            group="diskprobe-agent",
            title="diskprobe silent",
            query=Select(columns='last("beats") AS "value"', source=inner, group_tags=("host",)),
            window="1h",
            levels=(Level(CRIT, "lt", (0.1,)),),
            pending="0s",
            every="30s",
            measure=f"{AGENT.name} points per host in {SILENT_BUCKET} buckets, moving "
            f"average over the last {SILENT_BUCKETS} (hosts seen in the last hour)",
            summary=f"{{host}}: no {AGENT.name} points any more (diskprobe silent)",
            why="Without diskprobe every other alert here is blind for that host: Telegraf "
            "stopped, the execd process keeps dying, or the host is down. Hosts silent for "
            "more than the 1 h window drop out of the query.",
            runbook="On the host: systemctl status telegraf, journalctl -u telegraf | grep "
            "diskprobe, and run diskprobe --once by hand.",
        ),
    ]


def alerts() -> list[Alert]:
    return [*_smart(), *risk_alerts(), *fs_alerts(), *_io(), *latency_alerts(), fail_slow_alert(),
            *training_alerts(), *_agent()]
