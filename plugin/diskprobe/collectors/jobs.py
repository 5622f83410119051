"""diskprobe_job: every training job's bottleneck, every interval, from the agent.

The sampling runs in collectors/job_sampler.py's threads; collect() ends each job's window
and turns its counts into `diagnose`'s verdict (compute/bottleneck.py, with the threads sorted
by compute/thread_roles.py), over that window's samples only. Without jobs to look for (no
accelerator node under /dev, no `match`, no `cgroups`) nothing runs but a look at /dev every
discovery_interval.
"""

from __future__ import annotations

import os

from diskprobe.collectors.base import BaseCollector, Collection, CollectorContext
from diskprobe.collectors.job_evidence import THROTTLE_REACHED, Snapshot, place_faults, throttles
from diskprobe.collectors.job_process import thread_facts
from diskprobe.collectors.job_sampler import JobSampler, WatchedJob
from diskprobe.compute.bottleneck import Shares, Verdict, decide
from diskprobe.compute.cgroup_tags import cgroup_tags
from diskprobe.compute.thread_roles import Groups, group_threads
from diskprobe.config import JobsConfig
from diskprobe.metric import FieldValue, Metric
from diskprobe.schema.job import BOTTLENECK_CODES, JOB
from diskprobe.sources.cgroup_limits import cgroup_counters, job_cgroup
from diskprobe.sources.diskstats import DiskStat, parse_diskstats, read_diskstats_text
from diskprobe.sources.privileges import ptrace_read_advice

IO_VERDICTS = ("disk", "checkpoint", "throttled")
Key = tuple[int, int]  # (main pid, start ticks)


def verdict_fields(verdict: Verdict, groups: Groups, ticks: int) -> dict[str, FieldValue]:
    """The verdict and the shares behind it, as diskprobe_job carries them: the main thread's
    as shares of its samples, the loaders' and the runtime's in thread-equivalents over the
    window's `ticks`; the device and mount point for the I/O verdicts."""
    main = Shares.of(groups.main, groups.main.samples)
    workers, runtime = (Shares.of(counts, ticks) for counts in (groups.workers, groups.runtime))
    fields: dict[str, FieldValue] = {
        "bottleneck": verdict.bottleneck, "bottleneck_code": BOTTLENECK_CODES[verdict.bottleneck],
        "main_running_ratio": main.running, "main_io_wait_ratio": main.io_wait,
        "main_waiting_ratio": main.sleeping + main.blocked,
        "workers_running_threads": workers.running, "workers_io_wait_threads": workers.io_wait,
        "runtime_running_threads": runtime.running, "samples": groups.main.samples,
    }  # fmt: skip
    place = verdict.place
    if verdict.bottleneck in IO_VERDICTS and place is not None:
        fields.update({key: value for key, value in (("device", place.device),
                                                     ("mount_point", place.mount_point)) if value})
    return fields


