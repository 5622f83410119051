"""The shipped alerts as Prometheus alerting rules, and the recording rules that keep a year of
downsampled history, for Prometheus and VictoriaMetrics (vmalert).

Two name flavors (prom_flavor.py), one set of expressions; the recording rules are in
prometheus_recording.py.

Every alert value is brought back to the schema's unit (`* 1000` on seconds), so the
thresholds are the dashgen Levels' own numbers, in both flavors, and the summaries read as
the Grafana ones do. A dashgen alert with no PromQL here and no reason in NOT_EXPRESSIBLE
breaks generation.

Fleet edge cases, the same in every alert (tested in dashboards/prometheus/tests and on
VictoriaMetrics by tests/test_prometheus_rules.py with tests/prometheus_rules_vm.py):
- a decommissioned host: every alert but "diskprobe silent" holds only while the host's
  agent sent points in the last 5 minutes (ALIVE), so a last SMART value read up to 2 h back
  does not keep alerting for a host that is gone;
- a drive moved to another host: a serial's alerts come from the host whose reading of the
  drive shows the most power-on hours (the newest reading; equal hours: both hosts);
- a fail-slow state that cleared: the alert reads the last fail_slow, 0 after it cleared.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from dashgen.alert_rules import alerts
from dashgen.alerts_latency import P99_LIMIT_MS, promql_value
from dashgen.alerts_risk import growth_alert_uid
from dashgen.model import Alert, Level
from dashgen.prom_flavor import FILE_SUFFIX, FLAVORS, Flavor
from dashgen.prometheus_recording import RECORDING_HEADER, recording_groups
from dashgen.risk import growth_fields
from dashgen.yamlout import dump
from diskprobe.schema import AGENT, FS, IO, JOB, SMART

ALIVE_WINDOW = "5m"  # a host whose agent sent nothing for this long is gone for alerting
SMART_WINDOW = "2h"  # as the Grafana rules: the last read of every drive falls in it
NOT_EXPRESSIBLE = {
    "diskprobe-training-disk-bound": "it filters on the string field bottleneck; "
    "VictoriaMetrics stores a line-protocol string field as the number 0, and the training "
    "job writes only line protocol, so no PromQL can tell a disk-bound window (here the "
    "agent's diskprobe-job-disk-bound judges every job, from bottleneck_code)",
}
def alive(flavor: Flavor) -> str:
    points = flavor.raw("count_over_time", AGENT.name, "duration_ms", ALIVE_WINDOW)
    return f"count by (host) ({points})"


def gated(flavor: Flavor, value: str) -> str:
    return f"({value}) and on(host) {alive(flavor)}"


def drive(flavor: Flavor, value: str) -> str:
    """`value` per (host, serial), from the drive's current host only, while that host lives."""
    hours = flavor.raw("last_over_time", SMART.name, "power_on_hours", SMART_WINDOW,
                       '{serial!=""}')
    holder = f"{hours} == on(serial) group_left max by (serial) ({hours})"
    current = (f"(({value}) and on(host, serial) ({holder})) "
               f"or (({value}) unless on(host, serial) {hours})")
    return gated(flavor, current)


def _smart_last(field: str) -> Callable[[Flavor], str]:
    return lambda fl: drive(fl, fl.over("last_over_time", SMART.name, field, SMART_WINDOW))


def _growth(field: str) -> Callable[[Flavor], str]:
    """The last reading minus the last one before the 24 h window: InfluxQL's last() - first()
    where a drive was read a day ago. Not delta(): Prometheus extrapolates it, and
    VictoriaMetrics counts a series that starts inside the window from 0, so a drive first
    seen today with 8 reallocated sectors would "grow" by 8."""
    def build(fl: Flavor) -> str:
        now = fl.over("last_over_time", SMART.name, field, "24h")
        before = fl.over("last_over_time", SMART.name, field, SMART_WINDOW, offset="24h")
        return drive(fl, f"{now} - {before}")

    return build


