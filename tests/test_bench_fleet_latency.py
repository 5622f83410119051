"""tests/bench/fleet_sim_latency.py (what [latency] adds to docs/fleet.md's per-host budget) in
a few simulated minutes: its counts are the plugin's own points and serializers' output,
recounted here, and within the caps the default config sets."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "bench"))

import fleet_sim_latency as budget
import pytest

from diskprobe.config import LatencyConfig

FIELDS = {"diskprobe_latency": 7, "diskprobe_latency_bucket": 2,
          "diskprobe_process_latency": 3, "diskprobe_cgroup_latency": 5}


def test_the_budget_counts_what_the_plugin_writes(capsys: pytest.CaptureFixture[str]) -> None:
    tally = budget.run(minutes=3, seed=1)
    assert tally.intervals == 18
    pairs = len(budget.DEVICE_OPS)
    assert len(tally.influx["diskprobe_latency"]) == pairs == 10
    bounds = {dict(tags)["le"] for _, tags in tally.influx["diskprobe_latency_bucket"]}
    assert "+Inf" in bounds and len(bounds) <= len(LatencyConfig().buckets) + 1
    # The histogram in diskprobe's Prometheus format: every bound, _sum and _count, per pair.
    assert tally.prometheus["diskprobe_latency_bucket"] == pairs * (len(bounds) + 2)
    assert tally.prometheus["diskprobe_latency"] == pairs * 7  # the gauges
    for name, fields in FIELDS.items():  # VictoriaMetrics: a series per field
        extra = pairs if name == "diskprobe_latency_bucket" else 0  # +Inf's sum_sec
        assert len(tally.vm[name]) == fields * len(tally.influx[name]) + extra
    config = LatencyConfig()
    assert tally.influx_most["diskprobe_process_latency"] <= config.top_processes * pairs
    assert tally.influx_most["diskprobe_cgroup_latency"] <= config.max_cgroups * pairs
    assert tally.influx_most["diskprobe_latency_bucket"] <= pairs * (len(config.buckets) + 1)
    budget.report(tally, 3)
    out = capsys.readouterr().out
    assert "diskprobe_latency_bucket | " in out and "caps at the default config" in out
