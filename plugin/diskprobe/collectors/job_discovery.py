"""Finding the training jobs on the host, for the job collector (collectors/jobs.py).

Two scans, both over processes not seen before only:
- `refresh()` (every MEMBERSHIP_SEC while jobs are watched, and before each discovery): the
  pid list, and each new process's parent and start time (its stat): the process tree that
  tells a job's new loader workers (respawned every epoch) and the jobs' groups;
- `discover()` (every [jobs] discovery_interval, sooner after start): each process old enough
  to have finished exec'ing (SETTLE_SEC: a container's init, `sh -c exec python ...`) is
  looked at once: its command line against `match`, its cgroup against `cgroups`; once it has
  lived ACCELERATOR_AGE_SEC (frameworks open the device at their first tensor on it), its open
  files for an accelerator's node, when the host has such a node at all. A candidate's
  environment is read for its name and rank, and nothing else is kept of it.
Kernel threads (children of kthreadd, pid 2) are never looked at.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field

from diskprobe.compute.job_names import (
    ENVIRONMENT,
    is_launcher,
    job_name,
    job_rank,
    own_rank,
    script_name,
)
from diskprobe.config import JobsConfig
from diskprobe.roots import HostRoots
from diskprobe.sources.job_procs import (
    accelerator_nodes_present,
    holds_accelerator,
    list_pids,
    read_cmdline,
    read_environ,
    read_uptime_ticks,
)
from diskprobe.sources.procio import read_cgroup
from diskprobe.sources.tasks import read_task_stat

SETTLE_SEC = 3.0
ACCELERATOR_AGE_SEC = 60.0
KTHREADD = 2


@dataclass(frozen=True)
class Identity:
    """What a job's points are tagged with; a new identity is a new job."""

    name: str
    rank: int
    cgroup: str | None


@dataclass
class Known:
    start: int
    ppid: int
    examined: bool = False  # cmdline and cgroup looked at
    fds_scanned: bool = False
    rank: tuple[str, ...] | None = None  # set for a candidate: its own rank variables
    identity: Identity | None = None  # set for a candidate, and for a job's main process
    launcher: bool = False  # torchrun, mpirun...: never a job of its own


@dataclass
class Discovery:
    roots: HostRoots
    config: JobsConfig
    clock_ticks: int
    known: dict[int, Known] = field(default_factory=dict)
    refused: int = 0  # processes whose fds or environment could not be read (privileges)

    def __post_init__(self) -> None:
        self._patterns = [re.compile(pattern) for pattern in self.config.match]

    @property
    def parents(self) -> dict[int, int]:
        return {pid: known.ppid for pid, known in self.known.items()}

    def refresh(self) -> None:
        pids = set(list_pids(self.roots))
        for pid in self.known.keys() - pids:
            del self.known[pid]
        for pid in pids - self.known.keys():
            stat = read_task_stat(self.roots, pid, pid)
            if stat is not None:
                self.known[pid] = Known(stat.start_ticks, stat.ppid)

    def discover(self) -> dict[int, tuple[str, ...]]:
        """Look at the processes not looked at yet; every candidate's own rank variables."""
        now = read_uptime_ticks(self.roots)
        accelerators = accelerator_nodes_present()
        for pid, known in self.known.items():
            if pid == KTHREADD or known.ppid == KTHREADD or now is None:
                continue
            age = (now - known.start) / self.clock_ticks
            if not known.examined and age >= SETTLE_SEC:
                known.examined = True
                if self._matches(pid):
                    self._candidate(pid, known)
            if accelerators and known.rank is None and not known.fds_scanned \
                    and age >= ACCELERATOR_AGE_SEC:  # fmt: skip
                known.fds_scanned = True
                held = holds_accelerator(self.roots, pid)
                self.refused += held is None
                if held:
                    self._candidate(pid, known)
        return {pid: known.rank for pid, known in self.known.items() if known.rank is not None}

    def _matches(self, pid: int) -> bool:
        if self._patterns:
            argv = read_cmdline(self.roots, pid)
            text = " ".join(argv or ())
            if text and any(pattern.search(text) for pattern in self._patterns):
                return True
        if self.config.cgroups:
            path = read_cgroup(self.roots, pid)
            return path is not None and any(fnmatch.fnmatchcase(path, glob)
                                            for glob in self.config.cgroups)  # fmt: skip
        return False

    def _candidate(self, pid: int, known: Known) -> None:
        env = read_environ(self.roots, pid, ENVIRONMENT)
        self.refused += env is None
        argv = read_cmdline(self.roots, pid) or []
        known.rank, known.launcher = own_rank(env or {}), is_launcher(argv)
        known.identity = self._identity(pid, env or {}, argv)

    def _identity(self, pid: int, env: dict[str, str], argv: list[str]) -> Identity:
        return Identity(job_name(env, script_name(argv)), job_rank(env),
                        read_cgroup(self.roots, pid))  # fmt: skip

    def identity_of(self, pid: int) -> Identity:
        """A job's tags, from its main process: read once (a wrapper's child is no candidate)."""
        known = self.known.get(pid)
        if known is not None and known.identity is not None:
            return known.identity
        env = read_environ(self.roots, pid, ENVIRONMENT) or {}
        identity = self._identity(pid, env, read_cmdline(self.roots, pid) or [])
        if known is not None:
            known.identity = identity
        return identity

    def launchers(self) -> set[int]:
        return {pid for pid, known in self.known.items() if known.launcher}

    def forget(self, pid: int) -> None:
        """The process exec'ed: look at it again as a new one."""
        self.known.pop(pid, None)
