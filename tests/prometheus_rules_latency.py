"""The promtool test of "Device latency p99 high" (dashboards/prometheus/tests/latency*.yaml,
written by tests/prometheus_rules_files.py): 90 minutes of diskprobe_latency on host h1, one
sample a minute, in each name flavor. An idle device: VictoriaMetrics fed line protocol gets
no point, and neither does diskprobe's own Prometheus format (it drops the gauges at the next
run), but a textfile node_exporter still serves after diskprobe stopped repeats the last
gauges while the histogram's count stops growing: sde below is that textfile.

- sda reads: 500 a minute with a p99 of 300 ms all along: fires (limit 100 ms);
- sdb reads at 600 ms but 50 requests: never;
- nvme0n1 writes at 1 ms, at 400 ms from minute 50: not at 60 (10 minutes high), at 90;
- sdc flushes: none, then 200 at 900 ms from minute 55: not at 60 (busy 6 minutes), at 90;
- sdd reads at 300 ms until minute 40, then 20 fast ones: at 20, not at 60;
- sde reads at 300 ms until minute 40, then idle: at 20, not at 60 (in the Prometheus format
  a stale textfile: its gauges still say 500 requests at 300 ms, its count stopped growing);
- nvme1n1 reads at 2 ms: never.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "dashboards"))

from dashgen.prom_flavor import Flavor

from diskprobe.serializers.prometheus_histogram import NAME as HISTOGRAM

MINUTES = 90
Values = list[Optional[float]]
# device, op, and per minute (requests, p99 ms) or None (no requests): ranges from..to
# inclusive, the later ones winning
Run = tuple[int, int, int, float]  # from, to, requests, p99 ms
CASES: tuple[tuple[str, str, tuple[Run, ...]], ...] = (
    ("sda", "read", ((0, MINUTES, 500, 300.0),)),
    ("sdb", "read", ((0, MINUTES, 50, 600.0),)),
    ("nvme0n1", "write", ((0, 49, 1000, 1.0), (50, MINUTES, 1000, 400.0))),
    ("sdc", "flush", ((55, MINUTES, 200, 900.0),)),
    ("sdd", "read", ((0, 40, 500, 300.0), (41, MINUTES, 20, 2.0))),
    ("sde", "read", ((0, 40, 500, 300.0),)),  # then idle
    ("nvme1n1", "read", ((0, MINUTES, 5000, 2.0),)),
)
# minute -> op -> [(device, value ms)]
EXPECTED: dict[int, dict[str, list[tuple[str, float]]]] = {
    20: {"read": [("sda", 300), ("sdd", 300), ("sde", 300)], "write": [], "flush": []},
    60: {"read": [("sda", 300)], "write": [], "flush": []},
    90: {"read": [("sda", 300)], "write": [("nvme0n1", 400)], "flush": [("sdc", 900)]},
}


def per_minute(runs: tuple[Run, ...]) -> list[Optional[tuple[int, float]]]:
    found: list[Optional[tuple[int, float]]] = [None] * (MINUTES + 1)
    for start, end, requests, p99 in runs:
        for minute in range(start, end + 1):
            found[minute] = (requests, p99)
    return found


def _as_exposed(flavor: Flavor, minutes: list[Optional[tuple[int, float]]]
                ) -> list[Optional[tuple[int, float]]]:  # fmt: skip
    """A stale textfile repeats an idle device's last gauges; line protocol has none."""
    if flavor.key == "influx":
        return minutes
    shown, last = [], None
    for minute in minutes:
        last = minute or last
        shown.append(last)
    return shown


def _count(minutes: list[Optional[tuple[int, float]]]) -> Values:
    """diskprobe_latency_seconds_count: requests since start, absent before the first."""
    total, values = 0, []
    for minute in minutes:
        total += minute[0] if minute else 0
        values.append(float(total) if total else None)
    return values


def latency_series(flavor: Flavor) -> list[dict[str, str]]:
    from prometheus_rules_files import promtool_values, scale, series_text

    out = [{"series": series_text(flavor.metric("diskprobe_agent", "duration_ms"),
                                  {"host": "h1", "collector": "latency"}),
            "values": promtool_values([12.5] * (MINUTES + 1))}]
    for device, op, runs in CASES:
        labels = {"host": "h1", "device": device, "op": op}
        minutes = per_minute(runs)
        shown = _as_exposed(flavor, minutes)
        for field, index in (("requests", 0), ("p99_ms", 1)):
            values: Values = [float(m[index]) if m else None for m in shown]
            out.append({"series": series_text(flavor.metric("diskprobe_latency", field), labels),
                        "values": promtool_values(values, scale(flavor, "diskprobe_latency",
                                                                field))})
        if flavor.key == "prometheus":
            out.append({"series": series_text(f"{HISTOGRAM}_count", labels),
                        "values": promtool_values(_count(minutes))})
    return out


def latency_test(flavor: Flavor) -> dict[str, Any]:
    from prometheus_rules_files import (
        TESTS,
        alert_test_file,
        alerts_file,
        expected_alert,
        rules_by_alert,
    )

    rules = rules_by_alert(TESTS.parent / alerts_file(flavor))
    checks = []
    for minute, by_op in EXPECTED.items():
        for op, fired in by_op.items():
            name = f"DiskprobeLatencyP99{op.capitalize()}"
            rule = rules[(name, "warning")]
            exp = [expected_alert(rule, {"host": "h1", "device": device, "op": op}, value)
                   for device, value in fired]  # fmt: skip
            checks.append({"eval_time": f"{minute}m", "alertname": name, "exp_alerts": exp})
    return alert_test_file(alerts_file(flavor), "1m", latency_series(flavor), checks)
