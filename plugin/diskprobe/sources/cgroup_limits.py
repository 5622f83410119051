"""The I/O limits a process's cgroups put on a device, and that cgroup's I/O counters.

cgroup v2 io.max (Documentation/admin-guide/cgroup-v2.rst), one line per limited device:
  8:16 rbps=2097152 wbps=max riops=max wiops=120
cgroup v1 blkio.throttle.{read,write}_{bps,iops}_device (blkio-controller.rst):
  8:16 2097152
A limit set on any ancestor holds too, so the cgroup and every parent up to the root count.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import NamedTuple

from diskprobe.roots import HostRoots
from diskprobe.sources.cgroups import (
    DevNo,
    Hierarchy,
    parse_counters_text,
    parse_io_stat,
    read_counters_text,
    read_text,
)
from diskprobe.sources.u64 import parse_u64

V1_LIMIT_FILES = {"rbps": "blkio.throttle.read_bps_device",
                  "wbps": "blkio.throttle.write_bps_device",
                  "riops": "blkio.throttle.read_iops_device",
                  "wiops": "blkio.throttle.write_iops_device"}  # fmt: skip


@dataclass(frozen=True)
class Limit:
    device: DevNo
    key: str  # rbps, wbps (bytes/s), riops, wiops (requests/s)
    value: int
    cgroup: str  # the directory that sets it


def parse_io_max(text: str) -> dict[DevNo, dict[str, int]]:
    """v2 io.max: the limits that are set ("max" is none)."""
    limits: dict[DevNo, dict[str, int]] = {}
    for line in text.splitlines():
        parts = line.split()
        numbers = parts[0].partition(":") if parts else ("", "", "")
        major, minor = parse_u64(numbers[0]), parse_u64(numbers[2])
        if major is None or minor is None:
            continue
        for part in parts[1:]:
            key, _, value = part.partition("=")
            number = parse_u64(value)
            if key in V1_LIMIT_FILES and number is not None:
                limits.setdefault((major, minor), {})[key] = number
    return limits


def parse_v1_limit(text: str) -> dict[DevNo, int]:
    """One v1 throttle file: "8:16 2097152" per limited device."""
    found = {}
    for line in text.splitlines():
        parts = line.split()
        numbers = parts[0].partition(":") if len(parts) == 2 else ("", "", "")
        major, minor, value = parse_u64(numbers[0]), parse_u64(numbers[2]), parse_u64(parts[-1])
        if major is not None and minor is not None and value is not None:
            found[(major, minor)] = value
    return found


class ProcCgroup(NamedTuple):
    unified: str | None  # the v2 line's path ("0::/a/b")
    blkio: str | None  # the v1 blkio line's ("5:blkio:/a"), the first if several
    first: str | None  # the first line's, whatever its controllers

    @property
    def path(self) -> str | None:
        """The process's cgroup as the cgroup tags show it: v2's, else blkio's, else any."""
        return next((p for p in (self.unified, self.blkio, self.first) if p is not None), None)


# /proc/<pid>/cgroup, one "hierarchy-id:controllers:path" a line (cgroups(7)):
#   12:blkio:/kubepods/pod1        (v1)
#   0::/system.slice/sshd.service  (v2, or the hybrid layout's unified hierarchy)
def parse_proc_cgroup(text: str) -> ProcCgroup:
    """The one parser of /proc/<pid>/cgroup (process_io, diagnose, the job watch)."""
    unified = blkio = first = None
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        first = first if first is not None else parts[2]
        if parts[0] == "0" and parts[1] == "":
            unified = parts[2]
        elif blkio is None and "blkio" in parts[1].split(","):
            blkio = parts[2]
    return ProcCgroup(unified, blkio, first)


@dataclass(frozen=True)
class JobCgroup:
    version: int  # 2 or 1
    directory: str  # the process's cgroup
    base: str  # the hierarchy's root: limits are looked for from directory up to here


def job_cgroup(roots: HostRoots, pid: int) -> JobCgroup | None:
    """The process's cgroup in the hierarchy that can limit its I/O, or None."""
    text = read_text(roots.proc_path(str(pid), "cgroup")) or ""
    unified, blkio, _ = parse_proc_cgroup(text)
    for version, base, path in ((2, roots.sys_path("fs", "cgroup"), unified),
                                (2, roots.sys_path("fs", "cgroup", "unified"), unified),
                                (1, roots.sys_path("fs", "cgroup", "blkio"), blkio)):  # fmt: skip
        if path is None:
            continue
        directory = os.path.normpath(os.path.join(base, path.lstrip("/")))
        marker = "io.max" if version == 2 else V1_LIMIT_FILES["rbps"]
        if directory.startswith(base) and os.path.exists(os.path.join(directory, marker)):
            return JobCgroup(version, directory, base)
    return None


def limits_on(cgroup: JobCgroup, devices: set[DevNo]) -> list[Limit]:
    """Limits on `devices` set in the cgroup or any parent, up to the hierarchy's root."""
    found: list[Limit] = []
    directory, top = cgroup.directory, cgroup.base
    while directory.startswith(top):
        if cgroup.version == 2:
            table = parse_io_max(read_text(os.path.join(directory, "io.max")) or "")
        else:
            table = {}
            for key, name in V1_LIMIT_FILES.items():
                for devno, value in parse_v1_limit(
                        read_text(os.path.join(directory, name)) or "").items():
                    table.setdefault(devno, {})[key] = value
        found += [Limit(devno, key, value, directory) for devno, values in table.items()
                  if devno in devices for key, value in values.items() if value > 0]
        if directory == top:
            break
        directory = os.path.dirname(directory)
    return found


def cgroup_counters(cgroup: JobCgroup) -> dict[DevNo, tuple[int, ...]]:
    """(read bytes, write bytes, reads, writes[, discard bytes]) per device, recursive."""
    text = read_counters_text(Hierarchy(cgroup.version, cgroup.directory), "")
    if text is None:
        return {}
    if cgroup.version == 2:
        return parse_io_stat(text)
    return parse_counters_text(1, text)
