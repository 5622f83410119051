#!/usr/bin/env python3
"""CPU time of ProcessIoCollector.collect() on a host with ~5,000 processes.

Not a pytest module: run it by hand (root sees every process; it needs no root otherwise).

    python tests/bench/bench_process_io.py [--processes 5000] [--cycles 20]

It starts one `sh` in a new session that forks N `sleep` children, times collect() with
time.process_time() (user + system: the kernel's work behind /proc reads counts), compares
the floor (the bare reads, as in side_procio.py) and the plain psutil.process_iter() +
io_counters() scan, then kills that session's process group
(by its own id, also on Ctrl-C).
"""

from __future__ import annotations

import argparse
import io
import os
import signal
import statistics
import subprocess
import time
from typing import Callable

import psutil

from diskprobe.collectors.base import CollectorContext
from diskprobe.collectors.process_io import ProcessIoCollector
from diskprobe.config import ProcessIoConfig
from diskprobe.log import Logger
from diskprobe.roots import HostRoots

TARGET_RATIO = 1.25  # issue #15: collect() within 1.25 x the floor (the bare reads)


def spawn(count: int) -> subprocess.Popen[bytes]:
    script = f"i=0; while [ $i -lt {count} ]; do sleep 3600 & i=$((i+1)); done; wait"
    return subprocess.Popen(["sh", "-c", script], start_new_session=True)


def wait_for(group: subprocess.Popen[bytes], count: int, timeout: float = 120.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        children = len(psutil.Process(group.pid).children())
        if children >= count:
            return children
        time.sleep(0.2)
    raise SystemExit(f"only {children} of {count} processes started")


def cpu_ms(call: Callable[[], object], cycles: int) -> list[float]:
    figures = []
    for _ in range(cycles):
        start = time.process_time()
        call()
        figures.append((time.process_time() - start) * 1000)
    return figures


def psutil_scan() -> int:
    count = 0
    for process in psutil.process_iter():
        try:
            process.io_counters()
            count += 1
        except psutil.Error:
            pass
    return count


def floor_scan() -> int:
    """The kernel's share: list /proc, open, read, close every <pid>/io, keep nothing."""
    count = 0
    proc = os.open("/proc", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in os.listdir(proc):
            if name.isdigit():
                try:
                    fd = os.open(name + "/io", os.O_RDONLY, dir_fd=proc)
                    os.read(fd, 1024)
                    os.close(fd)
                    count += 1
                except OSError:
                    pass
    finally:
        os.close(proc)
    return count


def report(label: str, figures: list[float]) -> float:
    median = statistics.median(figures)
    print(f"{label:<44} median {median:7.1f} ms  max {max(figures):7.1f} ms")
    return median


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--processes", type=int, default=5000)
    parser.add_argument("--cycles", type=int, default=20)
    args = parser.parse_args()
    group = spawn(args.processes)
    try:
        wait_for(group, args.processes)
        print(f"processes on the host: {len(psutil.pids())}")
        context = CollectorContext(roots=HostRoots(), log=Logger(io.StringIO()))
        collector = ProcessIoCollector(ProcessIoConfig(), context)
        report("collect(), first (prime: start time of all)", cpu_ms(collector.collect, 1))
        ours, floor = [], []
        for _ in range(args.cycles):  # interleaved: both see the same neighbours
            ours += cpu_ms(collector.collect, 1)
            floor += cpu_ms(floor_scan, 1)
        median = report("collect(), steady state", ours)
        floor_median = report("floor: open+read+close of every io file", floor)
        psutil_scan()  # fill psutil's Process cache, as a long-running agent would
        report("psutil.process_iter() + io_counters()", cpu_ms(psutil_scan, args.cycles))
        ratio = median / floor_median
        verdict = "met" if ratio <= TARGET_RATIO else "MISSED"
        print(f"collect()/floor {ratio:.3f} (target <= {TARGET_RATIO}): {verdict}")
    finally:
        os.killpg(group.pid, signal.SIGKILL)
        group.wait()


if __name__ == "__main__":
    main()
