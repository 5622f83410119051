#!/usr/bin/env python3
"""What a really hung mount costs: collect, close(), batch and exit times beside a FUSE mount
whose statfs never answers (tests/fuse_hang.py).

Not a pytest module: tests/test_fs_hung_mount.py checks the behaviour without timing it; this
measures it. Run it by hand, as root, with /dev/fuse and mfusepy (the test extra):

    .venv/bin/python tests/bench/bench_hung_mount.py [--rounds 3] [--collects 5] [--batches 4]

The hung mount is seen by every process of its mount namespace (a df there would hang on it),
so the script runs itself again in a private one, `unshare --mount --pid --fork --mount-proc`,
as the test's docstring advises (--no-unshare: in the current one). Each round mounts
fuse_hang.py with the test's helpers, then
* in process: the first collect (it waits the statfs timeout), later collects while the mount
  is stuck (they should not wait for it), FilesystemsCollector.close() with the worker stuck;
* the diskprobe console script: the filesystems collector's duration_ms in the first batch
  and the later ones, the gaps between batches (the interval), the exit after EOF on stdin;
and it prints min and median of each figure over all rounds. Every round removes its mount
(flag removed, connection aborted, `umount -l`) and its processes, also on failure; and when
the private namespace ends, whatever is left in it goes with it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: the test's helpers

import test_fs_hung_mount as hung

INSIDE_ENV = "DISKPROBE_BENCH_HUNG_MOUNT_NS"  # set once the script runs in its own namespace
Figures = dict[str, list[float]]


def ms_since(started: float) -> float:
    return (time.monotonic() - started) * 1000.0


def in_process(directory: Path, timeout: float, collects: int, figures: Figures) -> None:
    mount = hung.start_hung_mount(directory)
    setup = hung.make_in_process(directory, timeout)
    worker: subprocess.Popen[bytes] | None = None
    try:
        started = time.monotonic()
        setup.collector.collect()
        figures[f"first collect, timeout {timeout:g}s (ms)"].append(ms_since(started))
        worker = setup.backend.helper_process
        for _ in range(collects):
            started = time.monotonic()
            setup.collector.collect()
            figures["later collect, mount stuck (ms)"].append(ms_since(started))
        started = time.monotonic()
        setup.collector.close()
        figures["close(), worker stuck (ms)"].append(ms_since(started))
    finally:
        setup.collector.close()  # again if it failed before: closing twice is harmless
        mount.close()  # frees the stuck worker, which then exits (its stdin is closed)
        if worker is not None:
            worker.wait(hung.HANG_GUARD_SEC)


def loop(directory: Path, timeout: float, interval: float, batches: int, figures: Figures) -> None:
    mount = hung.start_hung_mount(directory)
    probe = hung.spawn_diskprobe(hung.write_config(directory, f"{timeout:g}s", interval))
    try:
        probe.wait_for(
            lambda: len(probe.batches()) >= batches,
            hung.HANG_GUARD_SEC + batches * interval,
            f"fewer than {batches} batches",
        )
        got = probe.batches()
        durations = [float(batch.agent("filesystems").fields["duration_ms"]) for batch in got]
        figures[f"first batch, fs duration_ms, timeout {timeout:g}s"].append(durations[0])
        figures["later batches, fs duration_ms"].extend(durations[1:])
        stamps = [batch.agent("io").time_ns / 1e9 for batch in got]
        gaps = [later - earlier for earlier, later in zip(stamps, stamps[1:])]
        figures[f"gap between batches, interval {interval:g}s (s)"].extend(gaps)
        assert probe.process.stdin is not None
        started = time.monotonic()
        probe.process.stdin.close()
        probe.process.wait(hung.HANG_GUARD_SEC)
        figures["diskprobe exit after EOF, statfs stuck (ms)"].append(ms_since(started))
    finally:
        workers = probe.find_workers()  # found by their environment, even once orphaned
        if probe.process.poll() is None:
            probe.process.kill()
            probe.process.wait(hung.HANG_GUARD_SEC)
        mount.close()  # frees the worker diskprobe left behind, stuck in the statfs
        hung._wait_until(lambda: all(w.finished() for w in workers), hung.HANG_GUARD_SEC)
        for worker in workers:
            worker.reap()  # our child if this is PID 1 of the private namespace


def report(figures: Figures) -> None:
    width = max(len(name) for name in figures)
    print(f"{'figure':<{width}}  {'n':>3}  {'min':>9}  {'median':>9}")
    for name, values in figures.items():
        low, mid = min(values), statistics.median(values)
        print(f"{name:<{width}}  {len(values):>3}  {low:>9.3f}  {mid:>9.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="mounts set up, per part")
    parser.add_argument("--collects", type=int, default=5, help="later collects per round")
    parser.add_argument("--batches", type=int, default=4, help="batches per round, the first too")
    parser.add_argument("--stat-timeout", type=float, default=1.0, help="seconds")
    parser.add_argument("--interval", type=float, default=2.0, help="diskprobe's, seconds")
    parser.add_argument("--no-unshare", action="store_true", help="stay in this namespace")
    args = parser.parse_args()
    if os.geteuid() != 0 or not Path("/dev/fuse").exists():
        sys.exit("bench_hung_mount: needs root and /dev/fuse")
    if not args.no_unshare and os.environ.get(INSIDE_ENV) != "1":
        unshare = shutil.which("unshare")
        if unshare is None:
            sys.exit("bench_hung_mount: no unshare (util-linux); --no-unshare to run here")
        command = ["--mount", "--pid", "--fork", "--mount-proc", sys.executable, *sys.argv]
        os.execve(unshare, [unshare, *command], {**os.environ, INSIDE_ENV: "1"})
    figures: Figures = defaultdict(list)  # figure -> values, in the order first measured
    for number in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="bench-hung-") as directory:
            in_process(Path(directory), args.stat_timeout, args.collects, figures)
        with tempfile.TemporaryDirectory(prefix="bench-hung-") as directory:
            loop(Path(directory), args.stat_timeout, args.interval, args.batches, figures)
        print(f"round {number + 1} of {args.rounds} done", file=sys.stderr)
    report(figures)


if __name__ == "__main__":
    main()
