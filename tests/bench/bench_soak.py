"""Soak benchmark: the installed `diskprobe` with every collector on, for >= 100,000 cycles.

It runs the real process (not collect() in a loop) on a fake host (soak_node.py) whose
counters move, SMART through tests/fake_smartctl/smartctl replaying a few cases, and samples
/proc/<pid>/status (VmRSS, Threads), its fds and children over the run. It prints RSS after
warm-up and at the end, and exits 1 when the growth is --max-growth-kb or more.
--tracemalloc runs the same command in-process under tracemalloc and prints the top growth
between the snapshot after warm-up and the last one (a diagnostic: it is slower).
See tests/bench/README.md.

Size: one benchmark script: the command it runs, the sampling of that process and the report
share the run's options and samples; --tracemalloc's in-process variant sits beside the
run it repeats.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from soak_node import SoakNode

TESTS = Path(__file__).resolve().parent.parent
FAKE_SMARTCTL = TESTS / "fake_smartctl" / "smartctl"
SMART_CASES = [TESTS / "fake_smartctl" / "cases" / "pysmart-text-sat-hikvision-hs-ssd-c100"] + [
    TESTS / "golden" / "smart-json" / name
    for name in ("ata-hdd-toshiba-mg09aca18te", "nvme-corsair-force-mp510",
                 "failing-scsi-seagate-st4000nm0043-grown-defects")
]  # fmt: skip
CASE_FILES = ("device", "response.json", "response.txt", "exit_status", "behaviour")
DISKPROBE = Path(sys.executable).parent / "diskprobe"
CYCLE_MARK = b"diskprobe_agent,collector=io,"  # one per batch: the io collector runs every tick
LINE = re.compile(rb"^diskprobe_[a-z_]+(,\S+)? \S.* \d{18,19}$")
# The diagnostic wrapper: diskprobe's own main() under tracemalloc, snapshots from a thread.
WRAPPER = """
import gc, json, pickle, sys, threading, time, tracemalloc
from collections import Counter
tracemalloc.start(int(sys.argv[3]))
out, every = sys.argv[1], float(sys.argv[2])
def snapshots():
    n = 0
    while True:
        time.sleep(every)
        n += 1
        snap = tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.Filter(False, tracemalloc.__file__)])
        with open(f"{out}/snap-{n:04d}.pickle", "wb") as f:
            pickle.dump(snap, f)
        types = Counter(type(o).__name__ for o in gc.get_objects())
        with open(f"{out}/types-{n:04d}.json", "w") as f:
            json.dump({"gc_count": gc.get_count(), "types": types.most_common(40)}, f)
threading.Thread(target=snapshots, daemon=True).start()
from diskprobe.cli import main
sys.argv = ["diskprobe", *sys.argv[4:]]
sys.exit(main())
"""


def write_config(directory: Path, args: argparse.Namespace) -> Path:
    config = directory / "diskprobe.toml"
    config.write_text(
        f'interval = "{args.interval}"\ntrigger = "{args.trigger}"\n'
        f'state_file = "{directory / "state.json"}"\nstate_save_interval = "1s"\n'
        f'[smart]\ninterval = "{args.smart_interval}"\nsmartctl_path = "{FAKE_SMARTCTL}"\n'
        f'rescan = "{args.smart_interval}"\n'
        "[process_io]\nmin_bytes_per_sec = 0\n"
        '[io]\nexclude = ["ram*"]\n'
    )
    return config


def install_smart_cases(root: Path) -> None:
    for case in SMART_CASES:
        target = root / case.name
        target.mkdir(parents=True)
        for name in CASE_FILES:
            if (case / name).is_file():
                shutil.copyfile(case / name, target / name)


class Probe:
    """/proc/<pid>: RSS, threads, fds, children (and zombies among them)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def sample(self) -> dict[str, int]:
        status = Path(f"/proc/{self.pid}/status").read_text()
        values = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        children: list[str] = []
        for task in os.listdir(f"/proc/{self.pid}/task"):
            children += Path(f"/proc/{self.pid}/task/{task}/children").read_text().split()
        zombies = sum(1 for child in children if self._state(child) == "Z")
        return {
            "rss_kb": int(values["VmRSS"].split()[0]),
            "threads": int(values["Threads"]),
            "fds": len(os.listdir(f"/proc/{self.pid}/fd")),
            "children": len(children),
            "zombies": zombies,
        }

    @staticmethod
    def _state(pid: str) -> str:
        try:
            data = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return "?"
        return data[data.rindex(")") + 2]


