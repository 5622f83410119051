"""Which mounts to report: filters, over-mounts and bind mounts, container path prefixes."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Sequence

from diskprobe.sources.mountinfo import Mount


@dataclass(frozen=True)
class MountTarget:
    path: str  # as reported: the host's mount point
    stat_path: str  # where statvfs looks: HOST_MOUNT_PREFIX + path
    device: str
    fstype: str
    mode: str
    major: int
    minor: int


def _matches(path: str, patterns: Sequence[str]) -> bool:
    return any(path == pattern or fnmatch.fnmatchcase(path, pattern) for pattern in patterns)


def _paths(mount_point: str, prefix: str) -> tuple[str, str]:
    """(reported path, statfs path). Mount points already under the prefix lose it."""
    if prefix and (mount_point == prefix or mount_point.startswith(prefix + "/")):
        return mount_point[len(prefix) :] or "/", mount_point
    return mount_point, prefix + mount_point


def select_mounts(
    mounts: Sequence[Mount],
    *,
    ignore_fs: Sequence[str],
    mount_points: Sequence[str] = (),
    ignore_mount_points: Sequence[str] = (),
    report_bind_mounts: bool = False,
    prefix: str = "",
) -> list[MountTarget]:
    # A path mounted over several times shows only its last (top) mount.
    visible: dict[str, Mount] = {}
    for mount in mounts:
        visible.pop(mount.mount_point, None)
        visible[mount.mount_point] = mount
    chosen: dict[tuple[int, int, str] | str, MountTarget] = {}
    for mount in visible.values():
        path, stat_path = _paths(mount.mount_point, prefix)
        if mount.fstype in ignore_fs or _matches(path, ignore_mount_points):
            continue
        if mount_points and not _matches(path, mount_points):
            continue
        target = MountTarget(
            path=path,
            stat_path=stat_path,
            device=mount.source.removeprefix("/dev/"),
            fstype=mount.fstype,
            mode="ro" if mount.read_only else "rw",
            major=mount.major,
            minor=mount.minor,
        )
        # The same filesystem tree (device and root within it) bind-mounted again: once,
        # under its shortest mount point.
        key: tuple[int, int, str] | str = (
            path if report_bind_mounts else (mount.major, mount.minor, mount.root)
        )
        known = chosen.get(key)
        if known is None or (len(path), path) < (len(known.path), known.path):
            chosen[key] = target
    return sorted(chosen.values(), key=lambda target: target.path)
