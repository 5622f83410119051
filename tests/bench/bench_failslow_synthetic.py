"""Fail-slow on NVMe-class devices, SYNTHETIC: generated /proc/diskstats replayed through the
installed `diskprobe` (no device here is that fast and steady).

Three devices of one model (a fake HOST_SYS: model SYNTH, non-rotational) whose requests take
--base-ms each (0.05 ms: an NVMe read), times a uniform 0.8-1.25 noise; the kernel's way of
counting is followed: each request's time added in nanoseconds, the running total shown
truncated to whole milliseconds (blk-mq since Linux 5.0). The installed diskprobe runs with
`--trigger stdin`, interval 1 s, fail_slow_window 1 m; the harness writes the next diskstats
and sends a line once a second. Per scenario (--rates x --factors): --warmup seconds healthy
(every device's slowdown_ratio of those intervals reported), then one device --factor times
slower for up to two windows: the intervals to its W! line, and any other device flagged.
Scenarios run side by side (one diskprobe each). Run from the repository root:

    .venv/bin/python tests/bench/bench_failslow_synthetic.py [--rates 40,400] [--factors 1,2,3,5]
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: the shared helpers

from failslow_probe import diskprobe_command
from kernel_diskstats import RequestTimes, reads_line

from helpers import add_sys_block, write_diskstats
from lineproto import parse_line

DEVICES = ("nvme0n1", "nvme1n1", "nvme2n1")
SLOW = DEVICES[2]


class Replay:
    """One scenario: the fake host, its counters and its diskprobe."""

    def __init__(self, root: Path, rate: int, factor: float, args: argparse.Namespace) -> None:
        self.root, self.rate, self.factor, self.args = root, rate, factor, args
        self.times = RequestTimes(DEVICES, f"{rate}/{factor}")
        self.reads = dict.fromkeys(DEVICES, 0)
        for device in DEVICES:
            add_sys_block(root / "sys", device, device__model="SYNTH", queue__rotational="0")
        self.points: list[dict[str, Any]] = []
        self.stderr: list[str] = []

    def _step(self, slow: bool) -> None:
        lines = []
        for index, device in enumerate(DEVICES):
            factor = self.factor if slow and device == SLOW else 1.0
            ms = self.times.add(device, self.rate, self.args.base_ms * factor)
            self.reads[device] += self.rate
            lines.append(reads_line(259, index, device, self.reads[device], ms))
        write_diskstats(self.root / "proc", lines)

    def run(self) -> dict[str, Any]:
        config = self.root / "diskprobe.toml"
        config.write_text(  # a state file of its own: scenarios share device names
            f'interval = "1s"\nstate_file = "{self.root / "state.json"}"\n'
            '[io]\nfail_slow_window = "1m"\n'
            "[filesystems]\nenabled = false\n[smart]\nenabled = false\n"
            "[pressure]\nenabled = false\n[process_io]\nenabled = false\n"
            "[cgroup_io]\nenabled = false\n"
        )
        env = {"HOST_PROC": str(self.root / "proc"), "HOST_SYS": str(self.root / "sys"),
               "HOST_RUN": str(self.root / "run"), "PATH": "/usr/bin:/bin"}  # fmt: skip
        self._step(False)
        process = subprocess.Popen([*diskprobe_command(), "--config", str(config), "--trigger",
                                    "stdin"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
        threading.Thread(target=self._read, args=(process,), daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(process.stderr or ()),
                         daemon=True).start()  # fmt: skip
        warmup = int(self.args.warmup)
        try:
            for step in range(warmup + 120):
                self._step(step >= warmup)
                assert process.stdin is not None
                process.stdin.write("\n")
                process.stdin.flush()
                time.sleep(1.0)
                if step >= warmup and any("fail-slow" in line for line in self.stderr):
                    break
        finally:
            process.terminate()
            process.wait(10)
        return self._summary(warmup)

    def _read(self, process: subprocess.Popen[str]) -> None:
        for line in process.stdout or ():
            if line.startswith("diskprobe_io,"):
                point = parse_line(line.strip())
                self.points.append({"device": point.tags["device"], **point.fields})

    def _summary(self, warmup: int) -> dict[str, Any]:
        per_device = {device: [p for p in self.points if p["device"] == device]
                      for device in DEVICES}  # fmt: skip
        # the first point comes from the second batch (the first primes)
        healthy = [p.get("slowdown_ratio") for d in DEVICES for p in per_device[d][:warmup - 1]]
        judged = [r for r in healthy if r is not None]
        slowed = per_device[SLOW][warmup - 1:]
        flagged_at = next((i + 1 for i, p in enumerate(slowed) if p.get("fail_slow")), math.nan)
        ratios = [p["slowdown_ratio"] for p in slowed if "slowdown_ratio" in p]
        others = [line for line in self.stderr if "fail-slow" in line and f" {SLOW} " not in line]
        return {
            "rate": self.rate, "factor": self.factor,
            "expected_ms": self.rate * self.args.base_ms,
            "healthy_judged": f"{len(judged)}/{len(healthy)}",
            "healthy_max": max(judged, default=math.nan),
            "slowed_judged": f"{len(ratios)}/{len(slowed)}",
            "slowed_median": sorted(ratios)[len(ratios) // 2] if ratios else math.nan,
            "intervals": flagged_at, "others_flagged": len(others),
            "errors": len([line for line in self.stderr if line.startswith("E!")]),
        }  # fmt: skip


COLUMNS = ("rate", "factor", "expected_ms", "healthy_judged", "healthy_max", "slowed_judged",
           "slowed_median", "intervals", "others_flagged", "errors")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="40,400", help="reads per second per device")
    parser.add_argument("--factors", default="1,2,3,5", help="the slow device's slowdowns")
    parser.add_argument("--base-ms", type=float, default=0.05)
    parser.add_argument("--warmup", type=float, default=60.0)
    args = parser.parse_args()
    rates = [int(text) for text in args.rates.split(",")]
    factors = [float(text) for text in args.factors.split(",")]
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as folder:
        replays = [Replay(Path(folder) / f"{rate}-{factor:g}", rate, factor, args)
                   for rate in rates for factor in factors]  # fmt: skip
        threads = [threading.Thread(target=lambda r=r: results.append(r.run())) for r in replays]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    print(f"SYNTHETIC: peers at {args.base_ms} ms a read, interval 1 s, window 1 m")
    print(" | ".join(COLUMNS))
    for row in sorted(results, key=lambda r: (r["rate"], r["factor"])):
        print(" | ".join(f"{row[c]:.2f}" if isinstance(row[c], float) else str(row[c])
                         for c in COLUMNS))  # fmt: skip


if __name__ == "__main__":
    main()