def _spare(fl: Flavor) -> str:
    spare = fl.over("last_over_time", SMART.name, "available_spare_percent", SMART_WINDOW)
    limit = fl.over("last_over_time", SMART.name, "available_spare_threshold_percent", SMART_WINDOW)
    return drive(fl, f"{spare} - {limit}")


def _saturated(devices: str) -> Callable[[Flavor], str]:
    match = f'{{device=~"{devices}"}}'

    def build(fl: Flavor) -> str:
        wait = fl.over("avg_over_time", IO.name, "await_ms", "15m", match)
        util = fl.over("min_over_time", IO.name, "util_percent", "15m", match)
        return gated(fl, f"{wait} and ({util}) > 90")

    return build


def _silent(fl: Flavor) -> str:
    # The value is the points of the last silent_window: 0 for a host seen in the last hour.
    recent = fl.raw("count_over_time", AGENT.name, "duration_ms", fl.silent_window)
    hour = fl.raw("count_over_time", AGENT.name, "duration_ms", "1h")
    return f"sum by (host) ({recent}) or (count by (host) ({hour}) * 0)"


def _job_disk_bound(fl: Flavor) -> str:
    """Per rank (host, job, rank), the share of the minutes of the window whose code was
    disk's (a subquery at 1m: PromQL counts no raw samples by value), where the rank sent at
    least MIN_POINTS samples in it: a rank that ended before the window has none."""
    from dashgen.alerts_job import MIN_POINTS, WINDOW
    from dashgen.boards_jobs import DISK, RANK

    by = ", ".join(fl.label(JOB.name, tag) for tag in RANK)
    code = fl.metric(JOB.name, "bottleneck_code")
    disk = f"sum by ({by}) (sum_over_time(({code} == bool {DISK})[{WINDOW}:1m]))"
    minutes = f"sum by ({by}) (count_over_time({code}[{WINDOW}:1m]))"
    points = f"sum by ({by}) (count_over_time({code}[{WINDOW}]))"
    return gated(fl, f"{disk} / {minutes} >= 0.5 and on({by}) {points} >= {MIN_POINTS}")


def _latency(op: str) -> Callable[[Flavor], str]:
    return lambda fl: gated(fl, promql_value(fl, op))


def _value_builders() -> dict[str, Callable[[Flavor], str]]:
    from dashgen.alert_rules import NVME_DEVICES, OTHER_DISKS

    builders: dict[str, Callable[[Flavor], str]] = {
        "diskprobe-reallocated-growth": _growth("reallocated_sectors"),
        "diskprobe-pending-growth": _growth("pending_sectors"),
        "diskprobe-verdict": _smart_last("verdict_code"),
        "diskprobe-nvme-critical-warning": _smart_last("critical_warning"),
        "diskprobe-nvme-wear": _smart_last("percentage_used"),
        "diskprobe-nvme-spare": _spare,
        "diskprobe-afr-high": _smart_last("afr_percent"),
        "diskprobe-fs-fill-forecast": lambda fl: gated(
            fl, fl.over("last_over_time", FS.name, "time_to_full_sec", "15m")),
        "diskprobe-fs-used": lambda fl: gated(
            fl, fl.over("last_over_time", FS.name, "used_percent", "15m")),
        "diskprobe-fs-stuck": lambda fl: gated(
            fl, fl.over("last_over_time", FS.name, "unresponsive_sec", "2m")),
        "diskprobe-io-saturated-nvme": _saturated(NVME_DEVICES),
        "diskprobe-io-saturated-other": _saturated(OTHER_DISKS),
        "diskprobe-fail-slow": lambda fl: gated(
            fl, fl.over("last_over_time", IO.name, "fail_slow", "15m")),
        "diskprobe-agent-silent": _silent,
        "diskprobe-job-disk-bound": _job_disk_bound,
    }
    for op in P99_LIMIT_MS:  # one alert per operation (alerts_latency.py)
        builders[f"diskprobe-latency-p99-{op}"] = _latency(op)
    for field in growth_fields():  # one alert per counter, as alerts_risk.py
        builders[growth_alert_uid(field.name.removesuffix("_per_day"))] = _smart_last(field.name)
    return builders


