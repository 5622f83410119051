"""The shipped alerts as Prometheus alerting rules, and the recording rules that keep a year of
downsampled history, for Prometheus and VictoriaMetrics (vmalert).

Two name flavors, one set of expressions:

- "prometheus": the names diskprobe's own Prometheus format gives (`format = "prometheus"`,
  the /metrics listener, the textfile), base units: diskprobe_io_await_seconds,
  diskprobe_smart_life_used_ratio. serializers/prometheus.py's family() names them.
- "influx": the names VictoriaMetrics makes of diskprobe's InfluxDB line protocol
  (`<measurement>_<field>`, schema units, tags as labels plus `db`): diskprobe_io_await_ms.

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
from dataclasses import dataclass
from typing import Any, Callable

from dashgen.alert_rules import alerts
from dashgen.alerts_risk import growth_alert_uid
from dashgen.model import Alert, Level
from dashgen.risk import growth_fields
from dashgen.yamlout import dump
from diskprobe.schema import AGENT, FS, IO, MEASUREMENTS, SMART, MeasurementSpec
from diskprobe.serializers.prometheus import family

ALIVE_WINDOW = "5m"  # a host whose agent sent nothing for this long is gone for alerting
SMART_WINDOW = "2h"  # as the Grafana rules: the last read of every drive falls in it
NOT_EXPRESSIBLE = {
    "diskprobe-training-disk-bound": "it filters on the string field bottleneck; "
    "VictoriaMetrics stores a line-protocol string field as the number 0, and the training "
    "job writes only line protocol, so no PromQL can tell a disk-bound window",
}
SPECS: dict[str, MeasurementSpec] = {spec.name: spec for spec in MEASUREMENTS}


@dataclass(frozen=True)
class Flavor:
    key: str
    describe: str
    silent_window: str  # "no points for 3 intervals", at least one scrape interval

    def metric(self, measurement: str, field: str) -> str:
        if self.key == "influx":
            return f"{measurement}_{field}"
        spec = SPECS[measurement]
        return family(spec, next(f for f in spec.fields if f.name == field)).name

    def raw(self, fn: str, measurement: str, field: str, window: str, match: str = "",
            offset: str = "") -> str:  # fmt: skip
        """fn(series[window]) in the flavor's unit (for counts and comparisons)."""
        shift = f" offset {offset}" if offset else ""
        return f"{fn}({self.metric(measurement, field)}{match}[{window}]{shift})"

    def over(self, fn: str, measurement: str, field: str, window: str, match: str = "",
             offset: str = "") -> str:  # fmt: skip
        """fn(series[window]) in the schema's unit."""
        text = self.raw(fn, measurement, field, window, match, offset)
        if self.key == "influx":
            return text
        spec = SPECS[measurement]
        fam = family(spec, next(f for f in spec.fields if f.name == field))
        if fam.divide != 1:
            return f"{text} * {fam.divide}"
        return f"{text} / {fam.multiply}" if fam.multiply != 1 else text


PROMETHEUS = Flavor("prometheus", "diskprobe's Prometheus format (/metrics, textfile)", "2m")
INFLUX = Flavor("influx", "VictoriaMetrics fed diskprobe's InfluxDB line protocol", "40s")
FLAVORS = (PROMETHEUS, INFLUX)


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
    }
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
    """Grafana's {label} and {value} as Go templates. An extra value (fail-slow's {slowdown})
    is named, not queried: vmalert's replay mode refuses the `query` template function."""
    extras = {name: fl.metric(IO.name, "slowdown_ratio") for name in ("slowdown",)}

    def field(match: re.Match[str]) -> str:
        name = match.group(1)
        if name == "value":
            return '{{ printf "%.4g" $value }}'
        if name in extras:
            return extras[name]
        return "{{ $labels." + name + " }}"

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


# Recording rules: (group, evaluation interval and window, [(aggregation, fields)]).
IO_RATES = tuple(
    f.name for f in IO.fields
    if f.kind != "counter" and f.type in ("int", "float") and f.name != "interval_sec"
)
FS_HOURLY = (
    ("max", ("total_bytes", "used_bytes", "used_percent", "inodes_used_percent")),
    ("min", ("avail_bytes", "responsive", "time_to_full_sec", "inodes_time_to_full_sec")),
    ("avg", ("fill_rate_bytes_per_sec",)),
)
SMART_DAILY_MIN = ("health_ok",)  # a drive that failed its own check at any time of the day


def _smart_daily() -> tuple[str, ...]:
    return tuple(f.name for f in SMART.fields
                 if f.type in ("int", "float", "bool") and f.name not in SMART_DAILY_MIN)


RECORDING: tuple[tuple[str, str, tuple[tuple[str, tuple[str, ...]], ...]], ...] = (
    ("diskprobe-io-5m", "5m", (("avg", IO_RATES), ("max", (*IO_RATES, "fail_slow")))),
    ("diskprobe-fs-1h", "1h", FS_HOURLY),
    ("diskprobe-smart-1d", "1d", (("max", _smart_daily()), ("min", SMART_DAILY_MIN))),
)
MEASUREMENT_OF = {"diskprobe-io-5m": IO.name, "diskprobe-fs-1h": FS.name,
                  "diskprobe-smart-1d": SMART.name}


def recorded_name(fl: Flavor, measurement: str, field: str, agg: str, window: str) -> str:
    """level:metric:operations: diskprobe_io:await_ms:avg5m (the level: the measurement's own
    labels, none aggregated away)."""
    metric = fl.metric(measurement, field).removeprefix(measurement + "_")
    return f"{measurement}:{metric}:{agg}{window}"


def recording_groups(fl: Flavor) -> list[dict[str, Any]]:
    groups = []
    for name, window, aggregations in RECORDING:
        measurement = MEASUREMENT_OF[name]
        rules = [
            {"record": recorded_name(fl, measurement, field, agg, window),
             "expr": f"{agg}_over_time({fl.metric(measurement, field)}[{window}])"}
            for agg, fields in aggregations for field in fields
        ]
        groups.append({"name": name, "interval": window, "rules": rules})
    return groups


ALERTS_HEADER = """\
Prometheus alerting rules for diskprobe, names of {describe}.
Generated by dashboards/generate.py from dashboards/dashgen/ (prometheus_rules.py, from the
same alert definitions as grafana-alerts.yaml and the TICKscripts): do not edit.
Load with rule_files (Prometheus) or -rule= (vmalert); dashboards/prometheus/README.md.
Not here: {missing}."""
RECORDING_HEADER = """\
Prometheus recording rules for diskprobe's long-term series, names of {describe}.
I/O: 5-minute mean and max of each rate; filesystems: hourly max/min/mean;
SMART: daily max (health_ok: daily min). Generated by dashboards/generate.py: do not edit.
Evaluate them into a long-term store: dashboards/prometheus/victoriametrics-two-store.md."""
FILE_SUFFIX = {"prometheus": "", "influx": "-influx"}


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
