"""The promtool test files of dashboards/prometheus/tests/, rendered for each name flavor of
the shipped rules from the scenarios in tests/prometheus_rules_cases.py (alerts),
tests/prometheus_rules_latency.py (block latency) and here (recording rules, growth over a
day).

    .venv/bin/python tests/prometheus_rules_files.py   # rewrite the test files
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "dashboards"))

from dashgen.prom_flavor import FILE_SUFFIX, FLAVORS, SPECS, Flavor  # noqa: E402

from diskprobe.serializers.prometheus import family  # noqa: E402
from prometheus_rules_cases import (  # noqa: E402
    EXPECTED,
    FAILING,
    SATA,
    TESTS,
    Values,
    drive_labels,
    fs_labels,
    scenario,
)


def scale(flavor: Flavor, measurement: str, field: str) -> float:
    """Schema unit -> the flavor's unit."""
    if flavor.key == "influx":
        return 1.0
    spec = SPECS[measurement]
    fam = family(spec, next(f for f in spec.fields if f.name == field))
    return fam.multiply / fam.divide


def promtool_values(values: Values, factor: float = 1.0) -> str:
    """promtool's expanding notation: runs of one value as `vxN` (N + 1 samples), a gap of N
    samples as `_xN` (N, not N + 1: checked with promtool, `_x2 5` has its 5 at 2m)."""
    runs: list[tuple[float | None, int]] = []
    for value in values:
        if runs and runs[-1][0] == value:
            runs[-1] = (value, runs[-1][1] + 1)
        else:
            runs.append((value, 1))
    parts = []
    for value, count in runs:
        if value is None:
            parts.append("_" if count == 1 else f"_x{count}")
        else:
            text = repr(value * factor)
            parts.append(text if count == 1 else f"{text}x{count - 1}")
    return " ".join(parts)


def series_text(name: str, labels: dict[str, str]) -> str:
    return name + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def input_series(flavor: Flavor, series: list[tuple[str, str, dict[str, str], Values]]
                 ) -> list[dict[str, str]]:  # fmt: skip
    return [
        {"series": series_text(flavor.metric(m, f),
                               {flavor.label(m, k): v for k, v in labels.items()}),
         "values": promtool_values(values, scale(flavor, m, f))}
        for m, f, labels, values in series
    ]


def alert_labels(flavor: Flavor, labels: dict[str, str]) -> dict[str, str]:
    """An alert's labels in the flavor's names: only diskprobe_job's have a `job`."""
    return {flavor.label("diskprobe_job", k): v for k, v in labels.items()}


def render_annotations(annotations: dict[str, str], labels: dict[str, str], value: float,
                       ) -> dict[str, str]:  # fmt: skip
    """The two template forms the generator writes, filled in."""
    out = {}
    for key, text in annotations.items():
        text = text.replace('{{ printf "%.4g" $value }}', f"{value:.4g}")
        out[key] = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels[m.group(1)], text)
    return out


def rules_by_alert(rules_file: Path) -> dict[tuple[str, str], dict[str, Any]]:
    groups = yaml.safe_load(rules_file.read_text())["groups"]
    return {(r["alert"], r["labels"]["severity"]): r for g in groups for r in g["rules"]}


def alerts_file(flavor: Flavor) -> str:
    """The flavor's shipped alert rules file (dashboards/prometheus/)."""
    return f"diskprobe-alerts{FILE_SUFFIX[flavor.key]}.yaml"


def expected_alert(rule: dict[str, Any], labels: dict[str, str], value: float,
                   ) -> dict[str, Any]:  # fmt: skip
    """One alert `rule` fired for a series with `labels` at `value`, as promtool expects it."""
    return {
        "exp_labels": {**labels, **rule["labels"]},
        "exp_annotations": render_annotations(rule["annotations"], labels, value),
    }


def alert_test_file(rules_file: str, interval: str, series: list[dict[str, str]],
                    checks: list[dict[str, Any]]) -> dict[str, Any]:  # fmt: skip
    """A promtool test file of `rules_file`: samples and evaluations every `interval`."""
    return {
        "rule_files": [f"../{rules_file}"],
        "evaluation_interval": interval,
        "tests": [{"interval": interval, "input_series": series, "alert_rule_test": checks}],
    }


def alert_tests(flavor: Flavor) -> dict[str, Any]:
    rules = rules_by_alert(TESTS.parent / alerts_file(flavor))
    checks = []
    for minute, by_name in EXPECTED.items():
        for name, fired in by_name.items():
            exp = []
            for severity, schema_labels, value in fired:
                rule, labels = rules[(name, severity)], alert_labels(flavor, schema_labels)
                exp.append(expected_alert(rule, labels, value))
            checks.append({"eval_time": f"{minute}m", "alertname": name, "exp_alerts": exp})
    return alert_test_file(alerts_file(flavor), "1m", input_series(flavor, scenario()), checks)


DAY = 1440  # minutes
NVME0 = {"host": "h1", "device": "nvme0n1", "serial": "N-WORN", "model": "NVME-Y"}
DATA = fs_labels("h1", "/data")


def _long(*runs: tuple[int, int, float]) -> Values:
    values: Values = [None] * (DAY + 1)
    for start, end, value in runs:
        values[start:end + 1] = [value] * (end + 1 - start)
    return values