def condition(value: str, level: Level) -> str:
    if level.op == "is_true":
        return f"({value}) > 0.5"
    a = f"{level.params[0]:g}"
    if level.op == "gt":
        return f"({value}) > {a}"
    if level.op == "lt":
        return f"({value}) < {a}"
    if level.op == "within_range":
        return f"({value}) > {a} < {level.params[1]:g}"
    raise ValueError(f"no PromQL for threshold operator {level.op!r}")


def _template(alert: Alert, text: str, fl: Flavor) -> str:
    """Grafana's {label} and {value} as Go templates. An extra value (fail-slow's {slowdown},
    the job alert's {points}) is named, not queried: vmalert's replay mode refuses the
    `query` template function."""
    extras = {"slowdown": fl.metric(IO.name, "slowdown_ratio"), "points": "the agent's"}
    measurement = alert.query.innermost().measurement

    def field(match: re.Match[str]) -> str:
        name = match.group(1)
        if name == "value":
            return '{{ printf "%.4g" $value }}'
        if name in extras:
            return extras[name]
        return "{{ $labels." + fl.label(measurement, name) + " }}"

    return re.sub(r"\{([a-z_]+)\}", field, text)


def alert_name(alert: Alert) -> str:
    return "".join(part.capitalize() for part in alert.uid.split("-"))


def _rule(alert: Alert, level: Level, value: str, fl: Flavor) -> dict[str, Any]:
    rule: dict[str, Any] = {"alert": alert_name(alert), "expr": condition(value, level)}
    if alert.pending not in ("0s", "0m"):
        rule["for"] = alert.pending
    rule["labels"] = {"severity": level.severity, "source": "diskprobe"}
    rule["annotations"] = {
        "title": alert.title,
        "summary": _template(alert, alert.summary, fl),
        "description": alert.why,
        "runbook": alert.runbook,
        "uid": alert.uid,
    }
    return rule


def alert_groups(fl: Flavor) -> list[dict[str, Any]]:
    builders, groups = _value_builders(), {}  # type: ignore[var-annotated]
    for alert in alerts():
        if alert.uid in NOT_EXPRESSIBLE:
            continue
        if alert.uid not in builders:
            raise KeyError(f"{alert.uid}: no PromQL in prometheus_rules.py nor a reason why not")
        group = groups.setdefault(alert.group, {"name": alert.group, "interval": alert.every,
                                                "rules": []})
        value = builders[alert.uid](fl)
        group["rules"] += [_rule(alert, level, value, fl) for level in alert.levels]
    return list(groups.values())


ALERTS_HEADER = """\
Prometheus alerting rules for diskprobe, names of {describe}.
Generated by dashboards/generate.py from dashboards/dashgen/ (prometheus_rules.py, from the
same alert definitions as grafana-alerts.yaml and the TICKscripts): do not edit.
Load with rule_files (Prometheus) or -rule= (vmalert); dashboards/prometheus/README.md.
Not here: {missing}."""


def render() -> dict[str, str]:
    """dashboards/prometheus/*.yaml: path (under dashboards/) -> text."""
    missing = "; ".join(f"{uid}: {why}" for uid, why in NOT_EXPRESSIBLE.items())
    files = {}
    for fl in FLAVORS:
        suffix = FILE_SUFFIX[fl.key]
        files[f"prometheus/diskprobe-alerts{suffix}.yaml"] = dump(
            {"groups": alert_groups(fl)}, ALERTS_HEADER.format(describe=fl.describe,
                                                                missing=missing))
        files[f"prometheus/diskprobe-recording{suffix}.yaml"] = dump(
            {"groups": recording_groups(fl)}, RECORDING_HEADER.format(describe=fl.describe))
    return files
