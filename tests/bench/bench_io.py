#!/usr/bin/env python3
"""Benchmark of the diskprobe_io collector on a Kubernetes-node-sized synthetic /proc/diskstats.

Not a pytest module (the name does not match test_*.py): run it by hand, see README.md here.

    python tests/bench/bench_io.py [--devices 4000] [--cycles 200] [--long-cycles 10000]

Everything runs on a generated HOST_PROC / HOST_SYS / HOST_RUN tree in a temp dir: ~50 % loop
devices, ~37 % dm-N (with dm names in /sys), NVMe and SCSI disks with partitions (model and
serial in the udev database), 20-field lines. Before every cycle the diskstats file is
rewritten with advanced counters (not timed) and the collector's clock moves on 10 s.

  1. CPU (time.process_time) and wall time per cycle: collect(), collect() + InfluxSerializer,
     with the default IoConfig (loop* excluded) and with every device included (exclude=[]).
  2. Where collect()'s time goes, phase by phase (no profiler overhead).
  3. ru_maxrss, VmHWM and current RSS (/proc/self/statm) after 100 and after --long-cycles
     cycles of collect(), in a fresh child process; capped by --rss-budget seconds (0: no cap).
  4. InfluxSerializer against influxdb-client's Point.to_line_protocol(): time per batch,
     and whether the output is identical, or equivalent once parsed, with the differences.
  5. With --profile, or when the 20 ms target is missed: cProfile of collect() and serialize().
  6. The fail-slow step's CPU against the rest of collect().

The synthetic node: bench_io_host.py; sections 2, 5 and 6: bench_io_breakdown.py; 3:
bench_io_memory.py; 4: bench_io_lines.py.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench_io_breakdown import fail_slow_report, phase_breakdown, profile_report
from bench_io_host import (
    TARGET_DEVICES,
    CycleClock,
    SyntheticHost,
    make_collector,
    make_devices,
    next_cycle,
    percentile,
    summary,
)
from bench_io_lines import serializer_report
from bench_io_memory import rss_child, rss_report

from diskprobe.config import IoConfig
from diskprobe.serializers.influx import InfluxSerializer

TARGET_CPU_MS = 20.0


@dataclass
class Timing:
    label: str
    config: IoConfig
    serialize: bool
    cpu_ms: list[float]
    wall_ms: list[float]
    points: int

    def report(self) -> str:
        median = statistics.median(self.cpu_ms)
        slow = [
            f"#{index + 1} {value:.0f} ms"
            for index, value in enumerate(self.cpu_ms)
            if value > 2 * median
        ]
        lines = [
            f"  {self.label:<48} {self.points:5d} points",
            f"      CPU  ms/cycle: {summary(self.cpu_ms)}",
            f"      wall ms/cycle: {summary(self.wall_ms)}",
        ]
        if slow:
            lines.append(f"      cycles over 2x the median CPU: {', '.join(slow[:8])}")
        return "\n".join(lines)


def time_cycles(
    host: SyntheticHost, label: str, config: IoConfig, cycles: int, serialize: bool
) -> Timing:
    clock = CycleClock()
    collector = make_collector(host, config, clock)
    serializer = InfluxSerializer()
    for _ in range(3):  # first reads of /sys and udev, and the serializer's caches
        next_cycle(host, clock)
        serializer.serialize(collector.collect().metrics)
    cpu, wall, points = [], [], 0
    for _ in range(cycles):
        next_cycle(host, clock)
        cpu_start, wall_start = time.process_time(), time.perf_counter()
        collection = collector.collect()
        if serialize:
            serializer.serialize(collection.metrics)
        cpu_end, wall_end = time.process_time(), time.perf_counter()
        cpu.append((cpu_end - cpu_start) * 1000.0)
        wall.append((wall_end - wall_start) * 1000.0)
        points = len(collection.metrics)
    return Timing(label, config, serialize, cpu, wall, points)


def python_speed_ms() -> float:
    """CPU ms of a fixed pure-Python loop: to compare figures between machines."""
    best = math.inf
    for _ in range(3):
        start, total = time.process_time(), 0
        for number in range(1_000_000):
            total += number
        best = min(best, (time.process_time() - start) * 1000.0)
    return best


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="diskprobe_io collector benchmark on a synthetic 4,000-device node",
    )
    parser.add_argument("--devices", type=int, default=TARGET_DEVICES, help="devices (4000)")
    parser.add_argument("--cycles", type=int, default=200, help="timed cycles per variant (200)")
    parser.add_argument(
        "--long-cycles", type=int, default=10_000, help="cycles of the RSS run (10000)"
    )
    parser.add_argument(
        "--rss-budget",
        type=float,
        default=60.0,
        help="stop the RSS run after this many seconds, 0: never (60)",
    )
    parser.add_argument("--rss-serialize", action="store_true", help="serialize in the RSS run")
    parser.add_argument("--batches", type=int, default=20, help="serializer batches (20)")
    parser.add_argument("--profile", action="store_true", help="cProfile even if on target")
    parser.add_argument("--skip-rss", action="store_true", help="skip the RSS run")
    parser.add_argument("--rss-only", action="store_true", help="only the RSS run")
    parser.add_argument("--seed", type=int, default=1, help="random seed of the synthetic host")
    parser.add_argument("--rss-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--fail-slow-only", action="store_true", help="only the fail-slow cost comparison (6.)"
    )
    parser.add_argument("--rounds", type=int, default=5, help="fail-slow comparison rounds (5)")
    return parser.parse_args(argv)


def _introduce(host: SyntheticHost, args: argparse.Namespace, workdir: Path) -> None:
    kinds: dict[str, int] = {}
    for device in host.devices:
        kinds[device.kind] = kinds.get(device.kind, 0) + 1
    size = (workdir / "proc" / "diskstats").stat().st_size
    print(
        f"diskprobe_io benchmark: {args.devices} devices "
        f"({', '.join(f'{n} {k}' for k, n in kinds.items())}; "
        f"{len(host.active)} active), diskstats {size / 1e3:.0f} kB\n"
        f"Python {sys.version.split()[0]} on {os.cpu_count()} CPUs; speed reference: "
        f"a 1M-iteration pure-Python loop takes {python_speed_ms():.0f} ms CPU here"
    )


def _target(timings: list[Timing], devices: int) -> bool:
    """The target's lines; True when the default config missed it."""
    print(f"\nTarget: < {TARGET_CPU_MS:.0f} ms CPU per cycle at {TARGET_DEVICES} devices")
    missed = False
    for timing in timings:
        mean, p95 = statistics.fmean(timing.cpu_ms), percentile(timing.cpu_ms, 0.95)
        ok = p95 < TARGET_CPU_MS
        missed |= not ok and timing.config.exclude == IoConfig().exclude
        print(
            f"  {timing.label:<48} min {min(timing.cpu_ms):6.1f}  mean {mean:6.1f}  "
            f"p95 {p95:6.1f}  "
            f"{'met' if ok else 'MISSED'}"
        )
    if devices < TARGET_DEVICES:
        print(f"  (only {devices} devices: not the target's size)")
    return missed


