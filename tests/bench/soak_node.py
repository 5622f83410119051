"""A fake host for bench_soak.py: HOST_PROC / HOST_SYS / HOST_RUN trees whose counters move.

Every collector finds work on it: disks and partitions in diskstats (with sysfs and udev
entries), a few mounts (real directories, so statfs answers), PSI, a few processes doing
storage I/O and cgroups with io.stat. `advance()` moves every counter on; with `churn` it
also replaces some names each round (loop devices, mounts, processes, cgroups, as a node
running short-lived containers does), so per-name caches that never forget show up as growth.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: kernel_diskstats

from kernel_diskstats import diskstats_line

DISKS = ("sda", "sdb", "nvme0n1")
PART_SUFFIX = {"sda": "1", "sdb": "1", "nvme0n1": "p1"}
CHURN_DEVICES = 4  # loop devices, mounts, processes and cgroups replaced per round
BOOT_TICKS = 1000


def stat_line(pid: int, name: str, ticks: int, blkio_ticks: int = 0) -> str:
    """/proc/<pid>/stat: 52 fields as in proc(5); field 22 (starttime) tells a reused PID
    apart, field 42 is the time it waited for block I/O (delayacct_blkio_ticks)."""
    rest = ["0"] * 49
    rest[0], rest[1], rest[2], rest[19] = "S", "1", str(pid), str(ticks)
    rest[39] = str(blkio_ticks)
    return f"{pid} ({name}) " + " ".join(rest) + "\n"


def write_whole(path: Path, text: str) -> None:
    """Write a file of a simulated /proc or /sys tree whole (a temp file, then a rename):
    diskprobe may read it at any moment."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(path.name + ".tmp")
    temp.write_text(text)
    os.replace(temp, path)

