"""The cgroup v2 tree of budget_host.SyntheticHost: each cgroup's own I/O per device, and the
io.stat (and io.pressure) files the kernel shows, summed over each cgroup's subtree.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from soak_node import write_whole

Rows = dict[tuple[int, int], list[float]]  # devno -> rbytes, wbytes, rios, wios


class CgroupTree:
    """cgroups under `root` (SYS/fs/cgroup); `own`: the I/O each did itself, by relative path."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.own: dict[str, Rows] = {}
        self.text: dict[str, str] = {}  # io.stat as last written
        root.mkdir(parents=True)
        (root / "cgroup.controllers").write_text("cpuset cpu io memory hugetlb pids rdma\n")

    def add(self, cgroup: str) -> None:
        relative = cgroup.strip("/")
        self.own.setdefault(relative, {})
        (self.root / relative).mkdir(parents=True, exist_ok=True)

    def remove(self, cgroup: str) -> None:
        """rmdir: the kernel folds a removed cgroup's counters into its parent's (rstat), so
        the ancestors' io.stat never go back."""
        relative = cgroup.strip("/")
        parent = self.own.setdefault(os.path.dirname(relative), {})
        for devno, row in self.own.pop(relative, {}).items():
            total = parent.setdefault(devno, [0.0] * 4)
            for index in range(4):
                total[index] += row[index]
        self.text.pop(relative, None)
        shutil.rmtree(self.root / relative)

    def write(self) -> None:
        """Each cgroup's io.stat: its subtree's I/O (written only when it changed)."""
        subtree: dict[str, Rows] = {}
        for path, own in self.own.items():
            parts = path.split("/")
            for depth in range(1, len(parts) + 1):
                target = subtree.setdefault("/".join(parts[:depth]), {})
                for devno, row in own.items():
                    total = target.setdefault(devno, [0.0] * 4)
                    for index in range(4):
                        total[index] += row[index]
        for path, rows in subtree.items():
            text = "".join(f"{ma}:{mi} rbytes={int(r[0])} wbytes={int(r[1])} rios={int(r[2])} "
                           f"wios={int(r[3])} dbytes=0 dios=0\n"
                           for (ma, mi), r in sorted(rows.items()))  # fmt: skip
            if self.text.get(path) != text and (self.root / path).is_dir():
                self.text[path] = text
                write_whole(self.root / path / "io.stat", text)
                write_whole(self.root / path / "io.pressure",
                            "some avg10=0.50 avg60=0.40 avg300=0.30 total=1000\n"
                            "full avg10=0.20 avg60=0.10 avg300=0.10 total=500\n")  # fmt: skip
