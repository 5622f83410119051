"""The timing benchmarks that took over the fault and peer tests' old time bounds still run:
tests/bench/bench_stop.py, bench_slow_peers.py and bench_hung_mount.py, one round each;
bench_jobs.py (what the agent's job watch costs), one short round; bench_latency.py
([latency]'s cost to fio, and the agent's memory under churn), one short round of each mode;
and bench_latency_floor.py (what bare bpftrace programs cost fio), one short round.

The figures are not judged (a shared machine's timing is no test): each line must hold a min
and a median that are finite numbers, min <= median, for every figure the benchmark names.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ci import skip_or_fail

BENCH = Path(__file__).parent / "bench"
FIGURE = re.compile(r"^\s*(?P<name>.+?)\s+(?:\(\S+\)\s+)?(?:\d+\s+)?min\s+(?P<min>\S+)\s+"
                    r"\S*\s*median\s+(?P<median>\S+)")  # fmt: skip
TABLE_ROW = re.compile(r"^(?P<name>.+?)\s+(?P<n>\d+)\s+(?P<min>[\d.]+)\s+(?P<median>[\d.]+)$")

pytestmark = [pytest.mark.root, pytest.mark.slow]


def _run(*argv: str) -> str:
    if os.geteuid() != 0:
        skip_or_fail("the timing benchmarks need root (FUSE, mount namespaces)")
    done = subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _figures(text: str) -> dict[str, tuple[float, float]]:
    found = {}
    for line in text.splitlines():
        match = FIGURE.match(line) or TABLE_ROW.match(line.strip())
        if match:
            found[match["name"].strip()] = (float(match["min"]), float(match["median"]))
    return found


def _check(text: str, names: list[str]) -> None:
    figures = _figures(text)
    for name in names:
        assert name in figures, (name, text)
        low, middle = figures[name]
        assert math.isfinite(low) and math.isfinite(middle) and 0 <= low <= middle, (name, text)


def test_bench_stop_runs() -> None:
    out = _run(str(BENCH / "bench_stop.py"), "--rounds", "1", "--devices", "300")
    _check(out, ["smart read in flight, SIGTERM", "smart read in flight, eof",
                 "10ms x 300 disks, SIGHUP", "flood 50 MB, --once peak RSS"])  # fmt: skip


def test_bench_slow_peers_runs() -> None:
    out = _run(str(BENCH / "bench_slow_peers.py"), "--rounds", "1", "--slow-read", "0.5")
    _check(out, ["collect during", "blocking collect, 1 hung (timeout 1 s)",
                 "write, 8 idle clients", "close, 3 stuck clients and an idle one"])  # fmt: skip


def test_bench_hung_mount_runs() -> None:
    out = _run(str(BENCH / "bench_hung_mount.py"), "--rounds", "1", "--collects", "2",
               "--batches", "3")  # fmt: skip
    _check(out, ["first collect, timeout 1s (ms)", "later collect, mount stuck (ms)",
                 "close(), worker stuck (ms)", "diskprobe exit after EOF, statfs stuck (ms)"])


def test_bench_jobs_runs() -> None:
    out = _run(str(BENCH / "bench_jobs.py"), "--rounds", "1", "--seconds", "2", "--threads",
               "8", "--counts", "1", "--found", "2.5")  # fmt: skip
    figures = _figures(out)
    for name in ("agent, per job, 1 jobs", "default agent, [jobs] on",
                 "default agent, [jobs] off", "diagnose, one job"):  # fmt: skip
        low, middle = figures[name]  # a difference of two CPU times: noise may make it < 0
        assert math.isfinite(low) and math.isfinite(middle) and low <= middle, (name, out)


def test_bench_latency_runs() -> None:
    if shutil.which("bpftrace") is None or shutil.which("fio") is None:
        skip_or_fail("bench_latency needs bpftrace and fio (apt-get install bpftrace fio)")
    out = _run(str(BENCH / "bench_latency.py"), "--rounds", "1", "--seconds", "1")
    figures = _figures(out)
    for name in ("IOPS ratio, on / off", "agent CPU, % of a core per 10k IOPS",
                 "BPF ns per request", "busy CPU ns per request, on - off",
                 "reported for the device, % of fio's"):  # fmt: skip
        low, middle = figures[name]  # on - off is a difference of two noisy rates: maybe < 0
        assert math.isfinite(low) and math.isfinite(middle) and low <= middle, (name, out)
    out = _run(str(BENCH / "bench_latency.py"), "--churn", "100", "--cgroups", "5")
    _check(out, ["agent VmRSS, kB", "bpftrace VmRSS, kB"])


def test_bench_latency_floor_runs() -> None:
    if shutil.which("bpftrace") is None or shutil.which("fio") is None:
        skip_or_fail("bench_latency_floor needs bpftrace and fio (apt-get install bpftrace fio)")
    out = _run(str(BENCH / "bench_latency_floor.py"), "--rounds", "1", "--seconds", "1")
    _check(out, [f"IOPS ratio, {name}" for name in (
        "one tracepoint, empty", "two tracepoints, counting", "two tracepoints, a start map",
        "latency.bt")])  # fmt: skip
