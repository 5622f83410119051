"""One process of a watched job, sampled thread by thread: what `diskprobe diagnose` and the
agent's job collector (collectors/jobs.py) both count.

Every tick, each thread's state (task/<tid>/stat) and, when it is not running, the call it is
blocked in (collectors/task_classify.py) add one sample to that thread's Counts. Each thread
also keeps its CPU ticks and, in the job's main process, its rchar at the window's start and
end: compute/thread_roles.py tells the input pipeline's threads from the runtime's by them.
A window ends with new_window(): the counts start again, the readings carry over.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from diskprobe.collectors.task_classify import Classifier, Seen
from diskprobe.compute.bottleneck import Counts
from diskprobe.compute.thread_roles import ThreadFacts
from diskprobe.roots import HostRoots
from diskprobe.sources.file_places import Place
from diskprobe.sources.procio import read_io_bytes
from diskprobe.sources.tasks import list_threads, read_comm, read_mapped_files


@dataclass
class Thread:
    counts: Counts = field(default_factory=Counts)
    name: str = ""
    cpu: tuple[int, int] = (0, 0)  # CPU ticks at the window's start and at the last sample
    rchar: tuple[int | None, int | None] = (None, None)  # at the window's start and end
    last: Seen | None = None  # what it did at the last sample where it had run since
    runs: int | None = None  # times it was put on a CPU (schedstat), as of `last`
    ended: bool = False  # gone from the process's task list: dropped at the next window


@dataclass
class Process:
    pid: int
    start: int
    comm: str
    threads: dict[int, Thread] = field(default_factory=dict)
    mapped: dict[str, tuple[tuple[int, int], int]] | None = None
    fault_paths: list[str] = field(default_factory=list)  # the mapped files faults read
    io: tuple[tuple[int, int] | None, tuple[int, int] | None] = (None, None)  # first, last
    ended_at: float | None = None
    main_process: bool = False  # the job's main process: its threads' rchar is read
    arg_start: int | None = None  # its stat's arg_start when first seen: another is an exec
    execed: bool = False
    wants_maps: bool = False  # a fault was seen; its maps are for another thread to read

    @property
    def main(self) -> Counts:
        """Its main thread's samples (tid == pid)."""
        thread = self.threads.get(self.pid)
        return thread.counts if thread else Counts()

    @property
    def others(self) -> Counts:
        """Its other threads' samples together."""
        total = Counts()
        for tid, thread in self.threads.items():
            if tid != self.pid:
                total.add(thread.counts)
        return total

    @property
    def cpu_ticks(self) -> int:
        return sum(thread.cpu[1] - thread.cpu[0] for thread in self.threads.values())

    def new_window(self) -> None:
        """The next window counts from here: readings carry over, counts start at zero; the
        threads that ended are forgotten (a thread per request must not grow it forever)."""
        self.threads = {tid: thread for tid, thread in self.threads.items() if not thread.ended}
        for thread in self.threads.values():
            thread.counts = Counts()
            thread.cpu = (thread.cpu[1], thread.cpu[1])
            thread.rchar = (thread.rchar[1], thread.rchar[1])
        self.io = (self.io[1], self.io[1])
        self.fault_paths = []


