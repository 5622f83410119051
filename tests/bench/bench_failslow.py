"""Fail-slow benchmark on real slow devices: detection time per slowdown, false flags over time.

The set-up of tests/test_failslow_devices.py (loop devices on tests/fuse_delay.py files, the
same fio job on each, the installed `diskprobe` judging them as one peer group), run longer:

(i)  per slowdown factor (--factors, default 2,5,10): the delay that makes one device's
     await that multiple of its peers' is calibrated first (measured from /proc/diskstats);
     or per fixed extra delay (--added-ms, e.g. 0.3,1.2,20: fast devices, issue 27); then a
     fresh diskprobe runs --warmup seconds healthy (every device's slowdown_ratio of those
     intervals is reported: none is slower to begin with), the delay comes on, and the time
     to the W! line and to the first fail_slow=true point is taken, in seconds and in the slow
     device's intervals (up to two windows), then the time to recover (I!) once the delay is
     gone (up to a window and a half);
(ii) --minutes of SHARED load changes (every device's rate_iops changed together every
     --change-every seconds, at random, with random bursts) and no delay: every flag is a
     false one; it reports the device-intervals judged and the slowdown_ratio they showed.

--base-ms gives every request that delay, healthy or not (fast peers: 0.3); --reads-only drops
fio's writes. Needs root, /dev/fuse, fio and mfusepy. Run from the repository root:
    .venv/bin/python tests/bench/bench_failslow.py [--window 1m] [--minutes 20]
    .venv/bin/python tests/bench/bench_failslow.py --base-ms 0.3 --iops 40 --reads-only \
        --interval 1s --devices 3 --added-ms 0.3,1.2,20 --factors "" --minutes 0
See tests/bench/README.md.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: the shared helpers

import failslow_probe as fp
from diskprobe.durations import parse_duration
from failslow_host import Load, SlowHost, slow_host

START_TIMEOUT_SEC = 15.0
RATES = (50, 100, 150, 200, 300, 400)  # shared rate_iops per direction, chosen at random
BURST_CHANCE = 0.25  # of a change being a burst: 2-4x the current rate for half a period
BURST_CAP = 800


def _skip(reason: str) -> None:
    sys.exit(f"bench_failslow: {reason}")


def _start(workdir: Path, host: SlowHost, args: argparse.Namespace) -> fp.Diskprobe:
    probe = fp.Diskprobe(workdir, host.devices, args.interval, args.window)
    if not probe.wait_for(lambda: bool(probe.samples()), START_TIMEOUT_SEC):
        probe.stop()
        sys.exit(f"diskprobe gave no diskprobe_io point: {probe.stderr[-5:]}")
    return probe


def _first(lines: fp.Lines) -> float:
    return lines[0][0] if lines else math.nan


def detection_run(host: SlowHost, factor: float, args: argparse.Namespace,
                  added_ms: float | None = None) -> dict[str, Any]:  # fmt: skip
    """One slowdown: calibrate (or a fixed extra delay), warm up, delay on until W! (or two
    windows), off until I!."""
    slow, window = host.devices[1], parse_duration(args.window)
    host.set_delays({})
    host.set_load(Load(args.iops, reads_only=args.reads_only))
    if added_ms is None:
        delay_ms, calibrated = host.calibrate(slow, factor)
    else:
        delay_ms, calibrated = added_ms, math.nan
    probe = _start(host.workdir / f"diskprobe-{factor:g}x-{delay_ms:g}", host, args)
    try:
        time.sleep(args.warmup)
        healthy = probe.samples()
        host.set_delays({slow: delay_ms})
        on = time.monotonic()
        probe.wait_for(lambda: bool(probe.fail_slow_lines(slow)[0]), 2 * window)
        host.set_delays({})
        off = time.monotonic()
        if probe.fail_slow_lines(slow)[0]:
            probe.wait_for(lambda: bool(probe.fail_slow_lines(slow)[1]), 1.5 * window)
        samples = probe.samples()
        warned, cleared = probe.fail_slow_lines(slow)
        others = [line for _, line in probe.log("", "fail-slow") if f" {slow} " not in line]
    finally:
        probe.stop()
    interval = parse_duration(args.interval)
    slowed = fp.between(samples, on + interval + 0.5, off + 0.5)
    truth, found = fp.await_ratios(slowed, slow), fp.ratios([s for s in slowed if s.device == slow])
    first_true = next((s.arrived for s in samples if s.device == slow and s.fail_slow), math.nan)
    mine = [s for s in samples if s.device == slow and s.arrived > on]
    intervals = next((i + 1 for i, s in enumerate(mine) if s.fail_slow), math.nan)
    before = fp.ratios(healthy)
    return {
        "factor": factor, "delay_ms": delay_ms, "calibrated": calibrated,
        "healthy_judged": len(before), "healthy_max": max(before, default=math.nan),
        "intervals": intervals,
        "await_ratio": statistics.median(truth) if truth else math.nan,
        "slowdown_ratio": statistics.median(found) if found else math.nan,
        "share_2x": sum(r >= 2.0 for r in found) / len(found) if found else math.nan,
        "undefined": sum(1 for s in slowed if s.device == slow and s.ratio is None),
        "warned_sec": _first(warned) - on, "first_true_sec": first_true - on,
        "cleared_sec": _first(cleared) - off, "false_flags": len(others),
    }  # fmt: skip


def long_run(host: SlowHost, args: argparse.Namespace) -> dict[str, Any]:
    """Random shared load changes, no delay, for --minutes: every flag is a false one."""
    rng = random.Random(args.seed)
    host.set_delays({})
    host.set_load(Load(args.iops, reads_only=args.reads_only))
    probe = _start(host.workdir / "diskprobe-long", host, args)
    end, changes, bursts = time.monotonic() + 60.0 * args.minutes, 0, 0
    try:
        while time.monotonic() < end:
            rate = rng.choice(RATES)
            host.set_load(Load(rate, reads_only=args.reads_only))
            changes += 1
            if rng.random() < BURST_CHANCE:
                time.sleep(args.change_every / 2)
                burst = min(BURST_CAP, rate * rng.choice((2, 3, 4)))
                host.set_load(Load(burst, reads_only=args.reads_only))
                bursts += 1
                time.sleep(args.change_every / 2)
            else:
                time.sleep(args.change_every)
        samples, flags = probe.samples(), probe.log("W! ", "fail-slow")
    finally:
        probe.stop()
    found = fp.ratios(samples)
    return {
        "minutes": args.minutes, "changes": changes, "bursts": bursts,
        "device_intervals": len(samples), "judged": len(found),
        "false_flags": len(flags), "fail_slow_points": sum(s.fail_slow for s in samples),
        "max_ratio": max(found, default=math.nan),
        "share_2x": sum(r >= 2.0 for r in found) / len(found) if found else math.nan,
        "share_1_5x": sum(r >= 1.5 for r in found) / len(found) if found else math.nan,
        "per_device": fp.per_device(samples, host.devices), "flag_lines": flags,
    }  # fmt: skip


def _table(rows: list[dict[str, Any]], columns: list[tuple[str, str, str]]) -> str:
    """columns: (key, header, format spec)."""
    cells = [[header for _, header, _ in columns]]
    cells += [[format(row[key], spec) for key, _, spec in columns] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(line, widths)) for line in cells)


DETECTION_COLUMNS = [
    ("factor", "target", "g"), ("delay_ms", "delay ms", ".2f"),
    ("calibrated", "calibrated", ".2f"), ("healthy_judged", "healthy judged", "d"),
    ("healthy_max", "healthy max ratio", ".2f"), ("await_ratio", "await ratio", ".2f"),
    ("slowdown_ratio", "slowdown_ratio", ".2f"), ("share_2x", ">=2x", ".0%"),
    ("undefined", "no ratio", "d"), ("warned_sec", "W! after s", ".1f"),
    ("first_true_sec", "fail_slow after s", ".1f"), ("intervals", "after intervals", "g"),
    ("cleared_sec", "I! after s", ".1f"),
    ("false_flags", "others flagged", "d"),
]  # fmt: skip
LONG_COLUMNS = [
    ("minutes", "minutes", "g"), ("changes", "changes", "d"), ("bursts", "bursts", "d"),
    ("device_intervals", "device-intervals", "d"), ("judged", "judged", "d"),
    ("false_flags", "false flags", "d"), ("fail_slow_points", "fail_slow points", "d"),
    ("max_ratio", "max ratio", ".2f"), ("share_2x", ">=2x", ".2%"),
    ("share_1_5x", ">=1.5x", ".2%"),
]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", default="1m", help="[io] fail_slow_window (min 1m)")
    parser.add_argument("--interval", default="2s", help="diskprobe's interval")
    parser.add_argument("--devices", type=int, default=4, help="loop devices in the group")
    parser.add_argument("--iops", type=int, default=100, help="base rate_iops per direction")
    parser.add_argument("--factors", default="2,5,10", help="slowdowns for (i); empty: skip")
    parser.add_argument("--warmup", type=float, default=10.0, help="healthy seconds before")
    parser.add_argument("--minutes", type=float, default=20.0, help="(ii) length; 0: skip")
    parser.add_argument("--change-every", type=float, default=20.0, help="(ii) seconds")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--base-ms", type=float, default=0.0, help="every request's delay")
    parser.add_argument("--added-ms", default="", help="fixed extra delays for (i)")
    parser.add_argument("--reads-only", action="store_true", help="fio reads, no writes")
    args = parser.parse_args()
    factors = [float(text) for text in args.factors.split(",") if text]
    added = [float(text) for text in args.added_ms.split(",") if text]
    with slow_host(args.devices, _skip, base_ms=args.base_ms) as host:
        writes = "" if args.reads_only else f" + {args.iops} writes/s"
        print(f"devices {host.devices}, window {args.window}, interval {args.interval}, "
              f"base {args.iops} reads/s{writes} each, {args.base_ms} ms a request",
              flush=True)  # fmt: skip
        rows = []
        for factor in factors:
            rows.append(detection_run(host, factor, args))
            print(_table(rows[-1:], DETECTION_COLUMNS), flush=True)
        for extra in added:
            nominal = (args.base_ms + extra) / args.base_ms if args.base_ms else math.nan
            rows.append(detection_run(host, nominal, args, extra))
            print(_table(rows[-1:], DETECTION_COLUMNS), flush=True)
        long = long_run(host, args) if args.minutes > 0 else None
    if rows:
        print(f"\n(i) detection, window {args.window}\n{_table(rows, DETECTION_COLUMNS)}")
    if long is not None:
        print(f"\n(ii) shared load changes, no delay\n{_table([long], LONG_COLUMNS)}")
        print(long["per_device"])
        for _, line in long["flag_lines"]:
            print(f"  {line}")


if __name__ == "__main__":
    main()
