"""The agent's watch of training jobs: two daemon threads beside the collection loop.

- sampling (every [jobs] sample_interval): each watched job's threads, as `diagnose` samples
  them (collectors/job_process.py), through kept task files (sources/task_files.py); it reads
  only files that answer at once (stat, syscall, fd links, fdinfo, io);
- discovery (collectors/job_discovery.py): the process tree every MEMBERSHIP_SEC while jobs
  are watched (new loader workers join their job), new jobs at start-up (after 1, 2, 4, 8,
  16 s) and then every discovery_interval; and the reads that wait on a process's memory
  (cmdline, environ, maps), so that a job stuck in a page fault cannot stall the sampling.

The loop thread calls cut() once per interval: under the lock (held by a sampling tick for
microseconds per thread), each job watched for the whole window hands over its counts and
starts the next one. A job found mid-window, or whose main process ended or exec'ed, gives
nothing for that window: a point never mixes two identities.
"""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass, field
from typing import Callable, Iterator, TypeVar

from diskprobe.collectors.job_discovery import Discovery, Identity
from diskprobe.collectors.job_process import Process, ProcessSampler
from diskprobe.collectors.task_classify import Classifier
from diskprobe.compute.job_groups import JobRoot, job_members, job_roots
from diskprobe.config import JobsConfig
from diskprobe.roots import HostRoots
from diskprobe.sources.file_places import FilePlaces
from diskprobe.sources.job_procs import accelerator_nodes_present
from diskprobe.sources.task_files import TaskFiles
from diskprobe.sources.tasks import read_comm, read_mapped_files, read_task_stat

T = TypeVar("T")
MEMBERSHIP_SEC = 1.0
MAX_ERRORS = 20
START_DISCOVERIES = (1.0, 2.0, 4.0, 8.0, 16.0)  # seconds after start: jobs started with us


@dataclass
class WatchedJob:
    root: JobRoot
    identity: Identity
    processes: dict[int, Process] = field(default_factory=dict)
    ticks: int = 0  # samples in the current window
    full: bool = False  # watched since the current window began
    gone: bool = False  # its main process ended or exec'ed: dropped at the next cut

    @property
    def main(self) -> Process | None:
        return self.processes.get(self.root.main)