def _sections(host: SyntheticHost, args: argparse.Namespace) -> None:
    """Sections 1 to 6 (5 only with --profile or when the target is missed)."""
    print(f"\n1. CPU and wall time per cycle, {args.cycles} cycles (file rewrite not timed)")
    timings = []
    for label, config, serialize in (
        ("collect(), default config (loop* excluded)", IoConfig(), False),
        ("collect() + serialize(), default config", IoConfig(), True),
        ("collect(), all devices (exclude=[])", IoConfig(exclude=[]), False),
        ("collect() + serialize(), all devices", IoConfig(exclude=[]), True),
    ):
        timing = time_cycles(host, label, config, args.cycles, serialize)
        timings.append(timing)
        print(timing.report(), flush=True)

    print("\n2. Where collect() spends its time")
    for label, config in (
        ("default config", IoConfig()),
        ("all devices", IoConfig(exclude=[])),
    ):
        print(f"  {label}: {phase_breakdown(host, config, 30).lstrip()}", flush=True)

    if not args.skip_rss:
        print(f"\n3. Memory over {args.long_cycles} cycles of collect(), default config")
        print(rss_report(args), flush=True)

    print(f"\n4. InfluxSerializer vs influxdb-client, {args.batches} batches")
    print(serializer_report(host, args.batches), flush=True)

    missed = _target(timings, args.devices)
    print(f"\n6. The fail-slow step's cost, {args.rounds} rounds of 40 cycles")
    print(fail_slow_report(host, 40, args.rounds), flush=True)
    if args.profile or missed:
        print("\n5. cProfile (profiler overhead inflates Python-level calls)")
        for label, config in (
            ("default config", IoConfig()),
            ("all devices", IoConfig(exclude=[])),
        ):
            print(f"  --- {label}")
            print(profile_report(host, config, 30, 14), flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.rss_child:
        rss_child(args.devices, args.seed, args.long_cycles, args.rss_budget, args.rss_serialize)
        return 0
    started = time.perf_counter()
    if args.rss_only:
        print(f"Memory over {args.long_cycles} cycles of collect(), {args.devices} devices")
        print(rss_report(args))
        print(f"\ntotal {time.perf_counter() - started:.0f} s")
        return 0
    workdir = Path(tempfile.mkdtemp(prefix="diskprobe-bench-"))
    try:
        host = SyntheticHost(workdir, make_devices(args.devices, args.seed))
        _introduce(host, args, workdir)
        if args.fail_slow_only:
            print(f"\n6. The fail-slow step's cost, {args.rounds} rounds of {args.cycles} cycles")
            print(fail_slow_report(host, args.cycles, args.rounds), flush=True)
            return 0
        _sections(host, args)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"\ntotal {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
