"""The attribution sections: [pressure], [process_io] and [cgroup_io] (who waits, who is to
blame: docs/attribution.md). Same field specs as config/sections.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from diskprobe.config.sections import option


@dataclass
class PressureConfig:
    """Measurement diskprobe_pressure: I/O pressure stall information (PSI, kernel 4.20+)."""

    enabled: bool = option(True, "Read HOST_PROC/pressure/io (turns itself off without PSI).")
    interval: Optional[float] = option(
        None, "Own collection interval; unset means the agent-wide interval.", "duration"
    )


@dataclass
class ProcessIoConfig:
    """Measurement diskprobe_process_io: the top processes by storage I/O (the iotop view)."""

    enabled: bool = option(True, "Report the processes doing the most storage I/O.")
    interval: Optional[float] = option(
        None, "Own collection interval; unset means the agent-wide interval.", "duration"
    )
    top: int = option(5, "How many processes to report, busiest first.", minimum=1, maximum=1000)
    min_bytes_per_sec: int = option(
        1048576,
        "Leave out processes below this read+write rate (bytes per second).",
        maximum=10**15,
    )
    min_wait_ratio: float = option(
        0.05,
        "Also report processes blocked on block I/O at least this share of the interval "
        "(seconds per second, summed over threads; needs kernel.task_delayacct = 1).",
        minimum=0.0,
        maximum=10**6,
    )
    cmdline: bool = option(
        True, "Send the command line (first 256 characters); false drops it for privacy."
    )


@dataclass
class CgroupIoConfig:
    """Measurement diskprobe_cgroup_io: I/O per container, pod or systemd service."""

    enabled: bool = option(True, "Report I/O per cgroup (cgroup v2 io.stat, or v1 blkio).")
    interval: Optional[float] = option(
        None, "Own collection interval; unset means the agent-wide interval.", "duration"
    )
    max_depth: int = option(
        6,
        "How deep to walk below HOST_SYS/fs/cgroup (kubepods need about 4).",
        minimum=1,
        maximum=64,
    )
    max_cgroups: int = option(
        50,
        "Report at most this many cgroups with I/O in the interval, busiest first.",
        minimum=1,
        maximum=100_000,
    )
