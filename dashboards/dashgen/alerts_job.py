"""The training alert from the agent's own watch (diskprobe_job): a rank of a job whose verdicts
say disk in at least half of its points of the last 15 minutes, and at least 3 points. It
fires for jobs that never added the in-job meter; the meter's alert (alerts_training.py)
stays as it was.

One rank seen by both the meter and the agent: InfluxDB 1.x keeps each measurement's series
apart, even through a subquery over both, and Grafana refuses a rule whose result holds two
series with one label set (ngalert: "frame cannot uniquely be identified by its labels"), while
its expressions join two queries only where both have a series (no "unless"). So neither
InfluxQL tool can pick one source per rank inside one rule. The two alerts share a `dedup`
key instead (model.Alert): Grafana's label `dedup` and Kapacitor's topic and alert ID (host,
job, rank): one notification per rank through a route grouped by them or a topic handler that
matches `changed()` (docs/dashboards.md). Prometheus has diskprobe_job only: one rule.
"""

from __future__ import annotations

from dashgen.boards_jobs import DISK, RANK
from dashgen.build import tags
from dashgen.model import WARN, Alert, Level
from dashgen.query import Select
from dashgen.refs import JOB, quote
from diskprobe.compute.bottleneck_advice import ADVICE

WINDOW = "15m"
MIN_POINTS = 3  # at the agent's default 10 s interval, 90 in the window
DEDUP = "training-job-disk-bound"  # shared with the meter's alert (alerts_training.py)


def _count(disk_only: bool) -> Select:
    """Per rank, its points with bottleneck_code 4 (`disk_only`) or all its points, each
    subquery with both columns, the other 0: InfluxDB 1.x aggregates a column over several
    subqueries only where the first one has it."""
    code = JOB.f("bottleneck_code")
    counts = (f"count({code})", f"count({code}) * 0")
    disk, points = counts if disk_only else counts[::-1]
    return Select(columns=f'{disk} AS "disk", {points} AS "points"', measurement=JOB.name,
                  where=(f"{code} = {DISK}",) if disk_only else (),
                  group_tags=tags(JOB, *RANK))


def job_disk_bound_alert() -> Alert:
    """Per rank its disk points and all its points (two counts, summed over two subqueries),
    and the ranks with at least MIN_POINTS of which at least half say disk (exact, in
    integers: 2 x disk points >= points). A per-point indicator in a subquery (boards_jobs.
    disk_indicator) took 2.1 s at 1,000 hosts, the two counts 0.5 s (docs/fleet.md)."""
    ranks = tags(JOB, *RANK)
    per_rank = Select(columns='sum("disk") AS "disk", sum("points") AS "points"',
                      source=_count(True), also=(_count(False),), group_tags=ranks)
    return Alert(
        uid="diskprobe-job-disk-bound",
        group="diskprobe-training",
        title="Training job disk-bound (agent)",
        query=Select(
            columns='"disk" / "points" AS "value"',
            source=per_rank,
            where=(f'"points" >= {MIN_POINTS}', '"disk" * 2 >= "points"'),
            group_tags=ranks,
        ),
        window=WINDOW,
        levels=(Level(WARN, "gt", (0,)),),
        pending="0s",
        every="1m",
        measure=f"share of a rank's {JOB.name} points (host, job, rank) in 15 min whose "
        f"bottleneck_code is {DISK} (disk), for the ranks with at least {MIN_POINTS} points "
        "of which at least half say disk",
        summary="{host}: job {job} rank {rank} disk-bound in {value} of the last 15 min "
        "({points} verdicts)",
        why="The agent sampled the job's threads and found its training loop waiting, most of "
        "the time, on reads from a local block device (its own or its loaders'), in at least "
        "half of its intervals over 15 minutes: its accelerator idles for the disk. It "
        "watches every job, so this fires for jobs that never added the in-job meter; a job "
        "that has it also raises Training job disk-bound, with the same dedup label.",
        runbook="Open the fleet dashboard (Jobs by bottleneck) for the device and since when, "
        "and the I/O dashboard's Training jobs' verdicts for the host, or run diskprobe "
        f"diagnose --pid on the job; then {ADVICE['disk']}.",
        extra_values=(("points", quote("points")),),
        dedup=DEDUP,
        dedup_labels=RANK,
    )
