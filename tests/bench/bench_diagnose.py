#!/usr/bin/env python3
"""What watching costs the job: `diskprobe diagnose` beside a job, and measure_input in it.

Not a pytest module: run it by hand (as root, or as the job's user).

    python tests/bench/bench_diagnose.py [--rounds 5] [--seconds 4] [--threads 16]

1. diagnose: a CPU-bound job (`--threads` threads: one busy main thread in Python, the rest
   asleep as a framework's pools are) counts its steps for `--seconds` alone, then with
   `diskprobe diagnose` watching it, in turn, `--rounds` times; printed: the steps per second
   each way, the ratio (with / alone) per round, its min and median, and diagnose's own CPU.
2. measure_input: a loop of 0.5 ms steps over a list, bare and through measure_input, in
   turn; printed: the step time each way and the ratio, min and median over the rounds.
3. The same with data_paths (the device's iostat read at each window's end) and a
   TrainingOutput to a real VictoriaMetrics (Debian's victoria-metrics; a window a 50 steps
   stored in the spool, fsync'd, and sent by the sender thread), against the bare loop.
This machine is shared and noisy: the ratio's median over rounds is the figure, not one run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from diskprobe.integrations.input_wait import InputWaitMeter, measure_input
from diskprobe.integrations.training_output import TrainingOutput

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from victoria_server import VictoriaMetrics  # tests/, beside this folder

JOB = textwrap.dedent("""
    import sys, threading, time
    for _ in range(int(sys.argv[2]) - 1):
        threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
    print("ready", flush=True)
    sys.stdin.readline()  # "go": diagnose (if any) has started and is watching
    end, steps = time.monotonic() + float(sys.argv[1]), 0
    while time.monotonic() < end:
        sum(range(2000))
        steps += 1
    print(steps, flush=True)
""")
DISKPROBE = [str(Path(sys.executable).with_name("diskprobe"))]
STARTUP_SEC = 1.5  # diagnose's interpreter start and imports, before the job counts


def job_rate(seconds: float, threads: int, watched: bool) -> tuple[float, float]:
    """Steps per second of the job; diagnose's CPU seconds (0 when not watched). The job
    counts only once diagnose has started (its interpreter and imports are not the watch's
    cost: they run once, before it), for `seconds`, while diagnose watches longer."""
    job = subprocess.Popen([sys.executable, "-c", JOB, str(seconds), str(threads)],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert job.stdout is not None and job.stdin is not None
    job.stdout.readline()
    watch = None
    if watched:
        watch = subprocess.Popen([*DISKPROBE, "diagnose", "--pid", str(job.pid), "--seconds",
                                  str(seconds + STARTUP_SEC + 1), "--format", "json"],
                                 stdout=subprocess.PIPE, text=True)  # fmt: skip
    time.sleep(STARTUP_SEC)
    job.stdin.write("go\n")
    job.stdin.flush()
    steps = int(job.stdout.readline())
    job.wait()
    cost = json.loads(watch.communicate()[0])["cost"]["cpu_seconds"] if watch else 0.0
    return steps / seconds, cost


def loop_step_time(steps: int, metered: bool, server: VictoriaMetrics | None = None,
                   spool: Path | None = None) -> float:  # fmt: skip
    batches = list(range(steps))
    if server is not None and spool is not None:
        spool.mkdir(exist_ok=True)
        output = TrainingOutput(server.url, "bench", spool_dir=str(spool), job="bench")
        meter = InputWaitMeter([str(spool)], window_steps=50, output=output)
    else:
        meter = InputWaitMeter(window_steps=50)
    source = measure_input(batches, meter) if metered else iter(batches)
    started = time.perf_counter()
    for _ in source:
        end = time.perf_counter() + 0.0005
        while time.perf_counter() < end:
            pass
    elapsed = (time.perf_counter() - started) / steps
    meter.close()
    return elapsed


def output_overhead(rounds: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        server = VictoriaMetrics(Path(folder))
        server.start()
        try:
            ratios = []
            for _ in range(rounds):
                bare = loop_step_time(2000, False)
                sent = loop_step_time(2000, True, server, Path(folder) / "spool")
                ratios.append(sent / bare)
        finally:
            server.stop()
    print(f"measure_input with data_paths and TrainingOutput around 0.5 ms steps: ratio min "
          f"{min(ratios):.4f} median {statistics.median(ratios):.4f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--threads", type=int, default=16)
    args = parser.parse_args()
    ratios, costs = [], []
    for index in range(args.rounds):
        alone, _ = job_rate(args.seconds, args.threads, False)
        watched, cost = job_rate(args.seconds, args.threads, True)
        ratios.append(watched / alone)
        costs.append(cost)
        print(f"round {index + 1}: {alone:,.0f} steps/s alone, {watched:,.0f} watched, "
              f"ratio {watched / alone:.3f}, diagnose CPU {cost:.3f} s")  # fmt: skip
    print(f"diagnose beside a {args.threads}-thread job: ratio min {min(ratios):.3f} median "
          f"{statistics.median(ratios):.3f}; diagnose CPU median {statistics.median(costs):.3f} "
          f"s per watch of {args.seconds + STARTUP_SEC + 1:g} s")  # fmt: skip
    overhead = []
    for _ in range(args.rounds):
        bare, metered = loop_step_time(2000, False), loop_step_time(2000, True)
        overhead.append(metered / bare)
    print(f"measure_input around 0.5 ms steps: ratio min {min(overhead):.4f} median "
          f"{statistics.median(overhead):.4f} (step time with / without)")  # fmt: skip
    output_overhead(args.rounds)


if __name__ == "__main__":
    main()
