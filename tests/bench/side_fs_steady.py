#!/usr/bin/env python3
"""side_fs in steady state: diskprobe's forecast windows full (as many points as they keep).

    python tests/bench/side_fs_steady.py [--rounds 5] [--cycles 5] [--binds 2000]
    python tests/bench/side_fs_steady.py --quick     # 2 rounds of 2 cycles, 200 bind mounts

side_fs runs a few cycles from a fresh start, so each window holds a few points; in production
(interval 10 s, forecast_window 6 h) every series holds its full share after 6 h: 360 points
of 60 s up to 277 mounts, fewer beyond (filesystems.POINT_BUDGET; 50 at 2,000 mounts), and
the forecast runs over them each collect. Rather than a pre-filled state file, the windows
are filled the way production fills them, faster: forecast_window = 360 x RESOLUTION s and
--warm collects (default 370; 30 with --quick) FILL_STEP apart. The forecast's cost depends
on the points held, not on the window's length. Then side_fs's
rounds: the same mounts (bind mounts of distinct directories, plus tmpfs ones both tools
ignore), the same node_exporter flags, CPU and wall per collect (diskprobe's collects paced
FILL_STEP apart, so the windows stay full).
The report ends with the points per series read back from the state file diskprobe saves.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from side_fs import (
    MARKER,
    NODE_FLAGS,
    arguments,
    compare,
    in_namespace,
    make_mounts,
    reported_sets,
    write_config,
)
from sidelib import Diskprobe, NodeExporter, diskprobe_env

RESOLUTION = 0.5  # forecast_window / 360: a new stored point at most every RESOLUTION s
# Collects are paced a little further apart, so timestamp jitter never makes the newest point
# float (replace the last) instead of settling: 360 x 0.5 / 0.55 = ~327 points per series.
# (0.25 s was too short: a collect at 2,000 mounts takes longer, and windows held ~120.)
FILL_STEP = 0.55
POINTS = 360  # ForecastWindow.MAX_POINTS: what a window keeps with few mounts


def steady_config(work: Path) -> Path:
    """side_fs's config with a window of POINTS points FILL_STEP apart."""
    config = write_config(work)
    window = POINTS * RESOLUTION
    # write_config's text ends with the "[filesystems]" header: its options follow.
    config.write_text(config.read_text() + f'forecast_window = "{window:g}s"\n')
    return config


def warm_up(probe: Diskprobe, cycles: int) -> float:
    """`cycles` collects at least FILL_STEP apart (each settles one point); seconds taken."""
    started = time.perf_counter()
    for _ in range(cycles):
        begun = time.perf_counter()
        probe.cycle()
        time.sleep(max(0.0, FILL_STEP - (time.perf_counter() - begun)))
    return time.perf_counter() - started


def held_points(state_file: Path) -> str:
    """Points per series in the state file diskprobe saved on exit: min / mean / max."""
    try:
        sections = json.loads(state_file.read_text())["sections"]
    except (OSError, ValueError, KeyError) as error:
        return f"  state file unreadable ({error})"
    size = state_file.stat().st_size / 1e6
    if "fs_forecast" not in sections:  # over the 16 MiB a start reads: left out (W! said so)
        return f"  windows at the end: not in the state file ({size:.1f} MB without them)"
    section = sections["fs_forecast"]
    sizes = [len(points) for entry in section.values() for points in entry.values()]
    if not sizes:
        return "  state file: no windows"
    return (
        f"  windows at the end: {len(sizes)} series, points per series min {min(sizes)} "
        f"mean {sum(sizes) / len(sizes):.0f} max {max(sizes)} "
        f"(state file {size:.1f} MB)"
    )


def inner(rounds: int, cycles: int, work: Path, binds: int, tmpfs: int, warm: int) -> str:
    """Runs inside the namespace (see side_fs.run): mounts, warm-up, the rounds."""
    make_mounts(work / "mnt", binds, tmpfs)
    warm_cycles = warm
    config = steady_config(work)
    node = NodeExporter(NODE_FLAGS, work / "node_exporter.log")
    probe = None
    lines = [f"filesystems steady state: {binds} bind + {tmpfs} tmpfs mounts"]
    try:
        ours, theirs = reported_sets(config, node)
        lines.append(
            f"  reported filesystems: diskprobe {len(ours)}, node_exporter {len(theirs)}, "
            f"same set: {ours == theirs}"
        )
        probe = Diskprobe(config, diskprobe_env({}), MARKER, work / "diskprobe.log")
        took = warm_up(probe, warm_cycles)
        lines.append(f"  warm-up: {warm_cycles} collects in {took:.0f} s (windows filled)")
        node.scrape()
        # Collects paced FILL_STEP apart like the warm-up: back to back, the newest point
        # would only float and the windows would thin out.
        lines += compare(probe, node, rounds, cycles, ", full windows", FILL_STEP)
        lines.append(f"  diskprobe RSS: {probe.rss_kib() / 1024:.1f} MiB")
    finally:
        if probe is not None:
            probe.stop()  # saves the state file
        node.stop()
    lines.append(held_points(work / "state.json"))
    return "\n".join(lines)


def run(
    rounds: int, cycles: int, work: Path, binds: int = 2000, tmpfs: int = 8000, warm: int = 370
) -> str:
    """Re-execs this file in a private mount + PID namespace; returns its report."""
    options = ["--rounds", str(rounds), "--cycles", str(cycles), "--binds", str(binds)]
    options += ["--tmpfs", str(tmpfs), "--warm", str(warm)]
    return in_namespace(str(Path(__file__).resolve()), options, work)


def main() -> None:
    parser = arguments(__doc__ or "")
    parser.add_argument("--warm", type=int, default=POINTS + 10, help="warm-up collects")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.cycles, args.binds, args.tmpfs, args.warm = 2, 2, 200, 800, 30
    if args.inner:
        report = inner(args.rounds, args.cycles, args.work, args.binds, args.tmpfs, args.warm)
        print(report, flush=True)
        return
    if os.geteuid() != 0:
        sys.exit("side_fs_steady needs root (mount namespaces, mounts)")
    work = args.work or Path(tempfile.mkdtemp(prefix="side_fs_steady.", dir="/var/tmp"))
    print(run(args.rounds, args.cycles, work, args.binds, args.tmpfs, args.warm))
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