class SoakNode:
    """The fake host; `pids` are real (sleeping) processes the caller owns, named here."""

    def __init__(self, root: Path, pids: list[int], churn: bool) -> None:
        self.root, self.churn, self.round = root, churn, 0
        self.proc, self.sys, self.run = root / "proc", root / "sys", root / "run"
        self.pids = list(pids)
        self._pid_names: dict[int, str] = {}
        self._mounts: list[str] = []
        self._cgroups: list[str] = []
        for path in (self.proc / "pressure", self.sys / "class" / "block",
                     self.sys / "dev" / "block", self.run / "udev" / "data",
                     self.sys / "fs" / "cgroup"):  # fmt: skip
            path.mkdir(parents=True, exist_ok=True)
        (self.proc / "stat").write_text(f"cpu 1 1 1 1\nbtime {BOOT_TICKS}\n")
        (self.sys / "fs" / "cgroup" / "cgroup.controllers").write_text("cpu io memory pids\n")
        for minor, disk in enumerate(DISKS):
            self._block(disk, 8, minor * 16, partition=None)
            self._block(disk + PART_SUFFIX[disk], 8, minor * 16 + 1, partition=disk)

    def env(self) -> dict[str, str]:
        return {"HOST_PROC": str(self.proc), "HOST_SYS": str(self.sys), "HOST_RUN": str(self.run)}

    def _block(self, name: str, major: int, minor: int, partition: str | None) -> None:
        directory = self.sys / "class" / "block" / name
        if partition is not None:
            directory = self.sys / "class" / "block" / partition / name
            link = self.sys / "class" / "block" / name
            if not link.exists():
                directory.mkdir(parents=True, exist_ok=True)
                link.symlink_to(directory)
            (directory / "partition").write_text("1\n")
        directory.mkdir(parents=True, exist_ok=True)
        dev = self.sys / "dev" / "block" / f"{major}:{minor}"
        if not dev.is_symlink():
            dev.symlink_to(directory)
        if partition is None and not name.startswith("loop"):
            udev = f"E:ID_MODEL=Soak_{name}\nE:ID_SERIAL_SHORT=S{minor:04d}\n"
            (self.run / "udev" / "data" / f"b{major}:{minor}").write_text(udev)

    def _churn_names(self, prefix: str) -> list[str]:
        # This round's short-lived names: never seen before, gone next round.
        return [f"{prefix}{self.round * CHURN_DEVICES + i}" for i in range(CHURN_DEVICES)]

    def advance(self) -> None:
        """Move every counter on by one step; with churn, rename the short-lived things."""
        self.round += 1
        step = self.round
        lines = []
        devices = [(d, 8, i * 16) for i, d in enumerate(DISKS)]
        devices += [(d + PART_SUFFIX[d], 8, i * 16 + 1) for i, d in enumerate(DISKS)]
        if self.churn:
            devices += [(name, 7, self.round * CHURN_DEVICES + i)
                        for i, name in enumerate(self._churn_names("loop"))]  # fmt: skip
        for name, major, minor in devices:
            r, w = 100 * step + minor, 50 * step + minor
            counters = [r, 1, r * 8, r // 2, w, 2, w * 8, w, 1, step * 3, step * 4,
                        0, 0, 0, 0, step, step]  # fmt: skip
            lines.append(diskstats_line(major, minor, name, counters))
        write_whole(self.proc / "diskstats", "\n".join(lines) + "\n")
        total = step * 1000
        write_whole(self.proc / "pressure" / "io",
                    f"some avg10=1.00 avg60=0.50 avg300=0.10 total={total}\n"
                    f"full avg10=0.50 avg60=0.20 avg300=0.05 total={total // 2}\n")  # fmt: skip
        self._write_mounts()
        self._write_processes(step)
        self._write_cgroups(step)

    def _write_mounts(self) -> None:
        lines = ["22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw"]
        names = [f"m{i}" for i in range(3)] + (self._churn_names("c") if self.churn else [])
        mounts = []
        for i, name in enumerate(names):
            path = self.root / "mnt" / name
            path.mkdir(parents=True, exist_ok=True)
            mounts.append(str(path))
            lines.append(f"{30 + i} 22 8:17 /{name} {path} rw - ext4 /dev/sdb1 rw")
        for old in set(self._mounts) - set(mounts):
            os.rmdir(old)  # gone: a failing statfs before it leaves mountinfo, as in life
        self._mounts = mounts
        text = "\n".join(lines) + "\n"
        write_whole(self.proc / "1" / "mountinfo", text)
        write_whole(self.proc / "self" / "mountinfo", text)

    def _write_processes(self, step: int) -> None:
        for pid in set(self._pid_names) - set(self.pids):
            for name in ("io", "stat", "status", "cmdline", "cgroup"):
                (self.proc / str(pid) / name).unlink(missing_ok=True)
            os.rmdir(self.proc / str(pid))
            del self._pid_names[pid]
        for pid in self.pids:
            directory = self.proc / str(pid)
            if pid not in self._pid_names:
                name = self._pid_names[pid] = f"worker{pid}"
                directory.mkdir(exist_ok=True)
                (directory / "stat").write_text(stat_line(pid, name, BOOT_TICKS + pid))
                (directory / "status").write_text(f"Name:\t{name}\nUid:\t0\t0\t0\t0\n")
                (directory / "cmdline").write_bytes(f"/usr/bin/{name}\0--soak\0".encode())
                (directory / "cgroup").write_text(f"0::/soak/{name}\n")
            written = step * (4 << 20) * (1 + pid % 3)  # MiB/s, above min_bytes_per_sec
            io = (f"rchar: 1\nwchar: 1\nsyscr: 1\nsyscw: 1\nread_bytes: {written // 2}\n"
                  f"write_bytes: {written}\ncancelled_write_bytes: 0\n")  # fmt: skip
            write_whole(directory / "io", io)

    def _write_cgroups(self, step: int) -> None:
        root = self.sys / "fs" / "cgroup"
        names = ["system.slice/a.service", "system.slice/b.service", "kubepods/pod1/ctr"]
        names += [f"kubepods/{n}" for n in self._churn_names("pod")] if self.churn else []
        for old in set(self._cgroups) - set(names):
            (root / old / "io.stat").unlink()
            os.rmdir(root / old)
        for i, name in enumerate(names):
            (root / name).mkdir(parents=True, exist_ok=True)
            rb, wb = step * 4096 * (i + 1), step * 8192 * (i + 1)
            write_whole(root / name / "io.stat",
                        f"8:0 rbytes={rb} wbytes={wb} rios={step} wios={step} dbytes=0 dios=0\n")
        self._cgroups = names
