"""Figures and tables for bench_fleet_budget.py, from its Tally per recipe.

Per day: each measurement's lines per interval x (86,400 s / its collector's default
interval), SMART's lines per read cycle x (86,400 s / [smart] interval); churn: the series first
seen after the warm-up, over the simulated hours after it, x 24.
"""

from __future__ import annotations

from collections import Counter
from statistics import mean
from typing import Any

from budget_count import SMART, Tally
from budget_host import STEP_SEC, SyntheticHost
from budget_recipes import Recipe
from fleet_host_types import Profile

from diskprobe.config import load_config

DAY = 86_400.0


def intervals_per_day() -> dict[str, float]:
    """Each measurement's points per day at the default configuration."""
    config = load_config(None)
    tick = config.interval
    every = {"diskprobe_io": config.io.interval, "diskprobe_fs": config.filesystems.interval,
             "diskprobe_pressure": config.pressure.interval,
             "diskprobe_process_io": config.process_io.interval,
             "diskprobe_cgroup_io": config.cgroup_io.interval, "diskprobe_agent": None,
             "diskprobe_smart": config.smart.interval,
             "diskprobe_smart_attr": config.smart.interval}  # fmt: skip
    return {name: DAY / (seconds or tick) for name, seconds in every.items()}


def _figures(tally: Tally, intervals: int, per_day: dict[str, float]) -> dict[str, Any]:
    measured = tally.per_batch[tally.warmup:] or tally.per_batch
    after = max(len(measured), 1)
    drives = tally.lines["diskprobe_smart"]
    devices = len({k for k in tally.influx_seen if k[0] == "diskprobe_smart"})
    cycles = drives / devices if devices else 1.0
    smart_influx = sum(1 for k in tally.influx_seen if k[0] in SMART)
    smart_prom = sum(1 for k in tally.prom_seen if k[0].startswith("diskprobe_smart_"))
    def daily(counts: Counter[str]) -> float:
        return sum(n / (cycles if m in SMART else after) * per_day[m] for m, n in counts.items())

    lines_day, bytes_day = daily(tally.lines), daily(tally.size)
    hours = (intervals - tally.warmup) * STEP_SEC / 3600
    new_influx = tally.new_after_warmup(tally.influx_seen)
    new_prom = tally.new_after_warmup(tally.prom_seen)
    scale = 24 / hours if hours > 0 else 0.0
    return {
        "influx_series": round(mean(b["influx"] for b in measured)) + smart_influx,
        "influx_series_max": max(b["influx"] for b in measured) + smart_influx,
        "prom_series": round(mean(b["prom"] for b in measured)) + smart_prom,
        "total_lines": tally.total_lines,
        "total_bytes": tally.total_bytes,
        "influx_distinct": len(tally.influx_seen),
        "prom_distinct": len(tally.prom_seen),
        "prom_string_distinct": len(tally.prom_strings),
        "expo_distinct": len(tally.expo_seen),
        "new_expo_per_day": round(sum(tally.new_after_warmup(tally.expo_seen).values()) * scale),
        "lines_per_interval": round(mean(b["lines"] for b in measured), 1),
        "bytes_per_interval": round(mean(b["bytes"] for b in measured)),
        "smart_lines_per_read": round(sum(tally.lines[m] for m in SMART) / cycles, 1),
        "smart_bytes_per_read": round(sum(tally.size[m] for m in SMART) / cycles),
        "lines_per_day": round(lines_day),
        "bytes_per_day": round(bytes_day),
        "new_influx": sum(new_influx.values()),
        "new_prom": sum(new_prom.values()),
        "new_influx_per_day": round(sum(new_influx.values()) * scale),
        "new_influx_real": sum(tally.new_after_warmup(tally.real_seen).values()),
        "new_influx_real_per_day": round(sum(tally.new_after_warmup(tally.real_seen).values())
                                         * scale),
        "new_prom_per_day": round(sum(new_prom.values()) * scale),
        "new_influx_by_measurement": dict(new_influx),
        "new_influx_real_sample": [f"{m} {dict(t)}" for (m, t), first in tally.real_seen.items()
                                   if first >= tally.warmup][:8],
        "new_values": tally.new_values(),
        "collisions_per_interval": round(tally.collisions / max(len(tally.per_batch), 1), 2),
        "residue_points_per_interval": round(tally.residues / max(len(tally.per_batch), 1), 2),
        "peak_series": dict(tally.peak),
    }


