#!/usr/bin/env python3
"""What the agent's job watch ([jobs], collectors/jobs.py) costs, beside `diskprobe diagnose`.

Not a pytest module (tests/test_bench_timings.py runs it once, quickly, to see that it runs).
Run it by hand, as root (the agent must read the jobs' /proc/<tid>/syscall):

    python tests/bench/bench_jobs.py [--rounds 5] [--seconds 20] [--threads 64] [--counts 1,8]

Each job is shaped like a TensorFlow process: `--threads` threads, most waiting in futex (the
runtime's idle pools), four running a few ms now and then, the main thread waiting. For
1 and 8 such jobs, the installed agent (interval 5s, every other collector off, [jobs] with
`match` naming the jobs) runs `--seconds` after it found them; its CPU time (utime + stime of
its /proc/<pid>/stat) is compared, in the same round, with the same agent watching no job:
the difference per job and second is its cost, as a share of one core. Then the default
agent (every collector on, [jobs] as shipped: no accelerator here, no match) against the same
with [jobs] off: the watch must cost nothing where there is nothing to watch. And `diagnose`
watching one such job (its report's own `cost`). Printed: min and median over the rounds; the
machine is shared and noisy: ratios and medians, not one run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

DISKPROBE = [str(Path(sys.executable).with_name("diskprobe"))]
TOKEN = "bench-jobs-tf-shaped"
JOB = textwrap.dedent("""
    import sys, threading, time
    stop = threading.Event()
    def step():
        while not stop.wait(0.098):
            end = time.monotonic() + 0.002
            while time.monotonic() < end:
                pass
    for index in range(int(sys.argv[1]) - 1):
        threading.Thread(target=step if index < 4 else stop.wait, daemon=True).start()
    print("ready", flush=True)
    stop.wait()
""")
FOUND_SEC = 6.0  # the agent finds the jobs at its start-up discoveries (1, 2, 4 s)
SETTLE_SEC = 3.0  # a process is looked at once it has run this long (collectors/job_discovery)
OFF = "\n".join(f"[{name}]\nenabled = false" for name in ("io", "filesystems", "smart",
                                                          "pressure", "process_io", "cgroup_io"))


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def agent_cpu(config: str, seconds: float, workdir: Path, found: float = FOUND_SEC) -> float:
    """CPU seconds the agent used over `seconds`, after `found` seconds of start-up."""
    path = workdir / "diskprobe.toml"
    path.write_text(f'interval = "5s"\nstate_file = "{workdir}/state.json"\n{config}\n')
    agent = subprocess.Popen([*DISKPROBE, "--config", str(path)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        time.sleep(found)
        first = cpu_seconds(agent.pid)
        time.sleep(seconds)
        return cpu_seconds(agent.pid) - first
    finally:
        agent.terminate()
        agent.wait(30)


def start_jobs(count: int, threads: int) -> list[subprocess.Popen[str]]:
    jobs = [subprocess.Popen([sys.executable, "-c", JOB, str(threads), TOKEN],
                             stdout=subprocess.PIPE, text=True) for _ in range(count)]  # fmt: skip
    for job in jobs:
        assert job.stdout is not None and job.stdout.readline().strip() == "ready"
    time.sleep(SETTLE_SEC)  # old enough to be looked at: the agent finds them at once
    return jobs


def watch_cost(count: int, threads: int, seconds: float, workdir: Path, found: float) -> float:
    """Share of one core per job: the agent watching `count` jobs less watching none."""
    jobs = start_jobs(count, threads)
    try:
        watching = agent_cpu(f'{OFF}\n[jobs]\nmatch = ["{TOKEN}"]', seconds, workdir, found)
        idle = agent_cpu(f'{OFF}\n[jobs]\nmatch = ["no-such-job-{TOKEN}"]', seconds, workdir,
                         found)  # fmt: skip
    finally:
        for job in jobs:
            job.kill()
            job.wait()
    return (watching - idle) / seconds / count


def default_ratio(seconds: float, workdir: Path, found: float) -> tuple[float, float]:
    """CPU seconds per second of the default agent, with [jobs] as shipped and without it."""
    smart_off = "[smart]\nenabled = false"  # no drive here: its discovery is noise
    on = agent_cpu(smart_off, seconds, workdir, found) / seconds
    off = agent_cpu(f"{smart_off}\n[jobs]\nenabled = false", seconds, workdir, found) / seconds
    return on, off


def diagnose_cost(threads: int, seconds: float) -> float:
    job = start_jobs(1, threads)[0]
    try:
        done = subprocess.run([*DISKPROBE, "diagnose", "--pid", str(job.pid), "--seconds",
                               str(seconds), "--format", "json"], capture_output=True,
                              text=True, check=True)  # fmt: skip
    finally:
        job.kill()
        job.wait()
    return float(json.loads(done.stdout)["cost"]["cpu_share_of_one_core"])


def line(name: str, values: list[float]) -> None:
    print(f"{name:<32} min {min(values):7.3f}  median {statistics.median(values):7.3f}"
          "  (% of one core)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--threads", type=int, default=64)
    parser.add_argument("--counts", default="1,8", help="how many jobs at once, e.g. 1,8")
    parser.add_argument("--found", type=float, default=FOUND_SEC,
                        help="seconds of the agent's start before its CPU is read")
    args = parser.parse_args()
    counts = [int(count) for count in args.counts.split(",")]
    figures: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-jobs-") as work:
        workdir = Path(work)
        for _ in range(args.rounds):
            for count in counts:
                cost = watch_cost(count, args.threads, args.seconds, workdir, args.found)
                figures.setdefault(f"agent, per job, {count} jobs", []).append(100 * cost)
            on, off = default_ratio(args.seconds, workdir, args.found)
            figures.setdefault("default agent, [jobs] on", []).append(100 * on)
            figures.setdefault("default agent, [jobs] off", []).append(100 * off)
            share = diagnose_cost(args.threads, min(args.seconds, 10.0))
            figures.setdefault("diagnose, one job", []).append(100 * share)
    print(f"jobs of {args.threads} threads, {args.seconds:g} s a measure, "
          f"{args.rounds} rounds")  # fmt: skip
    for name, values in figures.items():
        line(name, values)
    for count in counts:
        total = count * statistics.median(figures[f"agent, per job, {count} jobs"])
        print(f"{count} jobs together: median {total:.3f} % of one core")


if __name__ == "__main__":
    main()
