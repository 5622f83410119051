#!/usr/bin/env python3
"""Exit latency and peak RSS of the installed `diskprobe` in the fault cases of tests/faults/.

Not a pytest module: the fault tests assert causes (a read still hung when diskprobe exited,
batches counted after a stop, bytes taken from a flood), never seconds or kilobytes; the
figures are measured here, by hand, on a machine quiet enough to mean something.

    .venv/bin/python tests/bench/bench_stop.py [--rounds 5] [--devices 3000]

- smart read in flight: SIGTERM, SIGINT or EOF while the fake smartctl hangs (deaf to SIGTERM,
  read timeout 1h): seconds from the request to the exit. The README promises a second;
  before issue #11 it was 17 s (the 20 s timeout) or never.
- 10ms interval: SIGTERM, SIGINT, SIGHUP or EOF at the shortest interval with --devices whole
  disks (every batch outruns the interval): seconds to the exit.
- flood: peak RSS (wait4's ru_maxrss) of `--once` while smartctl prints 50 MB (the read stops
  at 4 MiB; before: 176 MB).

Each prints the min and the median of --rounds rounds. It runs diskprobe as the fault tests do
(tests/faults/faultlib.py: the console script beside this interpreter) against a fake host in a
temp dir, and kills every process the fake smartctl noted.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: ci, lineproto
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "faults"))  # the fault helpers
from stoplib import Probe, many_devices, write_config
from test_fault_children import (
    DEVICE,
    alive,
    fake_drives,
    pids,
    start_with_read_in_flight,
    stop,
)
from test_fault_children import write_config as smart_config

from faultlib import DISKPROBE, diskprobe_env, make_fake_host


def kill_strays(root: Path) -> None:
    for role in ("smartctl", "child", "holder"):
        for pid in pids(root, role):
            if alive(pid, root):
                os.kill(pid, signal.SIGKILL)


def smart_read_exit(tmp: Path, how: str) -> float:
    """Seconds from `how` to the exit, with a hung SMART read in flight."""
    root = tmp / "fake"
    process = start_with_read_in_flight(make_fake_host(tmp / "host"), tmp, root, "hang")
    try:
        started = time.monotonic()
        stop(process, how)
        process.wait(60)
        return time.monotonic() - started
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        kill_strays(root)


def short_interval_exit(tmp: Path, how: str, devices: int) -> float:
    """Seconds from `how` to the exit at interval 10ms with `devices` disks."""
    host = make_fake_host(tmp / "host", many_devices(devices))
    config, _ = write_config(tmp, interval="10ms")
    probe = Probe(host, ["--config", str(config)])
    try:
        probe.wait_lines("diskprobe_agent,collector=io,", 3, timeout=60)
        return probe.stop(how, timeout=60)[1]
    finally:
        if probe.process.poll() is None:
            probe.process.kill()
            probe.process.wait()


def flood_rss_mb(tmp: Path) -> float:
    """Peak RSS (MB) of `--once` reading a drive whose smartctl prints 50 MB."""
    root = fake_drives(tmp / "fake", {DEVICE: "flood 50"})
    config = smart_config(tmp, f'devices = ["{DEVICE}"]\n')
    env = diskprobe_env({**make_fake_host(tmp / "host").env(), "FAKE_SMARTCTL_DIR": str(root)})
    args = [str(DISKPROBE), "--config", str(config), "--once", "--interval", "100ms"]
    process = subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        _, status, usage = os.wait4(process.pid, 0)  # this child's own peak, not all children's
        process.returncode = os.waitstatus_to_exitcode(status)
    finally:
        kill_strays(root)
    if process.returncode != 0:
        raise SystemExit(f"flood: diskprobe exited {process.returncode}")
    return usage.ru_maxrss / 1024  # KiB on Linux


def rounds(name: str, unit: str, count: int, measure: Callable[[Path], float]) -> None:
    figures = []
    for _ in range(count):
        with tempfile.TemporaryDirectory(prefix="bench_stop.") as tmp:
            figures.append(measure(Path(tmp)))
    print(f"{name:<32} min {min(figures):8.3f} {unit:<2}  median "
          f"{statistics.median(figures):8.3f} {unit:<2}  ({count} rounds)", flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds per figure (5)")
    parser.add_argument("--devices", type=int, default=3000, help="disks at 10ms (3000)")
    args = parser.parse_args()
    if not DISKPROBE.exists():
        raise SystemExit(f"{DISKPROBE} is not installed (pip install -e .)")
    print(f"diskprobe: {DISKPROBE}; load average {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} CPUs")  # fmt: skip
    for how in ("SIGTERM", "SIGINT", "eof"):
        rounds(f"smart read in flight, {how}", "s", args.rounds,
               lambda tmp, how=how: smart_read_exit(tmp, how))  # fmt: skip
    for how in ("SIGTERM", "SIGINT", "SIGHUP", "EOF"):
        rounds(f"10ms x {args.devices} disks, {how}", "s", args.rounds,
               lambda tmp, how=how: short_interval_exit(tmp, how, args.devices))  # fmt: skip
    rounds("flood 50 MB, --once peak RSS", "MB", args.rounds, flood_rss_mb)


if __name__ == "__main__":
    main()
