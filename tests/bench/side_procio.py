#!/usr/bin/env python3
"""diskprobe_process_io at 5,000 processes against the floor: the bare /proc/<pid>/io reads.

    .venv/bin/python tests/bench/side_procio.py --rounds 5 --cycles 20 [--processes 5000]

It starts `--processes` sleeping `sleep`s in their own session (killed by their group id at
the end, also on error or Ctrl-C), then measures two processes side by side, cycle by cycle
interleaved, each one's CPU read from /proc/<pid>/stat around its own cycle:

* diskprobe as installed, `trigger = "stdin"`, only `[process_io]` on (every other section
  `enabled = false`), `min_bytes_per_sec = 0`: every process whose counters moved at all is a
  candidate. The scan is the same whatever the threshold (every io file is read, and parsed
  when its bytes changed); 0 only adds the few moving processes (the bench, diskprobe) to the
  ranking and details, which is the most work the collector does per cycle.
* the floor: a small Python process (same interpreter, started once so its start-up is not
  counted) that per stdin line lists /proc and opens, reads and closes every <pid>/io, keeps
  nothing, and answers one line.

The ratio diskprobe / floor is process_io's cost over the kernel's (target <= 1.25); RSS of
diskprobe is read after every round (target <= 40 MB and flat).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_process_io import spawn, wait_for
from sidelib import Diskprobe, Rounds, diskprobe_env, tree_cpu_sec

TARGET = 1.25
RSS_BUDGET_KIB = 40 * 1024
GROWTH_LIMIT_KIB = 1024
MARKER = b"diskprobe_agent,collector=process_io,"
WARMUP = 3  # cycles before timing: diskprobe's prime reads every process's start time

# The floor: what any reader of every process's io file must do each cycle.
FLOOR = f"""
import sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from bench_process_io import floor_scan
for _ in sys.stdin:
    floor_scan()
    sys.stdout.write("done\\n")
    sys.stdout.flush()
"""  # bench_process_io's floor loop, one scan per stdin line

CONFIG = """\
trigger = "stdin"
state_file = "{state}"
[io]
enabled = false
[filesystems]
enabled = false
[smart]
enabled = false
[pressure]
enabled = false
[cgroup_io]
enabled = false
[process_io]
enabled = true
min_bytes_per_sec = 0
"""


class Floor:
    """The floor loop as its own process: cycle() is one pass over /proc."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", FLOOR], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )

    def cycle(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(b"\n")
        self.process.stdin.flush()
        if self.process.stdout.readline() != b"done\n":
            raise RuntimeError(f"the floor loop stopped (exit {self.process.poll()})")

    def cpu_sec(self) -> float:
        return tree_cpu_sec(self.process.pid)

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(20)


def _measure(probe: Diskprobe, floor: Floor, rounds: int, cycles: int) -> tuple[Rounds, list[int]]:
    """Interleaved cycles, so both see the same neighbours; RSS (KiB) after each round.

    Each one's CPU is read at the start and end of the round, not around every cycle: the
    counters tick at 10 ms (USER_HZ 100), so per-cycle reads would add a tick of error to
    every ~60 ms cycle. Both wait idle on stdin while the other works.
    """
    for _ in range(WARMUP):
        probe.cycle()
        floor.cycle()
    table, rss = Rounds("diskprobe", "floor"), []
    for _ in range(rounds):
        ours, theirs = probe.cpu_sec(), floor.cpu_sec()
        for _ in range(cycles):
            probe.cycle()
            floor.cycle()
        table.add(probe.cpu_sec() - ours, floor.cpu_sec() - theirs, cycles)
        rss.append(probe.rss_kib())
    return table, rss


def _rss_report(rss: list[int]) -> str:
    """Flat: under 1 MiB of growth over the second half of the rounds (bench_soak's limit);
    a pymalloc arena (256 KiB) taken once early is warm-up, not growth."""
    peak, late = max(rss), rss[-1] - rss[len(rss) // 2 - 1 if len(rss) > 1 else 0]
    met = peak <= RSS_BUDGET_KIB and late < GROWTH_LIMIT_KIB
    return (
        f"  diskprobe RSS after each round (KiB): {' '.join(map(str, rss))}\n"
        f"  RSS peak {peak / 1024:.1f} MB, growth first->last {rss[-1] - rss[0]:+d} KiB, "
        f"over the second half {late:+d} KiB  (target <= {RSS_BUDGET_KIB // 1024} MB and "
        f"flat: {'met' if met else 'MISSED'})"
    )


def run(rounds: int, cycles: int, work: Path, processes: int = 5000) -> str:
    work.mkdir(parents=True, exist_ok=True)
    config = work / "procio.toml"
    config.write_text(CONFIG.format(state=work / "procio-state.json"))
    group = spawn(processes)
    probe: Diskprobe | None = None
    floor: Floor | None = None
    try:
        wait_for(group, processes)
        host = sum(1 for name in os.listdir("/proc") if name.isdigit())
        probe = Diskprobe(config, diskprobe_env({}), MARKER, work / "procio-diskprobe.log")
        floor = Floor()
        table, rss = _measure(probe, floor, rounds, cycles)
    finally:
        for tool in (probe, floor):
            if tool is not None:
                tool.stop()
        os.killpg(group.pid, signal.SIGKILL)
        group.wait()
    what = f"process_io at {host} processes (min_bytes_per_sec = 0)"
    return table.report(what, TARGET) + "\n" + _rss_report(rss)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--processes", type=int, default=5000)
    parser.add_argument("--quick", action="store_true", help="2 rounds of 3 cycles")
    parser.add_argument("--work", type=Path, help="keep the config and logs here")
    args = parser.parse_args()
    rounds, cycles = (2, 3) if args.quick else (args.rounds, args.cycles)
    if args.work is not None:
        print(run(rounds, cycles, args.work, args.processes))
        return
    with tempfile.TemporaryDirectory(prefix="side-procio-") as work:
        print(run(rounds, cycles, Path(work), args.processes))


if __name__ == "__main__":
    main()
