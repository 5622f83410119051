"""cgroup I/O counters: v2 io.stat / io.pressure, v1 blkio.throttle.*_recursive, maj:min names.

Pure parsers take file text; read functions take HostRoots (everything under roots.sys).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterator

from diskprobe.roots import HostRoots
from diskprobe.sources.u64 import parse_u64

DevNo = tuple[int, int]
# Counter order in every tuple below; v1 has no discard column (4 values, not 5).
READ_BYTES, WRITE_BYTES, READS, WRITES, DISCARD_BYTES = range(5)
V2_KEYS = ("rbytes", "wbytes", "rios", "wios", "dbytes")
V1_BYTES_FILE = "blkio.throttle.io_service_bytes_recursive"
V1_IOS_FILE = "blkio.throttle.io_serviced_recursive"


@dataclass(frozen=True)
class Hierarchy:
    """Where the I/O counters live: a v2 root with the io controller, or the v1 blkio root."""

    version: int  # 2 or 1
    root: str


def _devno(text: str) -> DevNo | None:
    major, sep, minor = text.partition(":")
    if not sep or parse_u64(major) is None or parse_u64(minor) is None:
        return None
    return int(major), int(minor)


def parse_io_stat(text: str, rejected: list[str] | None = None) -> dict[DevNo, tuple[int, ...]]:
    """cgroup v2 io.stat; other keys (cost.*, use_delay ...) are ignored. A line looks like:
    8:0 rbytes=1459200 wbytes=314773504 rios=192 wios=353 dbytes=0 dios=0
    """
    result: dict[DevNo, tuple[int, ...]] = {}
    for line in text.splitlines():
        parts = line.split()
        devno = _devno(parts[0]) if parts else None
        if devno is None:
            continue
        values = dict(part.partition("=")[::2] for part in parts[1:])
        counters = tuple(parse_u64(values.get(key) or "0") for key in V2_KEYS)
        if None not in counters:  # a bad value drops its device's line, not the cgroup
            result[devno] = counters  # type: ignore[assignment]
        elif rejected is not None:
            rejected.append(line)
    return result


def parse_blkio_rwstat(text: str, rejected: list[str] | None = None) -> dict[DevNo, dict[str, int]]:
    """cgroup v1 blkio rwstat file; the last line ("Total 1234") has no device. Lines look like:
    8:0 Read 1234
    8:0 Write 5678
    8:0 Total 6912
    """
    result: dict[DevNo, dict[str, int]] = {}
    for line in text.splitlines():
        parts = line.split()
        devno = _devno(parts[0]) if len(parts) == 3 else None
        value = parse_u64(parts[2]) if devno is not None else None
        if devno is None or value is None:
            if devno is not None and rejected is not None:
                rejected.append(line)
            continue
        result.setdefault(devno, {})[parts[1]] = value
    return result


def v1_counters(
    bytes_text: str, ios_text: str, rejected: list[str] | None = None
) -> dict[DevNo, tuple[int, ...]]:
    """Merge the v1 bytes and serviced files into (read_bytes, write_bytes, reads, writes)."""
    sizes = parse_blkio_rwstat(bytes_text, rejected)
    ios = parse_blkio_rwstat(ios_text, rejected)
    result: dict[DevNo, tuple[int, ...]] = {}
    for devno in sizes.keys() | ios.keys():
        size, count = sizes.get(devno, {}), ios.get(devno, {})
        result[devno] = (
            size.get("Read", 0),
            size.get("Write", 0),
            count.get("Read", 0),
            count.get("Write", 0),
        )
    return result


def read_text(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def _has_io_controller(root: str) -> bool:
    return "io" in (read_text(os.path.join(root, "cgroup.controllers")) or "").split()


def find_hierarchy(roots: HostRoots) -> Hierarchy | None:
    """v2 with io enabled (pure v2 at fs/cgroup, or hybrid fs/cgroup/unified), else v1 blkio."""
    for candidate in (roots.sys_path("fs", "cgroup"), roots.sys_path("fs", "cgroup", "unified")):
        if _has_io_controller(candidate):
            return Hierarchy(2, candidate)
    blkio = roots.sys_path("fs", "cgroup", "blkio")
    if os.path.exists(os.path.join(blkio, V1_BYTES_FILE)):
        return Hierarchy(1, blkio)
    return None


def walk_cgroups(root: str, max_depth: int) -> Iterator[str]:
    """Relative paths ("" is the root) of cgroup directories down to max_depth levels."""
    stack: list[tuple[str, int]] = [("", 0)]
    while stack:
        relative, depth = stack.pop()
        yield relative
        if depth >= max_depth:
            continue
        try:
            with os.scandir(os.path.join(root, relative)) as entries:
                children = [e.name for e in entries if e.is_dir(follow_symlinks=False)]
        except OSError:
            continue
        stack.extend((os.path.join(relative, name), depth + 1) for name in children)


def read_counters_text(hierarchy: Hierarchy, relative: str) -> str | None:
    """The raw counter text of one cgroup (v1: both files joined by a NUL)."""
    directory = os.path.join(hierarchy.root, relative)
    if hierarchy.version == 2:
        return read_text(os.path.join(directory, "io.stat"))
    sizes = read_text(os.path.join(directory, V1_BYTES_FILE))
    ios = read_text(os.path.join(directory, V1_IOS_FILE))
    return None if sizes is None or ios is None else f"{sizes}\0{ios}"


def parse_counters_text(
    version: int, text: str, rejected: list[str] | None = None
) -> dict[DevNo, tuple[int, ...]]:
    """`rejected` collects the device lines left out for a value that is no counter."""
    if version == 2:
        return parse_io_stat(text, rejected)
    sizes, _, ios = text.partition("\0")
    return v1_counters(sizes, ios, rejected)


class DeviceNames:
    """maj:min to kernel name via the HOST_SYS/dev/block/<maj>:<min> symlink, cached."""

    def __init__(self, roots: HostRoots) -> None:
        self._roots = roots
        self._names: dict[DevNo, str] = {}

    def name(self, devno: DevNo) -> str:
        cached = self._names.get(devno)
        if cached is None:
            key = f"{devno[0]}:{devno[1]}"
            try:
                cached = os.path.basename(os.readlink(self._roots.sys_path("dev", "block", key)))
            except OSError:
                return key  # not cached: the device may appear in sysfs later
            if len(self._names) > 4096:
                self._names.clear()
            self._names[devno] = cached
        return cached


def whole_disk(roots: HostRoots, devno: DevNo) -> DevNo:
    """The disk a partition is on (I/O limits and cgroup counters are per disk); else devno."""
    block = roots.sys_path("dev", "block", f"{devno[0]}:{devno[1]}")
    if not os.path.exists(os.path.join(block, "partition")):
        return devno
    parent = _devno((read_text(os.path.join(block, "..", "dev")) or "").strip())
    return parent or devno
