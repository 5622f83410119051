#!/usr/bin/env python3
"""diskprobe's I/O collector + line protocol against node_exporter's diskstats collector.

    python tests/bench/side_io.py [--devices 4000] [--rounds 5] [--cycles 10]

The synthetic node of bench_io.py (bench_io_host.py; 4,000 devices: loop, dm-N, NVMe and SCSI
disks with partitions, 20-field lines, udev model/serial, dm names), with **every** device
busy: each line changes every cycle. Both tools read the same HOST_PROC tree, rewritten before
each cycle (not timed): node_exporter 1.5 with `--collector.disable-defaults
--collector.diskstats --collector.diskstats.device-exclude=^$` (every device), scraped once per
cycle; diskprobe with only [io] enabled, trigger = "stdin", one batch per cycle, in two
configurations: every device (`exclude = []`) and the default (loop*, ram*, ... excluded).
Cycles are at least --period apart and the counters advance by what a device does in that time,
so diskprobe's sanity checks (io_ms cannot outgrow the clock) pass and every busy device gets
its 22 rate fields.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: kernel_diskstats

from bench_io_host import TARGET_DEVICES, SyntheticHost, make_devices
from sidelib import Diskprobe, NodeExporter, Rounds, diskprobe_env

from kernel_diskstats import IO_MS

MARKER = b"diskprobe_agent,collector=io,"
CONFIGS = {  # name: (the [io] section, the target ratio of issue #15, the floor skips)
    "every device (exclude = [])": ("exclude = []\n", 0.10, ""),
    "default config (loop* excluded)": ("", 0.05, "loop"),
}


def busy_host(root: Path, devices: int, period: float) -> SyntheticHost:
    """bench_io's node with every device active, its increments scaled to `period` seconds."""
    node = make_devices(devices, seed=1)
    busiest = next(d.increments for d in node if d.increments is not None)
    scale = period / 10.0 / 3  # bench_io's increments are per 10 s, times up to 3 ("wave")
    for device in node:
        base = device.increments or busiest
        device.increments = [max(1, int(value * scale)) for value in base]
        device.increments[IO_MS] = max(1, int(period * 1000 / 3 * 0.9))
    return SyntheticHost(root, node)


def write_config(work: Path, io_section: str) -> Path:
    config = work / "diskprobe.toml"
    off = "".join(
        f"[{name}]\nenabled = false\n"
        for name in ("filesystems", "smart", "process_io", "cgroup_io", "pressure")
    )
    config.write_text(
        f'trigger = "stdin"\nstate_file = "{work / "state.json"}"\n'
        f'state_save_interval = "1h"\n{off}[io]\n{io_section}'
    )
    return config


def exporter_flags(host: SyntheticHost) -> list[str]:
    return [
        f"--path.procfs={host.root / 'proc'}",
        f"--path.sysfs={host.root / 'sys'}",
        "--collector.disable-defaults",
        "--collector.diskstats",
        "--collector.diskstats.device-exclude=^$",
    ]


# The floor: what the work costs in plain Python, with no selection, checks, tags or objects:
# read the file, parse each line's counters, subtract, 22 values into a tuple, one %-format.
FLOOR_TEMPLATE = ",".join(f"f{i}=%r" for i in range(22))


def floor_cycle(path: Path, previous: dict[str, list[int]], elapsed: float, skip: str) -> str:
    """One cycle of the floor; lines of devices named `skip`* cost a split (as excluded ones)."""
    out = []
    per_sec = 1.0 / elapsed
    with open(path) as handle:
        lines = handle.read().splitlines()
    for line in lines:
        _, _, name, numbers = line.split(None, 3)
        if skip and name.startswith(skip):
            continue
        counters = list(map(int, numbers.split()))
        before = previous.get(name)
        previous[name] = counters
        if before is None:
            continue
        d = [now - then for now, then in zip(counters, before)]
        r, w, dis, fl = d[0] or 1, d[4] or 1, d[11] or 1, d[15] or 1
        values = (
            d[0] * per_sec, d[4] * per_sec, d[1] * per_sec, d[5] * per_sec,
            d[2] * 512 * per_sec, d[6] * 512 * per_sec, d[3] / r, d[7] / w,
            d[2] * 512 / r, d[6] * 512 / w, d[10] * per_sec / 1000.0, d[9] * per_sec / 10.0,
            float(counters[8]), elapsed, d[11] * per_sec, d[12] * per_sec,
            d[13] * 512 * per_sec, d[14] / dis, d[13] * 512 / dis, d[15] * per_sec, d[16] / fl,
            (d[3] + d[7] + d[14]) / (r + w + dis),
        )  # fmt: skip
        out.append(f"io,device={name} {FLOOR_TEMPLATE % values} 1\n")
    return "".join(out)


