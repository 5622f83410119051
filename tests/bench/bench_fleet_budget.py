"""The per-host budget (issue 28 section 1): series, lines, bytes and series churn per day of
the REAL diskprobe at its default configuration, on three synthetic hosts (fleet_profiles.py).

For each profile a SyntheticHost (budget_host.py, budget_pods.py) is built in a temp dir and
the installed `diskprobe` runs on it (HOST_PROC/HOST_SYS/HOST_RUN/HOST_MOUNT_PREFIX, SMART
through tests/fake_smartctl replaying golden corpus drives) with `--trigger stdin`: one stdin
line per simulated 10 s interval (the default interval), the host moved on one interval before
each line (pods replaced, tools started and ended, rates drifting). The first `--warmup-hours`
set the baseline; series first seen after it are the churn, scaled to a day by 24 / the
simulated hours after the warm-up. SMART is read once per `[smart] interval` (30 min) on the
real clock, so within a run each drive is read once: its lines count per read cycle, x48 a day.
Every other measurement counts per interval, x8,640 a day (the defaults, read from
diskprobe.config). Run from the repository root:

    .venv/bin/python tests/bench/bench_fleet_budget.py                 # ~10 min
    .venv/bin/python tests/bench/bench_fleet_budget.py --quick --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: the shared helpers

from budget_count import Emitted, Tally, parse_batch
from budget_host import SyntheticHost
from budget_recipes import read_recipes
from budget_report import print_caps, print_profile, print_summary, summarize
from fleet_profiles import PROFILES

from helpers import installed_command

TESTS = Path(__file__).resolve().parent.parent
FAKE_SMARTCTL = TESTS / "fake_smartctl" / "smartctl"
RECIPES_CONF = TESTS.parent / "telegraf" / "diskprobe-fleet-tags.conf"
BATCH_END = "diskprobe_agent,collector=jobs,"  # the last collector's agent point
# Variants: the same host with diskprobe's own settings for fewer series (docs: the recipes).
VARIANTS = {
    "training-lean": ("training", '[cgroup_io]\nmax_depth = 3\n[filesystems]\n'
                                  'ignore_mount_points = ["/var/lib/kubelet/*"]\n'),
}  # fmt: skip


class Runner:
    """One diskprobe on one synthetic host: a line on stdin, a batch back, until done."""

    def __init__(self, host: SyntheticHost, work: Path, extra_config: str) -> None:
        config = work / "diskprobe.toml"
        config.write_text(f'state_file = "{work / "state.json"}"\n'
                          f'[smart]\nsmartctl_path = "{FAKE_SMARTCTL}"\n' + extra_config)
        env = {k: v for k, v in os.environ.items() if not k.startswith("HOST_")}
        env.update(host.env())
        self.stderr = open(work / "stderr.log", "w+")  # noqa: SIM115 (closed in stop())
        self.process = subprocess.Popen(
            [*installed_command(), "--config", str(config), "--trigger", "stdin"], env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True)
        self.batches: list[list[str]] = []
        self._current: list[str] = []
        self._cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._current.append(line.rstrip("\n"))
            if line.startswith(BATCH_END):
                with self._cond:
                    self.batches.append(self._current)
                    self._current = []
                    self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def batch(self, timeout: float = 120.0) -> list[str]:
        """Trigger one batch and wait for it."""
        assert self.process.stdin is not None
        wanted = len(self.batches) + 1
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.batches) >= wanted
                                       or self.process.poll() is not None, timeout):  # fmt: skip
                raise RuntimeError(f"no batch within {timeout} s")
        if len(self.batches) < wanted:
            raise RuntimeError(f"diskprobe exited {self.process.returncode}: {self.errors()}")
        return self.batches[wanted - 1]

    def errors(self) -> list[str]:
        self.stderr.seek(0)
        return [line.rstrip() for line in self.stderr if line.startswith(("E!", "Traceback"))]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)
        self.stderr.close()


def run_profile(name: str, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    base, extra = VARIANTS.get(name, (name, ""))
    profile = PROFILES[base]()
    host = SyntheticHost(profile, work / "host", seed=args.seed, churn=not args.static)
    intervals = round(args.hours * 360)
    warmup = round(args.warmup_hours * 360)
    recipes = read_recipes(RECIPES_CONF)
    tallies = [Tally(warmup) for _ in recipes]
    host.step(0.5)
    runner = Runner(host, work, extra)
    started = last = time.monotonic()
    dump = open(args.dump, "a") if args.dump else None  # noqa: SIM115
    try:
        runner.batch()  # the first batch: collectors primed, no rates yet
        for index in range(intervals):
            if index == warmup:
                host.events["pods_replaced_in_warmup"] = host.events["pods_replaced"]
            if args.replace_at is not None and index == args.replace_at:
                host.pods.replace_all()
            now = time.monotonic()
            host.step(now - last)
            last = now
            lines = runner.batch()
            if dump is not None:
                dump.write("".join(line + "\n" for line in lines))
            batch: list[Emitted] = parse_batch(lines)
            for recipe, tally in zip(recipes, tallies):
                tally.add(index, batch, recipe)
        errors = runner.errors()
    finally:
        runner.stop()
        if dump is not None:
            dump.close()
    result = summarize(name, profile, host, recipes, tallies, intervals, warmup)
    result["errors"] = errors
    result["wall_seconds"] = round(time.monotonic() - started, 1)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", default="training,storage,vm,training-lean")
    parser.add_argument("--hours", type=float, default=6.0, help="simulated hours per profile")
    parser.add_argument("--warmup-hours", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument("--quick", action="store_true",
                        help="a few intervals per profile: checks that it works")
    parser.add_argument("--static", action="store_true", help="nothing starts, ends or moves on")
    parser.add_argument("--replace-at", type=int, help="replace every pod before this interval")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--dump", help="append every line diskprobe emitted to this file")
    args = parser.parse_args()
    if args.quick:
        args.hours, args.warmup_hours = 10 / 360, 4 / 360
    results = []
    with tempfile.TemporaryDirectory(prefix="diskprobe-budget.") as temp:
        for name in args.profiles.split(","):
            work = Path(temp) / name
            work.mkdir()
            results.append(run_profile(name, args, work))
            print_profile(results[-1])
    print_summary(results)
    print_caps(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 1 if any(r["errors"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
