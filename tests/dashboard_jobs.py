"""diskprobe_job points for the dashboards' tests (tests/test_dashboards_jobs.py and
test_dashboards.py, beside dashboard_data.py's training host) and the fleet benchmark
(tests/bench/fleet_sim_series.py), made the way the agent makes them (collectors/jobs.py):
each interval's thread counts go through diskprobe's own verdict (compute/bottleneck.decide)
and shares (Shares.of), bottleneck_code is the schema's BOTTLENECK_CODES, bottleneck_since is
kept per job as the collector keeps it (the time its verdict last changed), and the cgroup
tags come from diskprobe's own cgroup path parser. Only the thread counts of each kind of
interval are made up (SYNTHETIC, with the reason on each row).

The training host's jobs, every 10 s (the agent's default interval): the meter's two ranks of
resnet50 (dashboard_data.TRAINING_RANKS) seen by the agent too, rank 0 disk-bound all along
(both alerts), rank 1 disk and compute in turn (exactly half: the agent's alert only); a job
without the meter disk-bound (etl-shards); compute (bert-ft) and input_cpu (vit-aug) ones; one
disk-bound in a third of its intervals (gpt-eval: under half); a job whose disk-bound spell
ended 20 minutes ago (llama-pt); and two jobs just started, disk-bound for 2 points (warmup:
too few) and for 3 (short-io: enough).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

from dashboard_data import GPU, SEC, Row, Value, schema_fields, synthetic
from diskprobe.collectors.jobs import verdict_fields
from diskprobe.compute.bottleneck import Counts, decide
from diskprobe.compute.cgroup_tags import cgroup_tags
from diskprobe.compute.thread_roles import Groups
from diskprobe.sources.file_places import Place

AGENT_STEP_S = 10  # [jobs] interval unset: the agent-wide 10 s
SAMPLES = 50  # the main thread's samples in an interval: 10 s at sample_interval 0.2 s
LOADERS = 4  # loader worker processes, one thread each
READ_BYTES = {"disk": 180e6, "input_cpu": 40e6, "compute": 5e6}


def interval_counts(kind: str, place: Place) -> tuple[Counts, Counts]:
    """(the main thread, the loaders) over one interval of a job bound by `kind`."""
    ticks = LOADERS * SAMPLES
    if kind == "disk":  # the loop waits on its loaders, which wait on reads of `place`
        return (Counts(SAMPLES, running=4, sleeping=SAMPLES - 4),
                Counts(ticks, running=20, sleeping=ticks - 170,
                       file_waits=Counter({("read", place): 150})))
    if kind == "input_cpu":  # the loop waits on its loaders, which decode on the CPU
        return (Counts(SAMPLES, running=5, sleeping=SAMPLES - 5),
                Counts(ticks, running=180, sleeping=ticks - 180))
    if kind == "compute":  # the loop runs (on a CPU or in the accelerator's driver)
        return (Counts(SAMPLES, running=45, sleeping=SAMPLES - 45),
                Counts(ticks, running=10, sleeping=ticks - 10))
    raise ValueError(kind)


def interval_fields(kind: str, device: str, mount: str, pid: int) -> dict[str, Value]:
    """One interval's fields (but bottleneck_since), as JobsCollector._metric makes them:
    diskprobe's own verdict and verdict_fields; only the rates and counts are made up."""
    main, loaders = interval_counts(kind, Place(device or None, mount, False, "ext4"))
    groups = Groups(main, loaders, Counts())
    verdict = decide(main, loaders, SAMPLES, set(), None, groups.runtime)
    assert verdict.bottleneck == kind, (kind, verdict.reasons)
    fields: dict[str, Value] = {**verdict_fields(verdict, groups, SAMPLES), "pid": pid,
                                "cpu_cores": float(main.running + loaders.running) / SAMPLES,
                                "read_bytes_per_sec": READ_BYTES[kind], "write_bytes_per_sec": 0.0,
                                "processes": 1 + LOADERS, "threads": 12 + LOADERS}  # fmt: skip
    return schema_fields("diskprobe_job", **fields)