class JobsCollector(BaseCollector[JobsConfig]):
    name = "jobs"
    needs_prime = True  # the first collect() starts the threads and the first window

    def __init__(self, config: JobsConfig, context: CollectorContext) -> None:
        super().__init__(config, context)
        self.sampler = JobSampler(self._roots, config, self._clock.monotonic)  # tests watch it
        self._started = False
        self._since: dict[Key, tuple[str, int]] = {}  # the verdict and when it began
        self._snapshots: dict[Key, Snapshot] = {}  # each job's counters at its window's start
        self._at: float | None = None  # the monotonic time of the last cut
        self._clk_tck = os.sysconf("SC_CLK_TCK")

    def collect(self) -> Collection:
        if not self._started:
            self._started = True
            self.sampler.start()
        now, time_ns = self._clock.monotonic(), self._clock.wall_ns()
        elapsed = now - self._at if self._at is not None else 0.0
        self._at = now
        disks = self._disks() if self.sampler.jobs else {}
        made = self.sampler.cut(lambda job: self._finish(job, disks, elapsed, time_ns))
        metrics = [metric for metric in made if metric is not None]
        keys = set(self.sampler.jobs)
        self._since = {key: value for key, value in self._since.items() if key in keys}
        self._snapshots = {key: value for key, value in self._snapshots.items() if key in keys}
        self._note_limits()
        errors = self._take_errors()
        fields: dict[str, FieldValue] = {"jobs_over_cap": self.sampler.over_cap}
        return Collection(metrics=metrics, items=len(keys), errors=errors, agent_fields=fields)

    def _take_errors(self) -> int:
        with self.sampler.lock:
            errors, self.sampler.errors = self.sampler.errors, []
        for error in errors:
            self._log.warn_once(f"jobs-error:{error[:80]}", f"jobs: {error}")
        return len(errors)

    def _disks(self) -> dict[str, DiskStat]:
        try:
            return parse_diskstats(read_diskstats_text(self._roots))
        except OSError:
            return {}

    def _finish(self, job: WatchedJob, disks: dict[str, DiskStat], elapsed: float,
                time_ns: int) -> Metric | None:  # fmt: skip
        """The job's point for the window now ending (called under the sampler's lock)."""
        key = (job.root.main, job.main.start if job.main else 0)
        cgroup = job_cgroup(self._roots, job.root.main)
        after = Snapshot(disks, cgroup, cgroup_counters(cgroup) if cgroup else {})
        before = self._snapshots.get(key)
        self._snapshots[key] = after
        if before is None or not job.full or not job.ticks or elapsed <= 0:
            return None  # found during this window: its counters count from here
        for process in job.processes.values():
            place_faults(process, self.sampler.places, before, after)
        groups = group_threads(thread_facts(list(job.processes.values()), job.root.main))
        found = throttles(self._roots, self.sampler.places.devices, before, after, elapsed)
        held = {place for place, item in found.items() if item.reached >= THROTTLE_REACHED}
        verdict = decide(groups.main, groups.workers, job.ticks, held, None, groups.runtime)
        return self._metric(job, key, verdict, groups, elapsed, time_ns)

    def _metric(self, job: WatchedJob, key: Key, verdict: Verdict, groups: Groups,
                elapsed: float, time_ns: int) -> Metric:  # fmt: skip
        previous = self._since.get(key)
        since = previous[1] if previous and previous[0] == verdict.bottleneck else time_ns // 10**9
        self._since[key] = (verdict.bottleneck, since)
        processes = job.processes.values()
        read = sum(p.io[1][0] - p.io[0][0] for p in processes if p.io[0] and p.io[1])
        write = sum(p.io[1][1] - p.io[0][1] for p in processes if p.io[0] and p.io[1])
        fields = verdict_fields(verdict, groups, job.ticks)
        fields.update({
            "bottleneck_since": since, "pid": job.root.main,
            "cpu_cores": sum(p.cpu_ticks for p in processes) / self._clk_tck / elapsed,
            "read_bytes_per_sec": read / elapsed, "write_bytes_per_sec": write / elapsed,
            "processes": len(job.processes), "threads": sum(len(p.threads) for p in processes),
        })  # fmt: skip
        identity = job.identity
        tags = {"job": identity.name, "rank": str(identity.rank), "job_pid": str(job.root.main)}
        if identity.cgroup:
            tags.update(cgroup_tags(identity.cgroup))
        return Metric(JOB.name, tags, fields, time_ns)

    def _note_limits(self) -> None:
        if self.sampler.over_cap and self._log.first_time("jobs-over-cap"):
            self._log.warn(f"jobs: more jobs than max_jobs = {self.config.max_jobs}: "
                           f"{self.sampler.over_cap} left unwatched (diskprobe_agent "
                           "jobs_over_cap counts them)")  # fmt: skip
        if (self.sampler.unreadable or self.sampler.discovery.refused) \
                and self._log.first_time("jobs-privileges"):  # fmt: skip
            self._log.info("jobs: what jobs' threads wait on and which files they hold open "
                           f"is refused ({ptrace_read_advice()}): verdicts rest on the "
                           "threads' states (docs/diagnose.md#permissions)")  # fmt: skip

    def close(self) -> None:
        self.sampler.stop()

