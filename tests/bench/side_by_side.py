#!/usr/bin/env python3
"""diskprobe side by side with what users would run instead, CPU per cycle in the same run.

    python tests/bench/side_by_side.py                  # every section, 5 rounds each
    python tests/bench/side_by_side.py --only io,fs     # some sections
    python tests/bench/side_by_side.py --quick          # a short run: does it all still work?

Needs root (mount namespaces, 5,000 processes) and Debian's prometheus-node-exporter. Each
section builds its own synthetic host, runs the installed diskprobe (trigger = "stdin") and
the other tool as processes, and reads both processes' CPU from /proc/<pid>/stat around the
same cycles (sidelib.py); it prints per-round figures and the min / median ratios:

  io      side_io.py: 4,000 busy block devices, against node_exporter's diskstats collector
  fs      side_fs.py: 10,000 mounts (2,000 binds + 8,000 tmpfs), against its filesystem one
  fs-steady  side_fs_steady.py: the same once diskprobe's forecast windows are full
  procio  side_procio.py: 5,000 processes, against the floor (open/read/close /proc/<pid>/io)

The machine it ran on is printed first: on a shared VM, compare the ratios, not the times.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).parent))

import side_fs
import side_fs_steady
import side_io
import side_procio
from sidelib import NODE_EXPORTER

Section = Callable[[int, int, Path], str]
FULL: dict[str, Section] = {
    "io": lambda rounds, cycles, work: side_io.run(rounds, cycles, work),
    "fs": lambda rounds, cycles, work: side_fs.run(rounds, cycles, work),
    "fs-steady": lambda rounds, cycles, work: side_fs_steady.run(rounds, cycles, work),
    "procio": lambda rounds, cycles, work: side_procio.run(rounds, cycles, work),
}
QUICK: dict[str, Section] = {  # small sizes, 2 rounds of 2 cycles: that it runs, not figures
    "io": lambda _r, _c, work: side_io.run(2, 2, work, devices=400, period=0.5),
    "fs": lambda _r, _c, work: side_fs.run(2, 2, work, binds=200, tmpfs=800),
    "fs-steady": lambda _r, _c, work: side_fs_steady.run(2, 2, work, 200, 800, warm=30),
    "procio": lambda _r, _c, work: side_procio.run(2, 2, work, processes=500),
}
DEFAULT_CYCLES = {"io": 10, "fs": 5, "fs-steady": 5, "procio": 10}


def machine() -> str:
    model = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    memory_kib = int(Path("/proc/meminfo").read_text().split()[1])
    return (
        f"machine: {os.cpu_count()} CPUs ({model}), {memory_kib / 2**20:.0f} GiB, "
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}, "
        f"node_exporter {NODE_EXPORTER}; load average {os.getloadavg()[0]:.2f} at start"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default=",".join(FULL), help="sections (io,fs,fs-steady,procio)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per section (5)")
    parser.add_argument("--cycles", type=int, help=f"cycles per round (default {DEFAULT_CYCLES})")
    parser.add_argument("--quick", action="store_true", help="2 rounds of 2 small cycles")
    args = parser.parse_args(argv)
    sections = QUICK if args.quick else FULL
    wanted = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = [name for name in wanted if name not in sections]
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}; known: {', '.join(FULL)}")
    print(machine(), flush=True)
    for name in wanted:
        started = time.monotonic()
        cycles = args.cycles or DEFAULT_CYCLES[name]
        with tempfile.TemporaryDirectory(prefix=f"side-{name}-", dir="/var/tmp") as work:
            print(sections[name](args.rounds, cycles, Path(work)), flush=True)
        print(f"({name}: {time.monotonic() - started:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
