"""Drive-risk alerts: an estimated failure rate above diskprobe's warn limit, and each defect
counter still growing (its *_per_day rate above 0). All label a drive by host, device, model
and serial (risk.DRIVE), so the message says which drive to pull without a lookup.
"""

from __future__ import annotations

from dashgen.build import last_value
from dashgen.model import Alert, Level
from dashgen.refs import SMART, Field
from dashgen.risk import AFR_WARN_MULTIPLE, DRIVE, afr_baseline, afr_warn_percent, growth_fields

GROUP, EVERY = "diskprobe-smart", "5m"  # with the other SMART alerts: reads are minutes apart
WINDOW = "2h"  # the last SMART read of every drive falls in it (as for the verdict alert)
DRIVE_TEXT = "{host}: drive {device} ({model}, serial {serial})"


def _afr() -> Alert:
    warn = afr_warn_percent()
    return Alert(
        uid="diskprobe-afr-high",
        group=GROUP,
        title="Drive failure rate high",
        query=last_value(SMART, SMART.f("afr_percent"), DRIVE),
        window=WINDOW,
        # diskprobe's verdict warns at >= the limit; Grafana's threshold has no >=, and no
        # rate of the table equals the limit, so "gt" fires for the same drives.
        levels=(Level("warning", "gt", (warn,)),),
        pending="0s",
        every=EVERY,
        measure="last afr_percent per drive (host, device, model, serial) in 2 h, against "
        f"diskprobe's warn limit: the hard-drive baseline {afr_baseline():g} %/year x "
        f"afr_warn_multiple {AFR_WARN_MULTIPLE:g}",
        summary=DRIVE_TEXT + " has an estimated failure rate of {value} %/year "
        f"(warn limit {warn:g})",
        why="afr_percent is the annualized failure rate Backblaze's fleet showed for hard "
        "drives whose worst predictor attribute (5, 187, 188, 197, 198) reads like this one's "
        f"(docs/smart.md); above {AFR_WARN_MULTIPLE:g} x the rate of a defect-free drive "
        "diskprobe's verdict warns. A population rate, not a prediction for this drive.",
        runbook="Check the drive's backups and RAID/ZFS redundancy; put it on the replacement "
        "list (the fleet dashboard sorts drives worst first) and replace it first if its "
        "defect counters also grow.",
    )


def growth_alert_uid(counter: str) -> str:
    """reported_uncorrectable -> diskprobe-reported-unc-per-day (Grafana uids: <= 40 chars)."""
    short = counter.replace("_sectors", "").replace("uncorrectable", "unc")
    return f"diskprobe-{short.replace('_', '-')}-per-day"


def _growth(field: Field) -> Alert:
    """One alert per counter, not one over all six: Kapacitor's batch queries take no
    subquery (influxdata/kapacitor#1198), which "the largest of six fields" would need, and
    the message can name the counter that grows."""
    counter = field.name.removesuffix("_per_day")
    return Alert(
        uid=growth_alert_uid(counter),
        group=GROUP,
        title=counter.replace("_", " ").capitalize() + " growing",
        query=last_value(SMART, field, DRIVE),
        window=WINDOW,
        levels=(Level("warning", "gt", (0,)),),
        pending="0s",
        every=EVERY,
        measure=f"last {field.name} per drive in 2 h (net change per day over diskprobe's "
        "growth_window)",
        summary=DRIVE_TEXT + f": {counter} grows by " + "{value} per day",
        why="A defect counter still rising means the drive is losing media now, not once in "
        f"the past. {field.name} is the net change over [smart] growth_window (7 days by "
        "default), so one new defect keeps this alert up for the window.",
        runbook="Check backups and redundancy, run a long self-test (smartctl -t long) and "
        "watch the fleet dashboard's table (its /d columns); replace the drive if the growth "
        "goes on.",
    )


def risk_alerts() -> list[Alert]:
    return [_afr(), *(_growth(field) for field in growth_fields())]
