#!/usr/bin/env python3
"""diskprobe's filesystems collector against node_exporter's, on a 10,000-mount table.

    python tests/bench/side_fs.py [--rounds 5] [--cycles 5] [--binds 2000] [--tmpfs 8000]
    python tests/bench/side_fs.py --quick            # 2 rounds of 2 cycles, 200 + 800 mounts

The script re-execs itself under `unshare --mount --propagation private --pid --fork
--mount-proc`: the mounts exist only in that namespace and vanish with it, and the bench is
PID 1 there, so /proc/1/mountinfo (where both tools look first) is the bench's own table. In
it: --binds bind mounts of distinct empty directories (on the work dir's real filesystem) and
--tmpfs tmpfs mounts, like a Kubernetes node's projected volumes.

Both tools report the same set (checked, and the counts printed): node_exporter 1.5 with
`--collector.disable-defaults --collector.filesystem`, its fs-types-exclude set to
diskprobe's default ignore_fs (so tmpfs and overlay are ignored too) and a
mount-points-exclude that excludes nothing the types do not; diskprobe with only
[filesystems] enabled (defaults otherwise), trigger = "stdin". Per round, the same number of
cycles of each: CPU (sidelib.tree_cpu_sec, diskprobe's statfs helper included) and wall time.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from sidelib import DISKPROBE, Diskprobe, NodeExporter, Rounds, diskprobe_env

from diskprobe.config import PSEUDO_FILESYSTEMS

MARKER = b"diskprobe_agent,collector=filesystems,"
INNER_FLAG = "--inner"
MS_BIND = 4096
OFF = ("io", "smart", "process_io", "cgroup_io", "pressure")
NODE_FLAGS = [
    "--collector.disable-defaults",
    "--collector.filesystem",
    f"--collector.filesystem.fs-types-exclude=^({'|'.join(PSEUDO_FILESYSTEMS)})$",
    "--collector.filesystem.mount-points-exclude=^$",  # diskprobe excludes by type only
]
# Influx tag `path=/x/y` (no escapes: the bench's paths have no space, comma or "=").
DISKPROBE_PATH = re.compile(rb"^diskprobe_fs,(?:[^ ]*,)?path=([^, ]+)", re.M)
# Prometheus: node_filesystem_size_bytes{device="...",fstype="ext4",mountpoint="/x/y"} 1.2e+11
NODE_PATH = re.compile(rb'^node_filesystem_size_bytes\{[^}]*mountpoint="([^"]*)"', re.M)


def make_mounts(base: Path, binds: int, tmpfs: int) -> None:
    """Bind mounts of distinct directories, then tmpfs mounts (libc mount(2): no fork each)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for kind, count in (("b", binds), ("t", tmpfs)):
        for index in range(count):
            target = base / f"{kind}{index:05d}"
            target.mkdir(parents=True, exist_ok=True)
            args: tuple[bytes, bytes, bytes | None, int, bytes | None]
            if kind == "b":
                source = base / "src" / f"d{index:05d}"
                source.mkdir(parents=True, exist_ok=True)
                args = (bytes(source), bytes(target), None, MS_BIND, None)
            else:
                args = (b"tmpfs", bytes(target), b"tmpfs", 0, b"size=64k")
            if libc.mount(*args) != 0:
                raise OSError(ctypes.get_errno(), f"mount {target}")


def write_config(work: Path) -> Path:
    config = work / "diskprobe.toml"
    off = "".join(f"[{name}]\nenabled = false\n" for name in OFF)
    config.write_text(
        f'trigger = "stdin"\nstate_file = "{work / "state.json"}"\n{off}[filesystems]\n'
    )
    return config


def reported_sets(config: Path, node: NodeExporter) -> tuple[set[bytes], set[bytes]]:
    """Mount points each tool reports: diskprobe --once (same config), one scrape."""
    once = subprocess.run(
        [str(DISKPROBE), "--config", str(config), "--once"],
        env=diskprobe_env({}), capture_output=True, check=True, timeout=300,
    )  # fmt: skip
    return set(DISKPROBE_PATH.findall(once.stdout)), set(NODE_PATH.findall(node.scrape()))


def measure(
    probe: Diskprobe, node: NodeExporter, cycles: int, pace: float = 0.0
) -> tuple[float, ...]:
    """(diskprobe CPU, node_exporter CPU, diskprobe wall, node_exporter wall) in seconds;
    with `pace`, diskprobe's collects start at least that far apart (the waits not counted)."""
    cpu0, busy = probe.cpu_sec(), 0.0
    for _ in range(cycles):
        begun = time.perf_counter()
        probe.cycle()
        spent = time.perf_counter() - begun
        busy += spent
        if pace:
            time.sleep(max(0.0, pace - spent))
    ours_cpu = probe.cpu_sec() - cpu0
    cpu0, wall0 = node.cpu_sec(), time.perf_counter()
    for _ in range(cycles):
        node.scrape()
    return ours_cpu, node.cpu_sec() - cpu0, busy, time.perf_counter() - wall0


