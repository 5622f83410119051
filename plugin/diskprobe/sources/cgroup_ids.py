"""cgroup v2 ids (what bpftrace's `cgroup` builtin gives: the cgroup directory's inode number on
kernfs) back to their paths, under HOST_SYS.

The v2 hierarchy is /sys/fs/cgroup on a pure v2 host, /sys/fs/cgroup/unified on a hybrid one
(systemd's layout with v1 controllers beside it); a pure v1 host has none: per-cgroup latency
is then off. The tree is walked for its directories' inode numbers (readdir gives them: no
stat), at most MAX_DEPTH deep and MAX_CGROUPS entries, and walked again when an id is not
known, at most once per REFRESH_SEC.
"""

from __future__ import annotations

import os
import time
from typing import Callable

from diskprobe.roots import HostRoots

MAX_DEPTH = 12
MAX_CGROUPS = 100_000
REFRESH_SEC = 10.0
CGROUP2_MAGIC = "cgroup.controllers"  # a file every v2 cgroup has, v1 ones never


def v2_root(roots: HostRoots) -> str | None:
    """The cgroup v2 hierarchy's directory, or None on a pure v1 host."""
    for parts in (("fs", "cgroup"), ("fs", "cgroup", "unified")):
        directory = roots.sys_path(*parts)
        if os.path.isfile(os.path.join(directory, CGROUP2_MAGIC)):
            return directory
    return None


class CgroupIds:
    def __init__(self, root: str, now: Callable[[], float] = time.monotonic) -> None:
        self.root, self._now = root, now
        self._paths: dict[int, str] = {}
        self._walked_at: float | None = None

    def path(self, cgroup_id: int) -> str | None:
        """The cgroup's path below the root ("/" for the root), None when unknown."""
        found = self._paths.get(cgroup_id)
        now = self._now()
        if found is None and (self._walked_at is None or now - self._walked_at >= REFRESH_SEC):
            self._walked_at = now
            self._paths = walk_ids(self.root)
            found = self._paths.get(cgroup_id)
        return found


def walk_ids(root: str) -> dict[int, str]:
    """inode -> path below `root` of every cgroup directory."""
    try:
        found = {os.stat(root).st_ino: "/"}
    except OSError:
        return {}
    stack = [(root, "", 0)]
    while stack and len(found) < MAX_CGROUPS:
        directory, relative, depth = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                path = f"{relative}/{entry.name}"
                found[entry.inode()] = path
                if depth + 1 < MAX_DEPTH:
                    stack.append((entry.path, path, depth + 1))
    return found
