"""The watch behind `diskprobe diagnose`: every PERIOD_SEC, the state of every thread of the job
and, for a thread that is not running, the system call it is blocked in and the file that
call works on. Counts per task, no ptrace and no eBPF: the job is never stopped.

The job is a process and its descendants (found again every DISCOVER_SEC: loader workers
respawned each epoch are followed) or the processes of a cgroup. Its "main" process is the
one given, or the cgroup's process tree root, past wrappers (sh, tini, pause...) that have a
single child.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from typing import Callable

from diskprobe.collectors.job_process import Process, ProcessSampler
from diskprobe.collectors.task_classify import Classifier
from diskprobe.compute.job_groups import WRAPPERS, job_members
from diskprobe.roots import HostRoots
from diskprobe.sources.file_places import Place
from diskprobe.sources.tasks import parent_map, read_cgroup_procs, read_comm, read_task_stat

PERIOD_SEC = 0.1
DISCOVER_SEC = 0.5


@dataclass
class Watched:
    """What the watch saw: the processes, the main one, the ticks, when it ended."""

    processes: dict[int, Process]
    main_pid: int
    ticks: int
    seconds: float
    ended: str | None
    unreadable_syscalls: int


class Watch:
    def __init__(self, roots: HostRoots, classifier: Classifier, pid: int | None = None,
                 cgroup: str | None = None) -> None:  # fmt: skip
        self._roots, self._classifier = roots, classifier
        self._sampler = ProcessSampler(roots, classifier)
        self._pid, self._cgroup = pid, cgroup
        self.processes: dict[int, Process] = {}
        self._members: set[int] = set()
        self._main = -1
        self.wrappers: set[int] = set()  # sh -c, tini, sudo...: passed through to the main

    @property
    def paths(self) -> Counter[tuple[Place, str]]:
        """The files waited on, by place."""
        return self._sampler.paths

    def run(self, seconds: float, clock: Callable[[], float] = time.monotonic,
            sleep: Callable[[float], None] = time.sleep) -> Watched:  # fmt: skip
        started = clock()
        main_pid = self._discover()
        ticks, ended, next_discovery = 0, None, started + DISCOVER_SEC
        try:  # Ctrl-C ends the watch early: the report covers what was seen
            while True:
                now = clock()
                if now - started >= seconds:
                    break
                if now >= next_discovery:
                    self._discover()
                    next_discovery = now + DISCOVER_SEC
                self._tick(now - started)
                ticks += 1
                main = self.processes.get(main_pid)
                if main is None or main.ended_at is not None:
                    ended = _ended(main_pid, main, now - started, seconds)
                    break
                sleep(max(0.0, started + ticks * PERIOD_SEC - clock()))
        except KeyboardInterrupt:
            pass
        self._read_counters()
        self._classifier.files.close()
        return Watched(self.processes, main_pid, ticks, clock() - started, ended,
                       self._classifier.unreadable)  # fmt: skip

    def _discover(self) -> int:
        """Add the job's processes not yet known; the main pid (found on the first call)."""
        parents = parent_map(self._roots)
        if self._cgroup is not None:
            members = set(read_cgroup_procs(self._cgroup))
            roots = sorted(pid for pid in members if parents.get(pid) not in members)
            main = self._through_wrappers(roots[0], parents) if roots else -1
        else:
            assert self._pid is not None
            members = job_members(self._pid, parents, set()) if self._pid in parents else set()
            main = self._through_wrappers(self._pid, parents)
        self._main = main if self._main == -1 else self._main
        for pid in sorted(members - self._members):
            self._add(pid)
        self._members |= members
        self._read_counters()
        return self._main

    def _through_wrappers(self, pid: int, parents: dict[int, int]) -> int:
        while read_comm(self._roots, pid) in WRAPPERS:
            children = [child for child, parent in parents.items() if parent == pid]
            if len(children) != 1:
                break
            self.wrappers.add(pid)  # it waits for its child: neither main nor a worker
            pid = children[0]
        return pid

    def _add(self, pid: int) -> None:
        stat = read_task_stat(self._roots, pid, pid)
        if stat is not None:
            self.processes[pid] = Process(pid, stat.start_ticks, read_comm(self._roots, pid),
                                          main_process=pid == self._main)  # fmt: skip

    def _tick(self, at: float) -> None:
        for process in self.processes.values():
            self._sampler.sample(process, at)

    def _read_counters(self) -> None:
        for process in self.processes.values():
            self._sampler.read_counters(process)


def _ended(pid: int, main: Process | None, at: float, seconds: float) -> str:
    name = f" ({main.comm})" if main and main.comm else ""
    return f"process {pid}{name} ended {at:.1f} s into the {seconds:g} s watch"