def _peak_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def run_config(
    host: SyntheticHost,
    work: Path,
    config: tuple[str, float, str],
    rounds: int,
    cycles: int,
    period: float,
) -> tuple[Rounds, int]:
    io_section, _, skip = config
    roots = {"HOST_PROC": str(host.root / "proc"), "HOST_SYS": str(host.root / "sys"),
             "HOST_RUN": str(host.root / "run")}  # fmt: skip
    probe = Diskprobe(write_config(work, io_section), diskprobe_env(roots), MARKER,
                      work / "diskprobe.log")  # fmt: skip
    exporter = NodeExporter(exporter_flags(host), work / "node_exporter.log")
    result, points = Rounds("diskprobe", "node_exporter"), 0
    floor: dict[str, list[int]] = {}
    floor_ms: list[float] = []
    try:
        for _ in range(2):  # the first batch only primes; warm both up
            host.advance()
            probe.cycle()
            exporter.scrape()
            floor_cycle(host.root / "proc" / "diskstats", floor, period, skip)
            time.sleep(period)
        for _ in range(rounds):
            ours = theirs = 0.0
            for _ in range(cycles):
                started = time.monotonic()
                host.advance()
                before = probe.cpu_sec()
                points = probe.cycle() - 1  # less the agent's own point
                ours += probe.cpu_sec() - before
                before = exporter.cpu_sec()
                exporter.scrape()
                theirs += exporter.cpu_sec() - before
                before = time.process_time()
                floor_cycle(host.root / "proc" / "diskstats", floor, period, skip)
                floor_ms.append((time.process_time() - before) * 1000)
                time.sleep(max(0.0, period - (time.monotonic() - started)))
            result.add(ours, theirs, cycles)
        rss, peak = probe.rss_kib(), _peak_kib(probe.process.pid)
    finally:
        probe.stop()
        exporter.stop()
    result.note = _note(floor_ms[-len(result.rows) * cycles :], len(result.rows) * cycles + 2,
                        rss, peak)  # fmt: skip
    return result, points


def _note(floor_cycles: list[float], batches: int, rss: int, peak: int) -> str:
    """The floor's figures over the timed cycles, and diskprobe's memory after `batches`."""
    low, middle = min(floor_cycles), statistics.median(floor_cycles)
    return (
        "  the Python floor (read, parse, subtract, 22 values and one %-format per point, "
        f"in the bench's process): min {low:.1f} ms, median {middle:.1f} ms\n"
        f"  diskprobe RSS after {batches} batches: {rss / 1024:.1f} MiB "
        f"(peak {peak / 1024:.1f} MiB)"
    )


def run(rounds: int, cycles: int, work: Path, devices: int = TARGET_DEVICES,
        period: float = 1.0) -> str:  # fmt: skip
    host = busy_host(work / "host", devices, period)
    reports = []
    for name, config in CONFIGS.items():
        result, points = run_config(host, work, config, rounds, cycles, period)
        target = config[1]
        reports.append(result.report(f"I/O, {devices} busy devices, {name}: {points} points",
                                     target))  # fmt: skip
    return "\n".join(reports)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--devices", type=int, default=TARGET_DEVICES)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cycles", type=int, default=10, help="cycles per round (10)")
    parser.add_argument("--period", type=float, default=1.0, help="seconds per cycle (1.0)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="side-io-") as work:
        print(run(args.rounds, args.cycles, Path(work), args.devices, args.period))
    return 0


if __name__ == "__main__":
    sys.exit(main())
