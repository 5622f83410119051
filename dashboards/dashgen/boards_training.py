"""diskprobe training: is the job disk-bound? Its input wait beside its devices' load.

diskprobe_training is written by the training job itself (one point per window of steps and
rank); its `device` tag names the block device under the job's dataset, as diskprobe_io's
`device` tag names it. InfluxQL joins no measurements, so the dashboard joins them with its
variables: `device` lists the devices diskprobe_training names for the selected hosts and
jobs, and the diskprobe_io query reads those devices only.

Chronograf's template variables hold one value and are not narrowed by one another, so its
cells read the device's %util and r_await that the job measured itself over each window
(device_util_percent, device_read_await_ms): the right device without a variable.
"""

from __future__ import annotations

from dashgen.build import agg, right_axis_panel, series, tags
from dashgen.model import Column, Dashboard, Panel, Target, Variable
from dashgen.query import AUTO, Select
from dashgen.refs import IO, TRAINING, quote, same_unit
from diskprobe.compute.bottleneck import BOTTLENECKS, DEVICE_BUSY, INPUT_BOUND

JOB = ("host", "job", "rank")  # one series per rank (diskprobe_training's series tags)
DEVICE = ("host", "device")
DISK_BOUND_WAIT = 0.5  # the alert's limit (alerts_training.py); the table colours it red
# A colour per verdict of diagnose's vocabulary; a new verdict stops generation until coloured.
VERDICT_COLOURS = {"disk": "red", "checkpoint": "orange", "throttled": "orange",
                   "remote_fs": "orange", "input_cpu": "yellow", "compute": "green",
                   "idle": "blue", "unknown": "purple"}
if set(VERDICT_COLOURS) != set(BOTTLENECKS):
    raise ValueError(f"verdicts without a colour: {set(BOTTLENECKS) ^ set(VERDICT_COLOURS)}")
VERDICT_TEXT = (
    f"bottleneck is the job's own verdict per window (diskprobe diagnose's vocabulary): compute "
    f"below {INPUT_BOUND:.0%} of step time waiting for the next batch; above it disk when the "
    f"data's device was at least {DEVICE_BUSY:g} % busy over the window, input_cpu when it was "
    "not (or the data is in memory: the loaders, not the device), remote_fs on NFS or FUSE"
)


def input_wait_percent() -> str:
    """The share of step time waiting, as a percentage: one axis with %util."""
    wait = TRAINING.f("input_wait_ratio")
    return f"mean({wait}) * 100 AS {quote('input_wait')}"


def _wait_target(filters: tuple[str, ...] = ("host", "job")) -> Target:
    select = Select(
        columns=input_wait_percent(),
        measurement=TRAINING.name,
        filters=tags(TRAINING, *filters),
        group_tags=tags(TRAINING, *JOB),
        group_time=AUTO,
        fill="none",
    )
    # ratio x 100: the unit of %util, which shares the axis.
    return Target(select, same_unit(IO.f("util_percent")), "$tag_host $tag_job rank $tag_rank $col")


def _device_target() -> Target:
    return series(IO, "mean", ((IO.f("util_percent"), "util"), (IO.f("read_await_ms"), "r_await")),
                  DEVICE, DEVICE, right_axis=True)


def _job_device(field: str, alias: str,
                filters: tuple[str, ...] = ("host", "job", "device")) -> Target:  # fmt: skip
    """A device's load as the job measured it over its windows (Chronograf's cells)."""
    return series(TRAINING, "mean", ((TRAINING.f(field), alias),), DEVICE,
                  filters, legend="$tag_host $tag_device $col")


def disk_bound_panel() -> Panel:
    description = (
        "Input wait: the share of step time each rank waited for its next batch, measured "
        "inside the job (diskprobe_training.input_wait_ratio, as a percentage), beside the "
        "%util and r_await (dashed, right axis) of the devices the selected jobs read "
        f"(diskprobe_io; the device variable lists the devices {TRAINING.name} names for the "
        "selected hosts and jobs). Disk-bound: the wait high while its device is busy and "
        "its r_await climbs. A high wait on an idle device is the loaders' CPU (input_cpu); "
        "a low wait on a busy device is a device that keeps up."
    )
    return right_axis_panel(
        "Is the training job disk-bound?", description, (_wait_target(), _device_target()),
        right_unit=IO.f("read_await_ms").unit, right_match=".*r_await.*", height=10,
        cells=(("Input wait vs the job's device %util",
                (_wait_target(), _job_device("device_util_percent", "util"))),
               ("The job's device r_await", (_job_device("device_read_await_ms", "r_await"),))),
    )


