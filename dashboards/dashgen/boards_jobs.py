"""Training jobs as the agent sees them (diskprobe_job, one point per job and interval with
`diskprobe diagnose`'s verdict): on the fleet board the jobs by bottleneck, disk-bound first,
and the count of disk-bound jobs over time; on the I/O board one host's jobs' verdicts over
time above its devices' %util and r_await.

The agent watches every job, with or without the in-job meter (diskprobe_training, the
training board's source), so the per-host view is on the I/O board: its `host` variable lists
every host that sends diskprobe_io, where the training board's variables list only the hosts
and jobs that run the meter.

Chronograf: no value mappings (the timeline shows bottleneck_code, the table the verdict's
text and `since` as Unix milliseconds), one sort column (disk-bound), one host (`:host:`) at
a time, and one y axis (%util and r_await are two cells).
"""

from __future__ import annotations

from dashgen.boards_training import VERDICT_COLOURS
from dashgen.build import agg, right_axis_panel, series, tags
from dashgen.model import Column, Panel, Target
from dashgen.query import AUTO, Select
from dashgen.refs import IO, JOB, quote
from diskprobe.schema.job import BOTTLENECK_CODES

RANK = ("host", "job", "rank")  # a rank of a job on a host: what the alert names
SERIES = (*RANK, "job_pid")  # one series per run: two runs of one name and rank apart
DISK = BOTTLENECK_CODES["disk"]
TABLE_RANGE = "1h"  # the table: each job seen in the last hour, by its last point
# The count over time: the last hour (whatever the fleet board's week) in buckets of 2 minutes
# or more. Its cost is a last() per job and bucket: at 1,000 hosts (2,700 jobs) 0.6 s, where
# 6 hours of 1-minute buckets took 7.5 s (docs/fleet.md).
COUNT_RANGE = "1h"
COUNT_STEP = "2m"
if set(BOTTLENECK_CODES) != set(VERDICT_COLOURS):
    raise ValueError(f"codes without a colour: {set(BOTTLENECK_CODES) ^ set(VERDICT_COLOURS)}")
# bottleneck_code -> the verdict's name and colour (the timeline); the text -> its colour.
CODE_STATES = tuple((str(code), name, VERDICT_COLOURS[name])
                    for name, code in BOTTLENECK_CODES.items())
TEXT_STATES = tuple((name, name, VERDICT_COLOURS[name]) for name in BOTTLENECK_CODES)
CODES_TEXT = ", ".join(f"{code} {name}" for name, code in BOTTLENECK_CODES.items())


def disk_indicator() -> str:
    """1 where bottleneck_code is disk's, else 0. InfluxQL has no comparison in SELECT, so
    floor(1 / (1 + (code - 4)^2)): 1 at 4, at most 0.5 (floored to 0) at any other integer."""
    code = JOB.f("bottleneck_code")
    return f"floor(1 / (1 + ({code} - {DISK}) * ({code} - {DISK})))"


def jobs_table() -> Panel:
    """Each job's last point: one selector beside plain fields returns that one point."""
    f = JOB.f
    device, mount = f("device"), f("mount_point")
    select = Select(
        columns=", ".join([agg("last", f("bottleneck")),
                           f"{disk_indicator()} AS {quote('disk_bound')}",
                           f"{device} AS {quote(device.name)}", f"{mount} AS {quote(mount.name)}",
                           f"{f('bottleneck_since')} * 1000 AS {quote('since')}"]),
        measurement=JOB.name,
        filters=tags(JOB, "host"),
        group_tags=tags(JOB, *SERIES),
    )
    columns = (Column("bottleneck", f("bottleneck").unit, "verdict", states=TEXT_STATES),
               Column("disk_bound", "", "disk-bound",
                      states=(("1", "yes", "red"), ("0", "no", "transparent"))),
               Column(device.name, device.unit, "device"),
               Column(mount.name, mount.unit, "mount point"),
               Column("since", "epoch_ms", "since"))
    return Panel(
        title="Jobs by bottleneck",
        description=(
            f"Every training job the agent watched in the last hour ({JOB.name}, with or "
            "without the in-job meter), by its last point: host, job, rank and job_pid (two "
            "runs of one name and rank apart), its verdict, the device and mount point it "
            "waits on (I/O verdicts only) and since when its verdict has been the same; the "
            "time is its last point. Disk-bound first, the longest disk-bound first."
        ),
        kind="table",
        targets=(Target(select, f("bottleneck").unit),),
        width=24,
        height=10,
        columns=columns,
        sort_by="disk_bound",
        sort_desc=True,
        then_by=("since",),
        then_desc=False,
        time_from=TABLE_RANGE,
    )


