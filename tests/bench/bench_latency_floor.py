#!/usr/bin/env python3
"""The floor under [latency]'s cost (issue 36): what bpftrace costs fio on the two tracepoints
diskprobe's program needs, with less and less in the programs, down to an empty one.

Not a pytest module (tests/test_bench_timings.py runs it once, quickly). As root:

    python tests/bench/bench_latency_floor.py [--rounds 5] [--seconds 5]

bench_latency.py measures the agent; this one runs bpftrace by hand with four programs, each
the least that a kind of design must do at every request, so that what no program for that
design can beat is measured rather than argued:
- "one tracepoint, empty": an empty program on block_rq_complete (attaching anything at all);
- "two tracepoints, counting": a count on block_io_start and one on block_rq_complete (the
  least that sees both ends of a request, as a latency must);
- "two tracepoints, a start map": the start time kept by (dev, sector) at block_io_start,
  looked up and deleted at block_rq_complete, no aggregation (the least that times a request);
- "latency.bt": diskprobe's own program, as installed, without the agent reading it.
Same device and fio as bench_latency.py (a loop device over tmpfs, 4 KiB random direct reads,
iodepth 1). Every run with a program lies between two runs without one, and its ratio is its
IOPS over the mean of those two (the machine's drift cancels); the programs' order turns by one
every round. Min, median and max of each program's ratios over the rounds.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench_latency import fio, loop_device

import diskprobe

INSTALLED = Path(diskprobe.__file__).parent / "sources" / "bpf" / "latency.bt"
PROGRAMS = {
    "one tracepoint, empty": "tracepoint:block:block_rq_complete {}",
    "two tracepoints, counting": "tracepoint:block:block_io_start { @s = count(); }\n"
                                 "tracepoint:block:block_rq_complete { @c = count(); }",
    "two tracepoints, a start map": """
tracepoint:block:block_io_start { @req[args->dev, args->sector] = nsecs; }
tracepoint:block:block_rq_complete {
  if (@req[args->dev, args->sector] != 0) { delete(@req[args->dev, args->sector]); }
}""",
    "latency.bt": "",  # the installed file, read when the bench runs
}


class Bpftrace:
    """bpftrace running one program, its output in a file; ready once it says it attached."""

    def __init__(self, program: Path, work: Path) -> None:
        self.out = work / f"{program.stem}.out"
        with open(self.out, "wb") as out:
            self.process = subprocess.Popen(["bpftrace", str(program)], stdout=out,
                                            stderr=subprocess.STDOUT)  # fmt: skip
        deadline = time.monotonic() + 60
        while b"Attaching" not in self.out.read_bytes():  # its stderr's ERROR lines are noise
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"bpftrace {program}: {self.out.read_text()[-2000:]}")
            time.sleep(0.1)
        time.sleep(0.5)  # "Attaching" comes before the last program is attached

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def write_programs(work: Path) -> dict[str, Path]:
    paths = {}
    for index, (name, text) in enumerate(PROGRAMS.items()):
        paths[name] = work / f"program{index}.bt"
        paths[name].write_text(text or INSTALLED.read_text())
    return paths


def one_round(device: str, seconds: float, order: list[str], paths: dict[str, Path],
              work: Path) -> dict[str, float]:  # fmt: skip
    before, ratios = fio(device, seconds)["iops"], {}
    line = f"  off {before:6.0f}"
    for name in order:
        tracer = Bpftrace(paths[name], work)
        try:
            on = fio(device, seconds)["iops"]
        finally:
            tracer.stop()
        after = fio(device, seconds)["iops"]
        ratios[name] = on / ((before + after) / 2)
        line += f"  [{name}] {on:6.0f} ({ratios[name]:.3f})  off {after:6.0f}"
        before = after
    print(line, flush=True)
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    names, rounds = list(PROGRAMS), []
    with loop_device() as device, tempfile.TemporaryDirectory(prefix="bench-floor-") as work:
        paths = write_programs(Path(work))
        print(f"fio on {device}: 4 KiB random direct reads, iodepth 1, {args.seconds:g} s a "
              f"run; IOPS with the program (its ratio to the runs around it)")  # fmt: skip
        for index in range(args.rounds):
            order = names[index % len(names):] + names[:index % len(names)]
            rounds.append(one_round(device, args.seconds, order, paths, Path(work)))
    for name in names:
        values = [ratios[name] for ratios in rounds]
        print(f"{'IOPS ratio, ' + name:<45} min {min(values):.3f}  median "
              f"{statistics.median(values):.3f}  max {max(values):.3f}")  # fmt: skip


if __name__ == "__main__":
    if os.geteuid() != 0:
        raise SystemExit("bench_latency_floor.py runs bpftrace: run it as root")
    main()