class Reader:
    """Reads diskprobe's stdout: counts batches and malformed lines, wakes the stdin driver."""

    def __init__(self, stream: object) -> None:
        self.cycles = self.lines = self.malformed = 0
        self.cond = threading.Condition()
        self.first_bad: bytes | None = None
        self.thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.thread.start()

    def _read(self, stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            line = line.rstrip(b"\n")
            self.lines += 1
            if not LINE.match(line):
                self.malformed += 1
                self.first_bad = self.first_bad or line
            if line.startswith(CYCLE_MARK):
                with self.cond:
                    self.cycles += 1
                    self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()


def drive_stdin(process: subprocess.Popen[bytes], reader: Reader, cycles: int) -> None:
    """--trigger stdin: a new line as soon as the previous batch is out (two in flight)."""
    assert process.stdin is not None
    sent = 0
    try:
        while sent < cycles + 2 and process.poll() is None:
            with reader.cond:
                reader.cond.wait_for(lambda ahead=sent: ahead - reader.cycles < 2, timeout=1.0)
            if sent - reader.cycles < 2:
                process.stdin.write(b"\n")
                process.stdin.flush()
                sent += 1
    except (BrokenPipeError, ValueError):
        pass


def command(args: argparse.Namespace, config: Path, snapshots: Path) -> list[str]:
    if args.tracemalloc:
        return [sys.executable, "-c", WRAPPER, str(snapshots), str(args.snapshot_every),
                str(args.frames), "--config", str(config)]  # fmt: skip
    return [str(DISKPROBE), "--config", str(config)]


def start_pids(count: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen(["sleep", "infinity"]) for _ in range(count)]


def run(args: argparse.Namespace, work: Path) -> int:
    smart_dir, snapshots = work / "smart", work / "snapshots"
    snapshots.mkdir()
    install_smart_cases(smart_dir)
    sleepers = start_pids(3)
    node = SoakNode(work / "host", [p.pid for p in sleepers], args.churn)
    node.advance()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOST_")}
    env.update(node.env(), FAKE_SMARTCTL_DIR=str(smart_dir), FAKE_SMARTCTL_LOG=os.devnull)
    stderr = open(work / "stderr.log", "wb")  # noqa: SIM115 (lives as long as the run)
    pipe = subprocess.PIPE
    argv = command(args, write_config(work, args), snapshots)
    process = subprocess.Popen(argv, env=env, stdin=pipe, stdout=pipe, stderr=stderr)
    reader, probe = Reader(process.stdout), Probe(process.pid)
    if args.trigger == "stdin":
        driver = (process, reader, args.cycles)
        threading.Thread(target=drive_stdin, args=driver, daemon=True).start()
    samples: list[dict[str, float]] = []
    try:
        sleepers = sample(args, process, reader, probe, node, sleepers, samples)
    finally:
        stop(process)
        for p in sleepers:
            p.kill()
            p.wait()
        stderr.close()
    (work / "samples.json").write_text(json.dumps(samples))
    status = report(args, samples, reader, process.returncode, work)
    if args.tracemalloc:
        compare_snapshots(snapshots, args)
    return status


def sample(args: argparse.Namespace, process: subprocess.Popen[bytes], reader: Reader,
           probe: Probe, node: SoakNode, sleepers: list[subprocess.Popen[bytes]],
           samples: list[dict[str, float]]) -> list[subprocess.Popen[bytes]]:  # fmt: skip
    """Until --cycles: move the fake host on, sample the process; the sleepers it ends with."""
    started = last_advance = time.monotonic()
    try:
        while reader.cycles < args.cycles and process.poll() is None:
            time.sleep(min(args.sample_every, args.advance))
            now = time.monotonic()
            if now - last_advance >= args.advance:
                last_advance = now
                if args.churn and node.round % 10 == 0:  # new processes now and then
                    for p in sleepers:
                        p.kill()
                        p.wait()
                    sleepers = start_pids(3)
                    node.pids = [p.pid for p in sleepers]
                node.advance()
            if process.poll() is not None:
                break
            if not samples or now - started - samples[-1]["t"] >= args.sample_every:
                samples.append({"t": now - started, "cycles": reader.cycles, **probe.sample()})
                if args.verbose:
                    print(json.dumps(samples[-1]), flush=True)
    except KeyboardInterrupt:  # SIGTERM or ^C: report what was measured so far
        print("interrupted", flush=True)
    if process.poll() is None:
        samples.append({"t": time.monotonic() - started, "cycles": reader.cycles,
                        **probe.sample()})  # fmt: skip
    return sleepers


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def report(args: argparse.Namespace, samples: list[dict[str, float]], reader: Reader,
           returncode: int | None, work: Path) -> int:  # fmt: skip
    if not samples:
        print(f"FAIL: diskprobe exited ({returncode}) before the first sample; see stderr.log")
        return 1
    warm = next((s for s in samples if s["cycles"] >= args.warmup), samples[-1])
    end = samples[-1]
    after = [s for s in samples if s["cycles"] >= warm["cycles"]]
    growth = end["rss_kb"] - warm["rss_kb"]
    cycles = max(end["cycles"] - warm["cycles"], 1)
    print(f"mode: trigger={args.trigger} interval={args.interval} churn={args.churn} "
          f"smart_interval={args.smart_interval} tracemalloc={args.tracemalloc}")  # fmt: skip
    print(f"cycles: {end['cycles']:.0f} in {end['t']:.0f} s "
          f"({end['cycles'] / max(end['t'], 1e-9):.0f}/s); lines {reader.lines}, "
          f"malformed {reader.malformed}; exit status {returncode}")  # fmt: skip
    if reader.first_bad:
        print(f"first malformed line: {reader.first_bad[:200]!r}")
    print(f"RSS after warm-up ({warm['cycles']:.0f} cycles): {warm['rss_kb']:.0f} kB; "
          f"at the end: {end['rss_kb']:.0f} kB; growth {growth:+.0f} kB "
          f"({growth * 1024 / cycles:+.2f} bytes/cycle); "
          f"max after warm-up {max(s['rss_kb'] for s in after):.0f} kB")  # fmt: skip
    for key in ("threads", "fds", "children", "zombies"):
        values = [s[key] for s in after]
        print(f"{key}: min {min(values):.0f}, max {max(values):.0f}, end {end[key]:.0f}")
    errors = [line for line in (work / "stderr.log").read_text(errors="replace").splitlines()
              if line.startswith(("E!", "Traceback"))]  # fmt: skip
    print(f"stderr: {len(errors)} E!/Traceback lines" + (f", first: {errors[0]}" if errors else ""))
    if growth >= args.max_growth_kb:
        print(f"FAIL: RSS grew {growth:.0f} kB >= {args.max_growth_kb} kB")
        return 1
    if end["cycles"] < args.cycles:
        print(f"FAIL: only {end['cycles']:.0f} of {args.cycles} cycles")
        return 1
    print("OK")
    return 0


def compare_snapshots(snapshots: Path, args: argparse.Namespace) -> None:
    import pickle
    import tracemalloc  # noqa: F401 (the pickles are tracemalloc snapshots)

    files = sorted(snapshots.glob("snap-*.pickle"))
    if len(files) < 2:
        print("tracemalloc: fewer than two snapshots")
        return
    first = files[min(args.warmup_snapshot, len(files) - 2)]
    old, new = (pickle.loads(path.read_bytes()) for path in (first, files[-1]))
    print(f"tracemalloc: {first.name} -> {files[-1].name}, top growth by line:")
    for stat in new.compare_to(old, "lineno")[: args.top]:
        print(f"  {stat}")
    print("by traceback (top 5):")
    for stat in new.compare_to(old, "traceback")[:5]:
        print(f"  {stat.size_diff / 1024:+.1f} KiB, {stat.count_diff:+d} blocks")
        for line in stat.traceback.format()[-2 * args.frames :]:
            print(f"    {line}")
    for name in (first.name, files[-1].name):
        types_file = snapshots / name.replace("snap", "types").replace(".pickle", ".json")
        types = json.loads(types_file.read_text())
        print(f"{name}: gc count {types['gc_count']}, top types {types['types'][:12]}")


def _interrupted(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM: stop diskprobe and the sleepers, then report


def main() -> int:
    signal.signal(signal.SIGTERM, _interrupted)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=100_000)
    parser.add_argument("--warmup", type=int, default=10_000, help="cycles before the base RSS")
    parser.add_argument("--interval", default="10ms")
    parser.add_argument("--trigger", choices=("interval", "stdin"), default="interval")
    parser.add_argument("--smart-interval", default="1s")
    parser.add_argument("--advance", type=float, default=0.5, help="seconds between counter moves")
    parser.add_argument("--churn", action="store_true", help="new device/mount/pid/cgroup names")
    parser.add_argument("--sample-every", type=float, default=5.0)
    parser.add_argument("--max-growth-kb", type=float, default=1024.0)
    parser.add_argument("--tracemalloc", action="store_true", help="diagnose, in-process")
    parser.add_argument("--snapshot-every", type=float, default=30.0)
    parser.add_argument("--warmup-snapshot", type=int, default=1, help="index of the base one")
    parser.add_argument("--frames", type=int, default=8)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it")
    parser.add_argument("--verbose", action="store_true", help="print every sample")
    args = parser.parse_args()
    if args.keep:
        work = Path(args.keep)
        work.mkdir(parents=True, exist_ok=False)
        return run(args, work)
    with tempfile.TemporaryDirectory(prefix="diskprobe-soak.") as temp:
        return run(args, Path(temp))


if __name__ == "__main__":
    sys.exit(main())