def recording_scenario() -> list[tuple[str, str, dict[str, str], Values, list[tuple[
        str, int, float]]]]:  # fmt: skip
    """(measurement, field, labels, values, [(aggregation+window, minute, expected value)]),
    values in the schema's unit, one a minute. Prometheus 2.x range selectors include both
    ends: a 5m window at minute 10 holds minutes 5..10."""
    await_ms = [1000.0 * (minute % 3 + 1) if minute <= 30 else None for minute in range(DAY + 1)]
    return [
        # minutes 5..10: 3000 1000 2000 3000 1000 2000 ms
        ("diskprobe_io", "await_ms", NVME0, await_ms, [("avg5m", 10, 2000), ("max5m", 10, 3000)]),
        ("diskprobe_io", "fail_slow", NVME0, _long((0, 6, 0), (7, 7, 1), (8, 30, 0)),
         [("max5m", 10, 1), ("max5m", 20, 0)]),
        ("diskprobe_fs", "fill_rate_bytes_per_sec", DATA, _long((0, 59, 100), (60, 120, 300)),
         [("avg1h", 120, 300)]),
        ("diskprobe_fs", "time_to_full_sec", DATA, _long((0, 89, 7200), (90, 120, 3600)),
         [("min1h", 120, 3600), ("min1h", 60, 7200)]),
        ("diskprobe_smart", "reallocated_sectors", FAILING,
         _long((0, 600, 8), (601, 1000, 16), (1001, DAY, 12)), [("max1d", DAY, 16)]),
        ("diskprobe_smart", "verdict_code", FAILING,
         _long((0, 699, 0), (700, 710, 2), (711, DAY, 1)), [("max1d", DAY, 2)]),
        ("diskprobe_smart", "health_ok", FAILING, _long((0, 704, 1), (705, 705, 0), (706, DAY, 1)),
         [("min1d", DAY, 0)]),
    ]


def recording_tests(flavor: Flavor) -> dict[str, Any]:
    from dashgen.prometheus_recording import recorded_name

    series, checks = [], []
    for measurement, field, labels, values, expected in recording_scenario():
        factor = scale(flavor, measurement, field)
        series.append({"series": series_text(flavor.metric(measurement, field), labels),
                       "values": promtool_values(values, factor)})
        for operation, minute, value in expected:
            name = recorded_name(flavor, measurement, field, operation[:3], operation[3:])
            checks.append({"expr": name, "eval_time": f"{minute}m", "exp_samples": [
                {"labels": series_text(name, labels), "value": value * factor}]})
    return {
        "rule_files": [f"../diskprobe-recording{FILE_SUFFIX[flavor.key]}.yaml"],
        "evaluation_interval": "5m",
        "tests": [{"interval": "1m", "input_series": series, "promql_expr_test": checks}],
    }


def growth_test(flavor: Flavor) -> dict[str, Any]:
    """A SMART read every 30 min for a day and a half-hour. S-GROW's reallocated sectors go
    8 -> 16 at the last read (fires, by 8); S-BACK's pending sectors fall 5 -> 3 (no growth);
    S-NEW was first read at the read before last, with 8 (no reading a day ago: no alert)."""
    rules = rules_by_alert(TESTS.parent / alerts_file(flavor))
    reads = 49  # the last read, at 24.5 h
    grow = drive_labels("h1", "sda", "S-GROW", SATA)
    back = drive_labels("h1", "sdb", "S-BACK", SATA)
    new = drive_labels("h1", "sdc", "S-NEW", SATA)
    agent: Values = [12.5] * (reads + 1)
    series: list[tuple[str, str, dict[str, str], Values]] = [
              ("diskprobe_agent", "duration_ms", {"host": "h1", "collector": "io"}, agent),
              ("diskprobe_smart", "reallocated_sectors", grow, [*[8.0] * reads, 16.0]),
              ("diskprobe_smart", "pending_sectors", back, [*[5.0] * reads, 3.0]),
              ("diskprobe_smart", "reallocated_sectors", new, [*[None] * (reads - 1), 8.0, 8.0])]
    series += [("diskprobe_smart", "power_on_hours", labels, [*[1000.0] * (reads + 1)])
               for labels in (grow, back)]
    checks = []
    expected: list[tuple[str, list[tuple[dict[str, str], float]]]] = [
        ("DiskprobeReallocatedGrowth", [(grow, 8)]), ("DiskprobePendingGrowth", [])]
    for name, fired in expected:
        rule = rules[(name, "warning")]
        checks.append({"eval_time": f"{reads * 30}m", "alertname": name, "exp_alerts": [
            expected_alert(rule, labels, value) for labels, value in fired]})
    return alert_test_file(alerts_file(flavor), "30m", input_series(flavor, series), checks)


def write_all() -> dict[Path, str]:
    from prometheus_rules_latency import latency_test  # it uses this module's helpers

    files = {}
    for flavor in FLAVORS:
        suffix = FILE_SUFFIX[flavor.key]
        files[TESTS / f"growth{suffix}.yaml"] = HEADER + yaml.safe_dump(
            growth_test(flavor), sort_keys=False, width=200)
        files[TESTS / f"recording{suffix}.yaml"] = HEADER + yaml.safe_dump(
            recording_tests(flavor), sort_keys=False, width=200)
        files[TESTS / f"alerts{suffix}.yaml"] = HEADER + yaml.safe_dump(
            alert_tests(flavor), sort_keys=False, width=200)
        files[TESTS / f"latency{suffix}.yaml"] = HEADER + yaml.safe_dump(
            latency_test(flavor), sort_keys=False, width=200)
    return files


HEADER = "# promtool test rules: generated by tests/prometheus_rules_files.py, do not edit.\n"

if __name__ == "__main__":
    TESTS.mkdir(parents=True, exist_ok=True)
    for path, text in write_all().items():
        path.write_text(text)
        print(f"wrote {path.relative_to(ROOT)}")