def compare(
    probe: Diskprobe, node: NodeExporter, rounds: int, cycles: int, what: str = "",
    pace: float = 0.0,
) -> list[str]:  # fmt: skip
    """The rounds, and the CPU and wall reports (target: no more than node_exporter)."""
    cpu = Rounds("diskprobe", "node_exporter")
    wall = Rounds("diskprobe", "node_exporter", resolution=1e-6)  # perf_counter
    for _ in range(rounds):
        ours_cpu, theirs_cpu, ours_wall, theirs_wall = measure(probe, node, cycles, pace)
        cpu.add(ours_cpu, theirs_cpu, cycles)
        wall.add(ours_wall, theirs_wall, cycles)
    return [cpu.report(f"CPU per collect/scrape{what}", 1.0),
            wall.report(f"wall per collect/scrape{what}", 1.0)]  # fmt: skip


def inner(rounds: int, cycles: int, work: Path, binds: int, tmpfs: int) -> str:
    """Runs inside the namespace: mounts, both tools, the rounds; returns the report."""
    started = time.perf_counter()
    make_mounts(work / "mnt", binds, tmpfs)
    lines = [
        f"filesystems: {binds} bind + {tmpfs} tmpfs mounts; mountinfo has "
        f"{len(Path('/proc/1/mountinfo').read_text().splitlines())} lines "
        f"(set up in {time.perf_counter() - started:.1f} s)"
    ]
    config = write_config(work)
    node = NodeExporter(NODE_FLAGS, work / "node_exporter.log")
    probe = None
    try:
        ours, theirs = reported_sets(config, node)
        lines.append(
            f"  reported filesystems: diskprobe {len(ours)}, node_exporter {len(theirs)}, "
            f"same set: {ours == theirs} (only diskprobe {len(ours - theirs)}, "
            f"only node_exporter {len(theirs - ours)})"
        )
        probe = Diskprobe(config, diskprobe_env({}), MARKER, work / "diskprobe.log")
        probe.cycle()  # warm-up: helper started, first statfs of each mount
        node.scrape()
        rss_start = probe.rss_kib()
        lines += compare(probe, node, rounds, cycles)
        lines.append(
            f"  diskprobe RSS: {rss_start / 1024:.1f} MiB after the first collect, "
            f"{probe.rss_kib() / 1024:.1f} MiB after {rounds * cycles} more (budget 40 MB)"
        )
    finally:
        if probe is not None:
            probe.stop()
        node.stop()
    return "\n".join(lines)


def in_namespace(script: str, options: list[str], work: Path) -> str:
    """Runs `script` (this file or side_fs_steady.py) with INNER_FLAG and `options` in a
    private mount + PID namespace; its report."""
    work.mkdir(parents=True, exist_ok=True)
    argv = [
        "unshare", "--mount", "--propagation", "private", "--pid", "--fork", "--mount-proc",
        sys.executable, script, INNER_FLAG, "--work", str(work), *options,
    ]  # fmt: skip
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=3600)
    finally:
        # The namespace is gone: the mount points are plain empty directories again.
        shutil.rmtree(work / "mnt", ignore_errors=True)
    if done.returncode != 0:
        name = Path(script).name
        raise RuntimeError(f"{name} inner run failed ({done.returncode}):\n{done.stderr}")
    return done.stdout.rstrip("\n")


def run(rounds: int, cycles: int, work: Path, binds: int = 2000, tmpfs: int = 8000) -> str:
    """Re-execs this file in a private mount + PID namespace; returns its report."""
    options = ["--rounds", str(rounds), "--cycles", str(cycles), "--binds", str(binds)]
    return in_namespace(str(Path(__file__).resolve()), [*options, "--tmpfs", str(tmpfs)], work)


def arguments(doc: str) -> argparse.ArgumentParser:
    """The options of side_fs.py and side_fs_steady.py."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cycles", type=int, default=5)
    parser.add_argument("--binds", type=int, default=2000)
    parser.add_argument("--tmpfs", type=int, default=8000)
    parser.add_argument("--quick", action="store_true", help="2 rounds of 2, 1,000 mounts")
    parser.add_argument("--work", type=Path, help="work dir (default: a temp dir under /var/tmp)")
    parser.add_argument(INNER_FLAG, action="store_true", help=argparse.SUPPRESS)
    return parser


def main() -> None:
    args = arguments(__doc__ or "").parse_args()
    if args.quick:
        args.rounds, args.cycles, args.binds, args.tmpfs = 2, 2, 200, 800
    if args.inner:
        print(inner(args.rounds, args.cycles, args.work, args.binds, args.tmpfs), flush=True)
        return
    if os.geteuid() != 0:
        sys.exit("side_fs needs root (mount namespaces, mounts)")
    work = args.work or Path(tempfile.mkdtemp(prefix="side_fs.", dir="/var/tmp"))
    print(run(args.rounds, args.cycles, work, args.binds, args.tmpfs))
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