def _hourly(tally: Tally) -> list[int]:
    """New InfluxDB series per simulated hour after the warm-up."""
    hours: Counter[int] = Counter()
    for first in tally.influx_seen.values():
        if first >= tally.warmup:
            hours[int((first - tally.warmup) * STEP_SEC // 3600)] += 1
    return [hours[h] for h in range(max(hours, default=-1) + 1)]


def summarize(name: str, profile: Profile, host: SyntheticHost, recipes: list[Recipe],
              tallies: list[Tally], intervals: int, warmup: int) -> dict[str, Any]:  # fmt: skip
    per_day = intervals_per_day()
    return {
        "profile": name,
        "summary": profile.summary,
        "intervals": intervals,
        "warmup": warmup,
        "simulated_hours": round(intervals * STEP_SEC / 3600, 2),
        "events": dict(host.events),
        "processes_at_end": len(host.procs),
        "cgroups_at_end": len(host.cgroups.own),
        "mounts_at_end": len(host.mounts),
        "recipes": {r.name: _figures(t, intervals, per_day) for r, t in zip(recipes, tallies)},
        "hourly_new_influx": _hourly(tallies[0]),
    }


def _si(value: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if value >= size:
            return f"{value / size:.1f} {unit}"
    return f"{value:.0f} B"


def print_profile(result: dict[str, Any]) -> None:
    base = result["recipes"]["as emitted"]
    print(f"\n== {result['profile']}: {result['summary']}")
    print(f"simulated {result['simulated_hours']} h ({result['intervals']} intervals of "
          f"{STEP_SEC:g} s, warm-up {result['warmup']}), {result['wall_seconds']} s wall; "
          f"events {result['events']}; at the end {result['processes_at_end']} processes, "
          f"{result['cgroups_at_end']} cgroups, {result['mounts_at_end']} mountinfo lines")
    print(f"series: InfluxDB {base['influx_series']} per interval (max {base['influx_series_max']}"
          f", {base['influx_distinct']} distinct over the run); Prometheus/VM {base['prom_series']}"
          f" ({base['prom_distinct']} distinct, of which {base['prom_string_distinct']} of "
          "string fields, which VictoriaMetrics stores as 0)")
    print(f"lines/interval {base['lines_per_interval']} ({_si(base['bytes_per_interval'])}); "
          f"SMART per read {base['smart_lines_per_read']} lines "
          f"({_si(base['smart_bytes_per_read'])}); per day {base['lines_per_day']:,} lines, "
          f"{_si(base['bytes_per_day'])}")
    print(f"new series/day: InfluxDB {base['new_influx_per_day']:,} "
          f"({base['new_influx_by_measurement']}), Prometheus/VM {base['new_prom_per_day']:,}; "
          f"new InfluxDB series per simulated hour after warm-up: {result['hourly_new_influx']}")
    events = result["events"]
    replaced = events["pods_replaced"] - events.get("pods_replaced_in_warmup", 0)
    if replaced:
        print(f"per pod replaced after the warm-up ({replaced}): "
              f"{base['new_influx_real'] / replaced:.1f} new InfluxDB series (by measurement: "
              f"{base['new_influx_by_measurement']})")
    print(f"new InfluxDB series/day without those of residue points only (below): "
          f"{base['new_influx_real_per_day']:,}; new tag values after warm-up: "
          f"{base['new_values']}")
    print(f"diskprobe's own Prometheus exposition (string fields as _info series labelled with "
          f"the text): {base['expo_distinct']} distinct, {base['new_expo_per_day']:,} new/day")
    print(f"most series of one interval per measurement: {base['peak_series']}")
    print(f"cgroup_io points per interval with every rate under 0.001/s (no own I/O, a float "
          f"residue of subtree minus children): {base['residue_points_per_interval']}")
    print("recipe | InfluxDB/interval | Prom/interval | distinct Influx | distinct Prom | "
          "new Influx/day | new Prom/day | bytes/day | overwritten points/interval")
    for name, row in result["recipes"].items():
        print(f"{name} | {row['influx_series']} | {row['prom_series']} | {row['influx_distinct']}"
              f" | {row['prom_distinct']} | {row['new_influx_per_day']:,} | "
              f"{row['new_prom_per_day']:,} | {_si(row['bytes_per_day'])} | "
              f"{row['collisions_per_interval']}")
    for line in result["errors"][:5]:
        print(f"stderr: {line}")


def print_summary(results: list[dict[str, Any]]) -> None:
    print("\nprofile | InfluxDB series | Prometheus/VM series | lines/interval | bytes/day | "
          "new series/day (InfluxDB / VM)")
    print("--- | --- | --- | --- | --- | ---")
    for result in results:
        row = result["recipes"]["as emitted"]
        print(f"{result['profile']} | {row['influx_series']:,} | {row['prom_series']:,} | "
              f"{row['lines_per_interval']:g} | {_si(row['bytes_per_day'])} | "
              f"{row['new_influx_per_day']:,} / {row['new_prom_per_day']:,}")


def print_caps(results: list[dict[str, Any]]) -> None:
    config = load_config(None)
    peaks = {r["profile"]: r["recipes"]["as emitted"]["peak_series"] for r in results}
    print(f"\ncaps at the default config: process_io top = {config.process_io.top} (<= "
          f"{2 * config.process_io.top} (process, user) series per interval: top by bytes and "
          f"top by wait); cgroup_io max_cgroups = {config.cgroup_io.max_cgroups} cgroups per "
          f"interval (x the devices each did I/O on), max_depth = {config.cgroup_io.max_depth}; "
          "filesystems, io: no cap")
    for name, peak in peaks.items():
        print(f"  {name}: most series in one interval {peak}")