def host_jobs_panel() -> Panel:
    """The I/O dashboard's view of the same question, for the hosts selected there: every job
    of the host, beside the load of the devices they read as the jobs measured it (the I/O
    dashboard has no job variable to join diskprobe_io by)."""
    description = (
        "The training jobs of the selected hosts: each rank's input wait (the share of step "
        f"time waiting for its next batch, {TRAINING.name}.input_wait_ratio as a percentage) "
        "beside the %util and r_await (dashed, right axis) of the device under its data, over "
        "the same windows. A high wait with a busy device and a climbing r_await: the job is "
        "disk-bound. The training dashboard joins each job to diskprobe_io."
    )
    host = ("host",)
    both = series(TRAINING, "mean", ((TRAINING.f("device_util_percent"), "util"),
                                     (TRAINING.f("device_read_await_ms"), "r_await")),
                  DEVICE, host, right_axis=True)
    return right_axis_panel(
        "Training jobs: input wait vs their devices", description, (_wait_target(host), both),
        right_unit=IO.f("read_await_ms").unit, right_match=".*r_await.*", height=9,
        cells=(("Training jobs: input wait vs their devices' %util",
                (_wait_target(host), _job_device("device_util_percent", "util", host))),
               ("Training jobs' devices: r_await",
                (_job_device("device_read_await_ms", "r_await", host),))),
    )


def verdict_table() -> Panel:
    """Each rank's last window: one selector beside plain fields returns that one point."""
    f = TRAINING.f
    wait = f("input_wait_ratio")
    plain = ((f("device_util_percent"), "device %util"), (f("device_read_await_ms"), "r_await"),
             (f("step_time_sec"), "step time"), (f("mount_point"), "mount point"))
    select = Select(
        columns=", ".join([agg("last", f("bottleneck")), f"{wait} * 100 AS {quote('input_wait')}"]
                          + [f"{field} AS {quote(field.name)}" for field, _ in plain]),
        measurement=TRAINING.name,
        filters=tags(TRAINING, "host", "job"),
        group_tags=tags(TRAINING, *JOB, "device"),
    )
    states = tuple((name, name, colour) for name, colour in VERDICT_COLOURS.items())
    wait_unit = same_unit(IO.f("util_percent"))  # ratio x 100
    columns = (Column("bottleneck", f("bottleneck").unit, "bottleneck", states=states),
               Column("input_wait", wait_unit, "input wait",
                      steps=((INPUT_BOUND * 100, "orange"), (DISK_BOUND_WAIT * 100, "red"))),
               *(Column(field.name, field.unit, title) for field, title in plain))
    return Panel(
        title="Training jobs' last verdicts",
        description=(
            "Each rank's last window in the time range: its verdict, input wait, the device "
            "and mount point under its data, that device's %util and r_await over the window "
            "as the job measured them, and the mean step time; the longest waiting first, "
            f"the time is when the window ended. {VERDICT_TEXT}."
        ),
        kind="table",
        targets=(Target(select, f("bottleneck").unit),),
        width=24,
        height=8,
        columns=columns,
        sort_by="input_wait",
        sort_desc=True,
    )


def training() -> Dashboard:
    return Dashboard(
        slug="diskprobe-training",
        title="diskprobe: training jobs",
        description=(
            f"What training jobs waited on ({TRAINING.name}, written by the jobs themselves) "
            "beside the load of the devices under their data (diskprobe_io)."
        ),
        variables=(Variable("host", TRAINING.name, offers_all=False),
                   Variable("job", TRAINING.name, ("host",)),
                   Variable("device", TRAINING.name, ("host", "job"))),
        panels=(disk_bound_panel(), verdict_table()),
        time_from="now-3h",
        refresh="1m",
    )
