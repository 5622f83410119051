"""bench_io.py's section 3: ru_maxrss, VmHWM and current RSS (/proc/self/statm) after 100 and
after --long-cycles cycles of collect(), in a fresh child process (bench_io.py --rss-child), so
nothing else inflates the peak; capped by --rss-budget seconds (0: no cap).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_io_host import CycleClock, SyntheticHost, make_collector, make_devices, next_cycle

from diskprobe.config import IoConfig
from diskprobe.serializers.influx import InfluxSerializer

PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024
BENCH_IO = Path(__file__).resolve().with_name("bench_io.py")  # its --rss-child runs rss_child()


def rss_kib() -> int:
    with open("/proc/self/statm", encoding="ascii") as handle:
        return int(handle.read().split()[1]) * PAGE_KIB


def peak_rss_kib() -> int:
    """VmHWM: this process's own peak RSS. (ru_maxrss survives exec on Linux: in a child it
    starts at the parent's RSS at fork time, so it can overstate the child's peak.)"""
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def rss_child(devices: int, seed: int, cycles: int, budget_sec: float, serialize: bool) -> None:
    """Prints one JSON object: samples at checkpoints up to `cycles` (or the time budget)."""
    workdir = Path(tempfile.mkdtemp(prefix="diskprobe-bench-rss-"))
    try:
        host = SyntheticHost(workdir, make_devices(devices, seed))
        clock = CycleClock()
        collector = make_collector(host, IoConfig(), clock)
        serializer = InfluxSerializer()
        checkpoints = {100, 1000, 2500, 5000, 7500, cycles}
        samples: list[dict[str, float]] = []
        started = time.perf_counter()
        last, limited = cycles, False
        for cycle in range(1, cycles + 1):
            next_cycle(host, clock)
            metrics = collector.collect().metrics
            if serialize:
                serializer.serialize(metrics)
            elapsed = time.perf_counter() - started
            over_budget = (
                budget_sec > 0 and cycle >= 100 and elapsed * (cycle + 1) / cycle > budget_sec
            )
            if cycle in checkpoints or over_budget:
                gc.collect()
                samples.append(
                    {
                        "cycle": cycle,
                        "maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                        "hwm_kib": peak_rss_kib(),
                        "rss_kib": rss_kib(),
                        "gc_objects": len(gc.get_objects()),
                        "elapsed_s": elapsed,
                    }
                )
            if over_budget:
                last, limited = cycle, cycle < cycles
                break
        print(json.dumps({"samples": samples, "last": last, "budget_limited": limited}))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def rss_report(args: argparse.Namespace) -> str:
    argv = [sys.executable, str(BENCH_IO), "--rss-child"]
    argv += ["--devices", str(args.devices), "--seed", str(args.seed)]
    argv += ["--long-cycles", str(args.long_cycles), "--rss-budget", str(args.rss_budget)]
    if args.rss_serialize:
        argv.append("--rss-serialize")
    child = json.loads(subprocess.run(argv, check=True, capture_output=True, text=True).stdout)
    samples: list[dict[str, Any]] = child["samples"]
    rows = [
        f"  after {s['cycle']:6d} cycles: ru_maxrss {s['maxrss_kib']:6d} KiB, VmHWM "
        f"{s['hwm_kib']:6d} KiB, RSS now {s['rss_kib']:6d} KiB, gc-tracked objects "
        f"{s['gc_objects']:6d} ({s['elapsed_s']:.0f} s)"
        for s in samples
    ]
    first, last = samples[0], samples[-1]
    keys = ("maxrss_kib", "hwm_kib", "rss_kib", "gc_objects")
    growth = {key: last[key] - first[key] for key in keys}
    rows.append(
        f"  growth from cycle {first['cycle']} to {last['cycle']}: ru_maxrss "
        f"{growth['maxrss_kib']:+d} KiB, VmHWM {growth['hwm_kib']:+d} KiB, RSS "
        f"{growth['rss_kib']:+d} KiB, gc-tracked objects {growth['gc_objects']:+d}"
    )
    if child["budget_limited"]:
        rows.append(
            f"  (stopped at cycle {child['last']} by --rss-budget {args.rss_budget:.0f} s; "
            f"--rss-budget 0 runs all {args.long_cycles})"
        )
    return "\n".join(rows)
