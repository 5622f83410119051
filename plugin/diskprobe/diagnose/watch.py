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
from dataclasses import dataclass, field
from typing import Callable

from diskprobe.compute.bottleneck import Counts
from diskprobe.diagnose.classify import Classifier, Seen
from diskprobe.roots import HostRoots
from diskprobe.sources.file_places import Place
from diskprobe.sources.tasks import (
    list_threads,
    parent_map,
    read_cgroup_procs,
    read_comm,
    read_io_bytes,
    read_mapped_files,
    read_task_stat,
)

PERIOD_SEC = 0.1
DISCOVER_SEC = 0.5
WRAPPERS = frozenset({"sh", "bash", "dash", "zsh", "tini", "dumb-init", "pause", "catatonit",
                      "sudo", "su", "setpriv", "nohup", "timeout", "env", "stdbuf", "nice",
                      "ionice", "taskset", "numactl", "runuser", "chrt"})  # fmt: skip


@dataclass
class Process:
    pid: int
    start: int
    comm: str
    main: Counts = field(default_factory=Counts)  # its main thread (tid == pid)
    others: Counts = field(default_factory=Counts)  # its other threads
    tids: set[int] = field(default_factory=set)
    cpu: dict[int, tuple[int, int]] = field(default_factory=dict)  # tid -> first, last ticks
    mapped: dict[str, tuple[tuple[int, int], int]] | None = None
    fault_paths: list[str] = field(default_factory=list)  # the mapped files faults read
    io_first: tuple[int, int] | None = None  # (read, write) bytes of /proc/<pid>/io
    io_last: tuple[int, int] | None = None
    ended_at: float | None = None


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
        self._pid, self._cgroup = pid, cgroup
        self.processes: dict[int, Process] = {}
        self._members: set[int] = set()
        self.paths: Counter[tuple[Place, str]] = Counter()  # the files waited on, by place
        self.wrappers: set[int] = set()  # sh -c, tini, sudo...: passed through to the main

    def run(self, seconds: float, clock: Callable[[], float] = time.monotonic,
            sleep: Callable[[float], None] = time.sleep) -> Watched:  # fmt: skip
        started = clock()
        main_pid = self._discover(first=True)
        ticks, ended, next_discovery = 0, None, started + DISCOVER_SEC
        try:  # Ctrl-C ends the watch early: the report covers what was seen
            while True:
                now = clock()
                if now - started >= seconds:
                    break
                if now >= next_discovery:
                    self._discover(first=False)
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
        return Watched(self.processes, main_pid, ticks, clock() - started, ended,
                       self._classifier.unreadable)  # fmt: skip

    def _discover(self, first: bool) -> int:
        """Add the job's processes not yet known; the main pid on the first call."""
        if self._cgroup is not None:
            members = set(read_cgroup_procs(self._cgroup))
            parents = parent_map(self._roots)
            roots = sorted(pid for pid in members if parents.get(pid) not in members)
            main = self._through_wrappers(roots[0], parents) if roots else -1
        else:
            assert self._pid is not None
            parents = parent_map(self._roots)
            members = _descendants(self._pid, parents)
            main = self._through_wrappers(self._pid, parents)
        for pid in sorted(members - self._members):
            self._add(pid)
        self._members |= members
        return main

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
            self.processes[pid] = Process(pid, stat.start_ticks, read_comm(self._roots, pid))

    def _tick(self, at: float) -> None:
        for process in self.processes.values():
            if process.ended_at is not None:
                continue
            tids = list_threads(self._roots, process.pid)
            if not tids:
                process.ended_at = at
                continue
            for tid in tids:
                if not self._sample(process, tid):
                    process.ended_at = at  # a zombie: it exited, its parent has not reaped it
                    break
            reading = read_io_bytes(self._roots, process.pid)
            if reading is not None:
                process.io_first = process.io_first or reading
                process.io_last = reading

    def _sample(self, process: Process, tid: int) -> bool:
        """Count what one thread does; False when the process has exited."""
        stat = read_task_stat(self._roots, process.pid, tid)
        if stat is None:
            return True  # this thread ended between the listing and the read
        if tid == process.pid and (stat.start_ticks != process.start or stat.state in "ZX"):
            return False
        process.tids.add(tid)
        first = process.cpu.get(tid, (stat.cpu_ticks, 0))[0]
        process.cpu[tid] = (first, stat.cpu_ticks)
        seen = self._classifier.classify(process.pid, tid, stat.state)
        if seen.kind == "fault" and process.mapped is None:
            process.mapped = read_mapped_files(self._roots, process.pid)  # while it lives
        _count(process.main if tid == process.pid else process.others, seen)
        if seen.kind == "file" and seen.place is not None and seen.path is not None:
            self.paths[(seen.place, seen.path)] += 1
        return True


def _count(counts: Counts, seen: Seen) -> None:
    counts.samples += 1
    if seen.kind == "running":
        counts.running += 1
    elif seen.kind == "accelerator":
        counts.accelerator += 1
    elif seen.kind == "file" and seen.place is not None:
        counts.file_waits[(seen.direction, seen.place)] += 1
    elif seen.kind == "blocked":
        counts.blocked += 1
    elif seen.kind == "fault":  # placed once the watch knows which device was read
        counts.faults += 1
    else:
        counts.sleeping += 1


def _descendants(pid: int, parents: dict[int, int]) -> set[int]:
    children: dict[int, list[int]] = {}
    for child, parent in parents.items():
        children.setdefault(parent, []).append(child)
    found, stack = set(), [pid]
    while stack:
        current = stack.pop()
        if current in found or (current != pid and current not in parents):
            continue
        found.add(current)
        stack.extend(children.get(current, ()))
    return found if pid in parents else set()


def _ended(pid: int, main: Process | None, at: float, seconds: float) -> str:
    name = f" ({main.comm})" if main and main.comm else ""
    return f"process {pid}{name} ended {at:.1f} s into the {seconds:g} s watch"
