"""Where the host's /proc, /sys and /run are: Telegraf's HOST_* variables move them."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping


@dataclass(frozen=True)
class HostRoots:
    """Filesystem roots every source reads under (containers mount the host's elsewhere)."""

    proc: str = "/proc"
    sys: str = "/sys"
    run: str = "/run"
    mount_prefix: str = ""

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> HostRoots:
        # Same names as Telegraf's gopsutil-based plugins, so one container spec serves both.
        return cls(
            proc=env.get("HOST_PROC") or "/proc",
            sys=env.get("HOST_SYS") or "/sys",
            run=env.get("HOST_RUN") or "/run",
            mount_prefix=env.get("HOST_MOUNT_PREFIX", "").rstrip("/"),
        )

    def proc_path(self, *parts: str) -> str:
        return os.path.join(self.proc, *parts)

    def sys_path(self, *parts: str) -> str:
        return os.path.join(self.sys, *parts)

    def run_path(self, *parts: str) -> str:
        return os.path.join(self.run, *parts)