class ProcessSampler:
    """Samples processes' threads through one Classifier (and its kept task files)."""

    def __init__(self, roots: HostRoots, classifier: Classifier, read_maps: bool = True) -> None:
        """`read_maps`: read a faulting process's maps at once (diagnose); else only flag it:
        that read waits on the process's mmap lock, which the agent's sampler must not."""
        self._roots, self.classifier, self._read_maps = roots, classifier, read_maps
        self.files = classifier.files
        self.paths: Counter[tuple[Place, str]] = Counter()  # the files waited on, by place

    def sample(self, process: Process, at: float, list_tasks: bool = True) -> None:
        """One tick of every thread of `process`; marks it ended when it is gone.
        `list_tasks`: list its threads again (else the known ones: the agent lists them once
        a second, new threads of a framework's pools being rare after its start)."""
        if process.ended_at is not None:
            return
        tids = list_threads(self._roots, process.pid) if list_tasks or not process.threads \
            else list(process.threads)  # fmt: skip
        if not tids:
            self._end(process, at)
            return
        for tid in tids:
            if not self._sample(process, tid):
                self._end(process, at)  # a zombie: it exited, its parent has not reaped it
                return
        if list_tasks:
            for tid in process.threads.keys() - set(tids):
                process.threads[tid].ended = True  # its counts stay for this window
                self.files.forget(process.pid, tid)

    def _end(self, process: Process, at: float) -> None:
        process.ended_at = at
        self.files.forget(process.pid)

    def _sample(self, process: Process, tid: int) -> bool:
        """Count what one thread does; False when the process has exited."""
        thread = process.threads.get(tid)
        runs = self.files.runs(process.pid, tid)  # first: a run after it shows next time
        if thread is not None and thread.last is not None and runs == thread.runs:
            self._count(process, thread, thread.last)  # not run since: blocked as it was
            return True
        stat = self.files.stat(process.pid, tid)
        if stat is None:
            return True  # this thread ended between the listing and the read
        if tid == process.pid and (stat.start_ticks != process.start or stat.state in "ZX"):
            return False
        if tid == process.pid and stat.arg_start:
            process.arg_start = process.arg_start or stat.arg_start
            process.execed = process.execed or stat.arg_start != process.arg_start
        if thread is None:
            thread = process.threads[tid] = self._new_thread(process, tid, stat.cpu_ticks)
        thread.cpu = (thread.cpu[0], stat.cpu_ticks)
        seen = self.classifier.classify(process.pid, tid, stat.state)
        if seen.kind == "fault" and process.mapped is None:
            if self._read_maps:
                process.mapped = read_mapped_files(self._roots, process.pid)  # while it lives
            process.wants_maps = not self._read_maps
        # A blocked thread's sample holds until it runs again (runs, from schedstat, moves):
        # the next samples read one small file instead of its stat, call and file.
        blocked = stat.state in "SD" and runs is not None
        thread.last, thread.runs = (seen, runs) if blocked else (None, None)
        self._count(process, thread, seen)
        return True

    def _count(self, process: Process, thread: Thread, seen: Seen) -> None:
        count(thread.counts, seen)
        if seen.kind == "file" and seen.place is not None and seen.path is not None:
            self.paths[(seen.place, seen.path)] += 1

    def _new_thread(self, process: Process, tid: int, cpu: int) -> Thread:
        if not process.main_process or tid == process.pid:
            return Thread(cpu=(cpu, cpu))
        rchar = self.files.rchar(process.pid, tid)
        return Thread(name=read_comm(self._roots, process.pid, tid), cpu=(cpu, cpu),
                      rchar=(rchar, rchar))  # fmt: skip

    def read_counters(self, process: Process) -> None:
        """Storage bytes of the process and rchar of its main process's threads, now."""
        if process.ended_at is not None:
            return
        reading = read_io_bytes(self._roots, process.pid)
        if reading is not None:
            process.io = (process.io[0] or reading, reading)
        if process.main_process:
            for tid, thread in process.threads.items():
                if tid != process.pid:
                    rchar = self.files.rchar(process.pid, tid)
                    if rchar is not None:
                        thread.rchar = (thread.rchar[0] if thread.rchar[0] is not None
                                        else rchar, rchar)  # fmt: skip


def count(counts: Counts, seen: Seen) -> None:
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
        counts.thread_waits += seen.kind == "thread_wait"


def thread_facts(processes: list[Process], main_pid: int) -> list[ThreadFacts]:
    """Every sampled thread of the job, for compute/thread_roles.group_threads."""
    facts = []
    for process in processes:
        main_process = process.pid == main_pid
        for tid, thread in process.threads.items():
            first, last = thread.rchar
            read = last - first if first is not None and last is not None else None
            facts.append(ThreadFacts(thread.counts, main_process, main_process and tid == main_pid,
                                     read, thread.name))  # fmt: skip
    return facts
