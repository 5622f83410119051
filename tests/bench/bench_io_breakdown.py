"""bench_io.py's sections 2, 5 and 6: where collect()'s CPU goes: its main steps timed one by
one, cProfile of collect() and serialize(), and the fail-slow step's share of collect().
"""

from __future__ import annotations

import cProfile
import fnmatch
import io
import pstats
import statistics
import time
from typing import Any

from bench_io_host import INTERVAL_SEC, CycleClock, SyntheticHost, make_collector, next_cycle

from diskprobe.collectors.io import GAUGES
from diskprobe.compute.counters import counter_deltas
from diskprobe.compute.iostat import iostat_fields
from diskprobe.config import IoConfig
from diskprobe.serializers.influx import InfluxSerializer
from diskprobe.sources.diskstats import DiskStat, parse_diskstats_parts, read_diskstats_text


def phase_breakdown(host: SyntheticHost, config: IoConfig, cycles: int) -> str:
    """collect()'s main steps timed one by one with the functions collect() calls."""
    clock = CycleClock()
    collector = make_collector(host, config, clock)
    collector.collect()
    previous = {stat.name: stat for stat in _parse_all(read_diskstats_text(host.roots))}
    phases: dict[str, list[float]] = {
        "read /proc/diskstats": [],
        "split + parse_diskstats_parts (all lines)": [],
        "name selection (cached, as collect())": [],
        "counter_deltas (selected)": [],
        "iostat_fields (selected)": [],
        "whole collect()": [],
    }
    selected_names: dict[str, bool] = {}
    for _ in range(cycles):
        next_cycle(host, clock)
        marks = [time.process_time()]
        text = read_diskstats_text(host.roots)
        marks.append(time.process_time())
        stats = _parse_all(text)
        marks.append(time.process_time())
        selected = [stat for stat in stats if _selected(stat.name, config, selected_names)]
        marks.append(time.process_time())
        deltas = [counter_deltas(previous[s.name].counters, s.counters, GAUGES) for s in selected]
        marks.append(time.process_time())
        for delta, stat in zip(deltas, selected):
            if delta is not None:
                iostat_fields(delta, stat.counters, INTERVAL_SEC)
        marks.append(time.process_time())
        collector.collect()
        marks.append(time.process_time())
        for values, start, end in zip(phases.values(), marks, marks[1:]):
            values.append((end - start) * 1000.0)
        previous = {stat.name: stat for stat in stats}
    whole = statistics.median(phases["whole collect()"])
    rows = [f"  {len(selected)} of {len(stats)} devices selected; median CPU ms per cycle:"]
    for name, values in phases.items():
        share = statistics.median(values) / whole * 100.0 if whole else 0.0
        rows.append(f"    {name:<40} {statistics.median(values):7.2f}  ({share:4.0f} %)")
    return "\n".join(rows)


def _parse_all(text: str) -> list[DiskStat]:
    """Every line as collect() parses a changed one (it skips the parse of an unchanged one)."""
    parsed = (parse_diskstats_parts(line.split(None, 3)) for line in text.splitlines())
    return [stat for stat in parsed if stat is not None]


def _selected(name: str, config: IoConfig, cache: dict[str, bool]) -> bool:
    if name not in cache:
        included = not config.devices or any(fnmatch.fnmatchcase(name, p) for p in config.devices)
        excluded = any(fnmatch.fnmatchcase(name, p) for p in config.exclude)
        cache[name] = included and not excluded
    return cache[name]


def profile_report(host: SyntheticHost, config: IoConfig, cycles: int, top: int) -> str:
    clock = CycleClock()
    collector = make_collector(host, config, clock)
    serializer = InfluxSerializer()
    serializer.serialize(collector.collect().metrics)
    collect_profile, serialize_profile = cProfile.Profile(), cProfile.Profile()
    for _ in range(cycles):
        next_cycle(host, clock)
        collect_profile.enable()
        metrics = collector.collect().metrics
        collect_profile.disable()
        serialize_profile.enable()
        serializer.serialize(metrics)
        serialize_profile.disable()
    rows = []
    for name, profile in (("collect()", collect_profile), ("serialize()", serialize_profile)):
        out = io.StringIO()
        stats = pstats.Stats(profile, stream=out).strip_dirs().sort_stats(pstats.SortKey.TIME)
        stats.print_stats(top)
        listing = [line for line in out.getvalue().splitlines() if line.strip()]
        start = next(i for i, line in enumerate(listing) if line.lstrip().startswith("ncalls"))
        rows.append(f"  {name}, {cycles} cycles, by own time (tottime):")
        rows += [f"    {line}" for line in listing[start:]]
    return "\n".join(rows)


def fail_slow_report(host: SyntheticHost, cycles: int, rounds: int) -> str:
    """The fail-slow step's CPU against the rest of collect(), in the same cycles: this box is
    shared and noisy, and two separate runs differ by more than the step costs. Per round the
    median share over its cycles; then the min and median of those over the rounds."""
    lines = []
    for label, config in (
        ("default config (whole disks judged)", IoConfig()),
        ("all devices (exclude=[])", IoConfig(exclude=[])),
        (
            'worst case: every device judged, peer_groups=[["*"]]',
            IoConfig(exclude=[], peer_groups=[["*"]]),
        ),
    ):
        shares, totals, step_ms, rest_ms = [], [], [], []
        for _ in range(rounds):
            steps, rests = _split_cycles(host, config, cycles)
            shares.append(statistics.median(a / b for a, b in zip(steps, rests)))
            totals.append(sum(steps) / sum(rests))  # with the once-per-slot work (state, window)
            step_ms.append(statistics.median(steps))
            rest_ms.append(statistics.median(rests))
        lines.append(
            f"  {label}\n      CPU ms/cycle: collect() without the step {min(rest_ms):6.1f} min "
            f"{statistics.median(rest_ms):6.1f} median; the step {min(step_ms):5.2f} min "
            f"{statistics.median(step_ms):5.2f} median\n      the step / the rest, per round: min "
            f"{min(shares):6.1%} median {statistics.median(shares):6.1%} max {max(shares):6.1%}"
            f"\n      all cycles' step / all cycles' rest (once-per-slot work included): min "
            f"{min(totals):6.1%} median {statistics.median(totals):6.1%}"
        )
    return "\n".join(lines)


def _split_cycles(
    host: SyntheticHost, config: IoConfig, cycles: int
) -> tuple[list[float], list[float]]:
    """Per cycle: CPU ms of the fail-slow step, and of the rest of collect()."""
    clock = CycleClock()
    collector = make_collector(host, config, clock)
    watch, spent = collector._fail_slow, [0.0]
    judge = watch.judge

    def timed(now: float, devices: Any) -> None:
        start = time.process_time()
        judge(now, devices)
        spent[0] += time.process_time() - start

    watch.judge = timed  # type: ignore[method-assign]
    for _ in range(3):
        next_cycle(host, clock)
        collector.collect()
    steps, rests = [], []
    for _ in range(cycles):
        next_cycle(host, clock)
        spent[0] = 0.0
        start = time.process_time()
        collector.collect()
        total = time.process_time() - start
        steps.append(spent[0] * 1000.0)
        rests.append((total - spent[0]) * 1000.0)
    return steps, rests

