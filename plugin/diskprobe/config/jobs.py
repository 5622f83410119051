"""[jobs]: the agent's watch of every training job on the host (collectors/jobs.py), and its
rules: each `match` compiles, each `cgroups` glob is a path inside the cgroup tree."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from diskprobe.config.errors import ConfigError
from diskprobe.config.sections import option

ACCELERATOR_NODES = ("/dev/nvidia*, /dev/accel/*, /dev/dri/renderD*, /dev/kfd, /dev/neuron*, "
                     "/dev/davinci*")
CGROUP_MOUNT = "/sys/fs/cgroup"


@dataclass
class JobsConfig:
    """Measurement diskprobe_job: what every training job on the host is bound by."""

    enabled: bool = option(
        True,
        "Watch training jobs: every process holding an accelerator's device node open "
        f"({ACCELERATOR_NODES}), plus those `match` or `cgroups` name; needs root or "
        "CAP_SYS_PTRACE to read what their threads wait on.",
    )
    interval: Optional[float] = option(
        None, "Own collection interval; unset means the agent-wide interval.", "duration"
    )
    match: list[str] = option(
        [],
        "Regular expressions searched (unanchored) in each process's command line, its "
        'arguments joined by single spaces: a CPU job, e.g. ["train\\\\.py"].',
    )
    cgroups: list[str] = option(
        [],
        "Globs on cgroup paths below the hierarchy root, as diskprobe_cgroup_io's cgroup tag "
        'shows them, e.g. ["/kubepods.slice/*/*training*"]: their processes are jobs.',
    )
    max_jobs: int = option(
        32, "Watch at most this many jobs; more are counted in diskprobe_agent.", minimum=1,
        maximum=1000,
    )
    sample_interval: float = option(
        0.2,
        "How often each thread of a watched job is sampled (its state and blocked call).",
        "duration",
        minimum=0.05,
        maximum=10.0,
    )
    discovery_interval: float = option(
        30.0,
        "How often processes not seen before are looked at for new jobs (sooner in the first "
        "half minute after start).",
        "duration",
        minimum=1.0,
        maximum=3600.0,
    )


def check_jobs(jobs: JobsConfig, where: str) -> None:
    """Raise ConfigError for the first `match` or `cgroups` entry that cannot work."""
    for pattern in jobs.match:
        try:
            re.compile(pattern)
        except re.error as error:
            raise ConfigError(f"{where}[jobs] match: {pattern[:100]!r} is not a regular "
                              f"expression: {error}") from None  # fmt: skip
    for glob in jobs.cgroups:
        problem = _glob_problem(glob)
        if problem:
            raise ConfigError(f"{where}[jobs] cgroups: {glob[:100]!r} {problem}")


def _glob_problem(glob: str) -> str | None:
    if glob.startswith(CGROUP_MOUNT + "/") or glob == CGROUP_MOUNT:
        return (f"is a filesystem path: write the cgroup's path below {CGROUP_MOUNT}, as "
                "diskprobe_cgroup_io's cgroup tag shows it (e.g. \"/kubepods.slice/*\")")
    if not glob.startswith("/"):
        return 'must start with "/" (the cgroup tree\'s root, as the cgroup tag shows it)'
    if any(part in (".", "..") for part in glob.split("/")):
        return "must stay inside the cgroup tree (no . or .. components)"
    return None