@dataclass
class Since:
    """bottleneck_since as the collector keeps it: the time the verdict last changed."""

    verdict: str = ""
    since_s: int = 0

    def at(self, verdict: str, now_s: int) -> int:
        if verdict != self.verdict:
            self.verdict, self.since_s = verdict, now_s
        return self.since_s


def job_tags(host: str, job: str, rank: str, pid: int, cgroup: str) -> dict[str, str]:
    return {"host": host, "job": job, "rank": rank, "job_pid": str(pid),
            **cgroup_tags(cgroup.lstrip("/"))}


def pod_cgroup(index: int) -> str:
    uid = f"{index:08x}_7b4d_4e8a_9c0f_1a2b3c4d5e6f"
    return (f"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{uid}.slice/"
            f"cri-containerd-{index:012x}.scope")


# (job, rank), its main pid, the device and mount point under its data ("": in memory), and
# spells of (from, to: seconds before the write, the kinds of its intervals in turn, the
# newest first).
Spell = tuple[int, int, tuple[str, ...]]
DISK_BOUND, HALF = ("resnet50", "0"), ("resnet50", "1")  # the meter's two ranks, as the agent
NO_METER, COMPUTE, LOADERS_BOUND = ("etl-shards", "0"), ("bert-ft", "0"), ("vit-aug", "0")
ENDED, TOO_FEW, JUST_ENOUGH = ("llama-pt", "0"), ("warmup", "0"), ("short-io", "0")
BLIPS = ("gpt-eval", "0")  # disk in a third of its intervals: under half
JOBS: tuple[tuple[tuple[str, str], int, str, str, tuple[Spell, ...]], ...] = (
    (DISK_BOUND, 52000, "nvme1n1", "/data", ((-20 * 60, 0, ("disk",)),)),
    (HALF, 52001, "nvme1n1", "/data", ((-20 * 60, 0, ("disk", "compute")),)),
    (NO_METER, 53100, "nvme1n1", "/data", ((-20 * 60, 0, ("disk",)),)),
    (COMPUTE, 52002, "nvme0n1", "/datasets", ((-20 * 60, 0, ("compute",)),)),
    (LOADERS_BOUND, 52003, "", "/dev/shm", ((-20 * 60, 0, ("input_cpu",)),)),
    (BLIPS, 52005, "nvme0n1", "/datasets", ((-20 * 60, 0, ("compute", "compute", "disk")),)),
    # Disk-bound from 60 to 20 minutes ago (before the alert's 15 minutes), compute since.
    (ENDED, 52004, "sdb", "/scratch", ((-60 * 60, -20 * 60, ("disk",)),
                                       (-20 * 60, 0, ("compute",)))),
    (TOO_FEW, 53200, "sdb", "/scratch", ((-2 * AGENT_STEP_S, 0, ("disk",)),)),
    (JUST_ENOUGH, 53300, "sdb", "/scratch", ((-3 * AGENT_STEP_S, 0, ("disk",)),)),
)
FIRES = {DISK_BOUND, HALF, NO_METER, JUST_ENOUGH}  # the agent's alert (host: GPU)


def synthetic_jobs(now_s: int | None = None) -> list[Row]:
    """The training host's diskprobe_job points, oldest first per job. `now_s`: the Unix time
    the rows will be written at (bottleneck_since is absolute), by default now."""
    now_s = int(time.time()) if now_s is None else now_s
    out: list[Row] = []
    for index, ((job, rank), pid, device, mount, spells) in enumerate(JOBS):
        tags, since = job_tags(GPU, job, rank, pid, pod_cgroup(index)), Since()
        points = [(offset, kinds[i % len(kinds)]) for start, end, kinds in spells
                  for i, offset in enumerate(range(end, start, -AGENT_STEP_S))]
        for offset, kind in sorted(points):
            fields = interval_fields(kind, device, mount, pid)
            fields["bottleneck_since"] = since.at(kind, now_s + offset)
            out.append(Row("diskprobe_job", tags, fields, offset * SEC, synthetic(
                f"the agent's verdict on {job} rank {rank}: {kind}")))
    return out
