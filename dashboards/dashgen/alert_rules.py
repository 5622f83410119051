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
from dashgen.alerts_smart import smart_alerts
from dashgen.alerts_training import training_alerts
from dashgen.build import agg, tags
from dashgen.failslow import fail_slow_alert
from dashgen.model import CRIT, WARN, Alert, Level
from dashgen.query import Select
from dashgen.refs import AGENT, IO

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
    return [*smart_alerts(), *risk_alerts(), *fs_alerts(), *_io(), *latency_alerts(),
            fail_slow_alert(), *training_alerts(), *_agent()]