class JobSampler:
    def __init__(self, roots: HostRoots, config: JobsConfig, now: Callable[[], float]) -> None:
        """`now`: the collector's monotonic clock (collectors/base.py Clock)."""
        self.roots, self.config, self._now = roots, config, now
        self.places = FilePlaces(roots)
        self.files = TaskFiles(roots)
        classifier = Classifier(roots, os.uname().machine, self.places, self.files)
        self.sampler = ProcessSampler(roots, classifier, read_maps=False)
        self.discovery = Discovery(roots, config, os.sysconf("SC_CLK_TCK"))
        self.lock = threading.Lock()
        self.jobs: dict[tuple[int, int], WatchedJob] = {}  # (main pid, start ticks) -> job
        self.over_cap = 0  # jobs found beyond max_jobs at the last discovery
        self.errors: list[str] = []  # failures in the threads since the last cut
        self._execed: set[int] = set()  # main processes that exec'ed since the last discovery
        self._stop = threading.Event()
        self._found = threading.Event()  # set when a job is added: wakes the sampling thread
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for target, name in ((self._sample_loop, "jobs-sample"),
                             (self._discovery_loop, "jobs-discovery")):  # fmt: skip
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        """Never waits: a thread inside a read that hangs is a daemon, left behind."""
        self._stop.set()
        self._found.set()

    @property
    def unreadable(self) -> int:
        return self.sampler.classifier.unreadable

    def _sample_loop(self) -> None:
        period = self.config.sample_interval
        relist_every = max(1, round(MEMBERSHIP_SEC / period))  # threads listed once a second
        next_tick, ticks = self._now(), 0
        while not self._stop.wait(max(0.0, next_tick - self._now())):
            if not self.jobs:  # nothing to sample: asleep until discovery finds a job
                self._found.wait()
                self._found.clear()
            next_tick = max(next_tick + period, self._now())
            ticks += 1
            with self.lock, self._guard("sampling"):
                for job in self.jobs.values():
                    self._tick(job, self._now(), ticks % relist_every == 0)

    def _tick(self, job: WatchedJob, at: float, list_tasks: bool) -> None:
        if job.gone:
            return
        for process in job.processes.values():
            self.sampler.sample(process, at, list_tasks)
        main = job.main
        if main is None or main.ended_at is not None or main.execed:
            job.gone = True  # a partial window and another identity: no point from it
            if main is not None and main.execed:
                self._execed.add(main.pid)
            return
        job.ticks += 1

    def _discovery_loop(self) -> None:
        started = self._now()
        schedule = [started + delay for delay in START_DISCOVERIES]
        next_discovery = started
        while not self._stop.is_set():
            now = self._now()
            with self._guard("discovery"):
                if now >= next_discovery:
                    upcoming = [at for at in schedule if at > now]
                    next_discovery = upcoming[0] if upcoming else \
                        now + self.config.discovery_interval  # fmt: skip
                    self._discover()
                elif self.jobs:
                    self._refresh_members()
                self._read_deferred_maps()
            wait = MEMBERSHIP_SEC if self.jobs else next_discovery - self._now()
            self._stop.wait(max(0.05, min(wait, next_discovery - self._now())))

    @contextlib.contextmanager
    def _guard(self, what: str) -> Iterator[None]:
        """A failure is counted and kept for collect() to report, never a dead thread."""
        try:
            yield
        except Exception as error:
            self.errors.append(f"{what}: {type(error).__name__}: {error}"[:300])
            del self.errors[:-MAX_ERRORS]

    def active(self) -> bool:
        """Whether there is anything to look for: no accelerator and no match/cgroups, none."""
        return bool(self.config.match or self.config.cgroups) or accelerator_nodes_present()

    def _discover(self) -> None:
        if not self.active():
            return
        with self.lock:
            execed, self._execed = self._execed, set()
        for pid in execed:
            self.discovery.forget(pid)  # looked at again, as a new process
        self.discovery.refresh()
        candidates = self.discovery.discover()
        roots = job_roots(candidates, self.discovery.parents,
                          lambda pid: read_comm(self.roots, pid),
                          self.discovery.launchers())  # fmt: skip
        found = {(root.main, known.start): root for root in roots
                 if (known := self.discovery.known.get(root.main)) is not None}  # fmt: skip
        with self.lock:
            for key in self.jobs.keys() - found.keys():
                self.jobs[key].gone = True  # its processes ended
            watched = sum(not job.gone for job in self.jobs.values())
        self.over_cap = max(0, len(found) - self.config.max_jobs)
        new = [(key, root) for key, root in sorted(found.items()) if key not in self.jobs]
        for key, root in new[: max(0, self.config.max_jobs - watched)]:
            job = WatchedJob(root, self.discovery.identity_of(root.main))
            main = self._process(root.main, job)  # sampled from its first tick on
            if main is not None:
                job.processes[main.pid] = main
                with self.lock:
                    self.jobs[key] = job
        self._refresh_members()
        if self.jobs:
            self._found.set()

    def _refresh_members(self) -> None:
        """New processes of each job (loader workers), each a Process to sample."""
        self.discovery.refresh()
        parents = self.discovery.parents
        with self.lock:
            jobs = [job for job in self.jobs.values() if not job.gone]
        roots = {job.root.root for job in jobs}
        for job in jobs:
            members = job_members(job.root.root, parents, roots - {job.root.root})
            added = [self._process(pid, job) for pid in
                     sorted(members - job.processes.keys() - set(job.root.wrappers))]  # fmt: skip
            with self.lock:
                job.processes.update((process.pid, process) for process in added if process)

    def _process(self, pid: int, job: WatchedJob) -> Process | None:
        stat = read_task_stat(self.roots, pid, pid)
        if stat is None:
            return None
        process = Process(pid, stat.start_ticks, "", main_process=pid == job.root.main)
        self.sampler.read_counters(process)  # its reads count from its start in the job
        return process

    def _read_deferred_maps(self) -> None:
        """The maps of processes seen in page faults (a read that waits on their mmap lock)."""
        with self.lock:
            wanting = [process for job in self.jobs.values() for process in
                       job.processes.values() if process.wants_maps and process.mapped is None]
        for process in wanting:
            mapped = read_mapped_files(self.roots, process.pid)
            with self.lock:
                process.mapped, process.wants_maps = mapped, False

    def cut(self, finish: Callable[[WatchedJob], T]) -> list[T]:
        """End the window: `finish` each job (under the lock, before its counts start again;
        `job.full` says whether it was watched through the whole window); drop the jobs that
        are gone and the processes that ended."""
        done: list[T] = []
        with self.lock:
            for key, job in list(self.jobs.items()):
                if job.gone:
                    del self.jobs[key]
                    for pid in job.processes:
                        self._forget(pid)
                    continue
                for process in job.processes.values():
                    self.sampler.read_counters(process)
                done.append(finish(job))
                job.full, job.ticks = True, 0
                for pid, process in list(job.processes.items()):
                    if process.ended_at is not None:
                        del job.processes[pid]
                        self._forget(pid)
                    else:
                        process.new_window()
                        self.places.forget(pid)  # its mount table is read again if needed
            self.sampler.paths.clear()
        return done

    def _forget(self, pid: int) -> None:
        self.files.forget(pid)
        self.places.forget(pid)