def _last_code(alias: str, fill: str | None = None) -> Select:
    """Each job's last bottleneck_code per time bucket, on the selected hosts."""
    return Select(columns=agg("last", JOB.f("bottleneck_code"), alias), measurement=JOB.name,
                  filters=tags(JOB, "host"), group_tags=tags(JOB, *SERIES), group_time=AUTO,
                  fill=fill)  # fmt: skip


def disk_bound_count() -> Panel:
    """Per bucket, each job's last code; the outer query counts the disk ones."""
    last = _last_code("code")
    count = Select(columns=f"count({quote('code')}) AS {quote('disk_bound_jobs')}", source=last,
                   where=(f"{quote('code')} = {DISK}",), group_time=AUTO, fill="0")
    return Panel(
        title="Disk-bound jobs",
        description=(
            f"How many jobs ({JOB.name}: one per host, job, rank and job_pid) had a last "
            f"point saying disk in each interval, over the last {COUNT_RANGE} of the selected "
            f"hosts (intervals of {COUNT_STEP} or more: a longer range costs a last() per job "
            "and interval). A step up across many hosts at once "
            "points at shared storage (a filer, an object store's cache), one host at its "
            "own disks: the table above names them."
        ),
        kind="timeseries",
        targets=(Target(count, "", "disk-bound jobs"),),
        width=24,
        height=8,
        time_from=COUNT_RANGE,
        min_interval=COUNT_STEP,
    )


def _verdicts_target() -> Target:
    select = _last_code("verdict", fill="none")
    return Target(select, "", "$tag_host $tag_job rank $tag_rank pid $tag_job_pid")


def _devices_target(*fields: tuple[str, str]) -> Target:
    return series(IO, "mean", tuple((IO.f(name), alias) for name, alias in fields),
                  ("host", "device"), ("host", "device"), right_axis=True)


def host_job_panels() -> tuple[Panel, Panel]:
    """The I/O board's jobs: their verdicts, and under them the devices, on one time axis."""
    verdicts = Panel(
        title="Training jobs' verdicts (agent)",
        description=(
            f"Each job's verdict over time as the agent judged it ({JOB.name}.bottleneck_code, "
            f"{CODES_TEXT}), one row per job, rank and run (pid), for every job on the host, "
            "with or without the in-job meter. Read it against the devices' %util and r_await "
            "below: a disk spell while a device is busy and its r_await climbs is the job "
            "waiting on that device (the fleet board's Jobs by bottleneck names it)."
        ),
        kind="state-timeline",
        targets=(_verdicts_target(),),
        width=24,
        height=8,
        states=CODE_STATES,
    )
    description = (
        "The host's devices (the device variable) on the same time axis as the jobs' "
        "verdicts above: %util on the left, r_await (dashed) on the right."
    )
    util, wait = ("util_percent", "util"), ("read_await_ms", "r_await")
    devices = right_axis_panel(
        "Jobs' devices: %util and r_await", description, (_devices_target(util, wait),),
        right_unit=IO.f("read_await_ms").unit, right_match=".*r_await.*", height=8,
        cells=(("Jobs' devices: %util", (_devices_target(util),)),
               ("Jobs' devices: r_await", (_devices_target(wait),))),
    )
    return verdicts, devices
