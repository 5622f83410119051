"""diskprobe I/O: the iostat -x columns per device, GPU utilization and I/O pressure beside disk
load, and the containers and processes behind it (processes.py)."""

from __future__ import annotations

from dashgen.boards_jobs import host_job_panels
from dashgen.boards_latency import cgroup_table, heatmap, percentiles, process_table
from dashgen.boards_training import host_jobs_panel
from dashgen.build import agg, series, tags
from dashgen.failslow import device_table, slowdown_panel
from dashgen.model import Dashboard, Panel, Target, Variable
from dashgen.processes import top_processes, who_waits
from dashgen.query import AUTO, Select
from dashgen.refs import CGROUP_IO, GPU, IO, PRESSURE, same_unit

FILTERS = ("host", "device")
BY = ("host", "device")


def _panel(title: str, description: str, target: Target, width: int = 12) -> Panel:
    return Panel(title, description, "timeseries", (target,), width=width)


def _iostat() -> tuple[Panel, ...]:
    f = IO.f
    return (
        _panel("IOPS (r/s, w/s)", "Read and write requests completed per second.",
               series(IO, "mean", ((f("reads_per_sec"), "r/s"), (f("writes_per_sec"), "w/s")),
                      BY, FILTERS)),
        _panel("Throughput (rkB/s, wkB/s)", "Bytes read and written per second.",
               series(IO, "mean", ((f("read_bytes_per_sec"), "read"),
                                   (f("write_bytes_per_sec"), "write")), BY, FILTERS)),
        _panel("Awaits (r_await, w_await)",
               "Average time per read and per write request, queue plus service.",
               series(IO, "mean", ((f("read_await_ms"), "r_await"),
                                   (f("write_await_ms"), "w_await")), BY, FILTERS)),
        _panel("Queue size (aqu-sz)", "Average number of requests queued or in service.",
               series(IO, "mean", ((f("queue_size"), "aqu-sz"),), BY, FILTERS)),
        _panel("%util",
               "Share of time with I/O in flight. On NVMe and RAID devices 100 % is not "
               "saturation: they serve many requests at once; look at await and aqu-sz.",
               series(IO, "mean", ((f("util_percent"), "%util"),), BY, FILTERS)),
        _panel("Request size (rareq-sz, wareq-sz)", "Average size of read and write requests.",
               series(IO, "mean", ((f("read_request_bytes"), "rareq-sz"),
                                   (f("write_request_bytes"), "wareq-sz")), BY, FILTERS)),
    )


def _gpu_target() -> Target:
    gpu = GPU.f("utilization_gpu")
    select = Select(
        columns=agg("mean", gpu, "gpu_util"),
        measurement=GPU.name,
        filters=("host",),
        group_tags=tags(GPU, "host", "index"),
        group_time=AUTO,
        fill="none",
    )
    return Target(select, gpu.unit, "GPU $tag_index utilization")


def _disk_target(*fields: tuple[str, str]) -> Target:
    """Disk columns for the GPU panel; the first sets the unit, the others may go right."""
    chosen = tuple((IO.f(name), alias) for name, alias in fields)
    select = Select(
        columns=", ".join(agg("mean", field, alias) for field, alias in chosen),
        measurement=IO.name,
        filters=tags(IO, *FILTERS),
        group_tags=tags(IO, *BY),
        group_time=AUTO,
        fill="none",
    )
    return Target(select, same_unit(chosen[0][0]), "$tag_device $col")


def _gpu_vs_disk() -> Panel:
    description = (
        "Telegraf's nvidia_smi utilization_gpu next to disk %util and await on one time axis: "
        "GPUs dropping while a disk sits near 100 % with a rising await means the input "
        "pipeline is waiting on storage."
    )
    both = _disk_target(("util_percent", "disk_util"), ("await_ms", "await"))
    return Panel(
        title="GPU utilization vs disk load",
        description=description,
        kind="timeseries",
        targets=(_gpu_target(), both),
        width=24,
        height=10,
        right_unit=IO.f("await_ms").unit,
        right_match=".*await.*",
        chronograf_cells=(
            Panel("GPU utilization vs disk %util", description, "timeseries",
                  (_gpu_target(), _disk_target(("util_percent", "disk_util")))),
            Panel("Disk await beside the GPUs", description, "timeseries",
                  (_disk_target(("await_ms", "await")),)),
        ),
    )


def _psi_target() -> Target:
    return series(PRESSURE, "mean", ((PRESSURE.f("some_avg10"), "psi_some"),
                                     (PRESSURE.f("full_avg10"), "psi_full")),
                  ("host",), ("host",), legend="$tag_host I/O pressure $col")


def _pressure_vs_disk() -> Panel:
    description = (
        "Host I/O pressure (PSI some/full avg10: the share of the last 10 s in which some, or "
        "all, non-idle tasks were stalled on I/O) next to disk %util and await on one time "
        "axis. %util near 100 % without pressure is a busy but coping disk; pressure rising "
        "with await means tasks really wait on storage."
    )
    both = _disk_target(("util_percent", "disk_util"), ("await_ms", "await"))
    return Panel(
        title="I/O pressure vs disk load",
        description=description,
        kind="timeseries",
        targets=(_psi_target(), both),
        width=24,
        height=10,
        right_unit=IO.f("await_ms").unit,
        right_match=".*await.*",
        chronograf_cells=(
            Panel("I/O pressure vs disk %util", description, "timeseries",
                  (_psi_target(), _disk_target(("util_percent", "disk_util")))),
            Panel("Disk await beside I/O pressure", description, "timeseries",
                  (_disk_target(("await_ms", "await")),)),
        ),
    )


def _stall() -> Panel:
    f = PRESSURE.f
    return _panel(
        "I/O stall time (µs per second)",
        "Microseconds per second of wall time in which some (or all) non-idle tasks were "
        "stalled on I/O, from PSI's total= counter: 1000000 µs/s is a whole second lost.",
        series(PRESSURE, "mean", ((f("some_stall_us_per_sec"), "some"),
                                  (f("full_stall_us_per_sec"), "full")),
               ("host",), ("host",), legend="$tag_host stall $col"),
        width=8,
    )


CONTAINER = ("host", "pod_uid", "container_id", "unit", "cgroup")
CONTAINER_LEGEND = "$tag_host $tag_cgroup $col"
CONTAINER_DEVICE_LEGEND = "$tag_host $tag_cgroup $tag_device $col"


def _container_io() -> Panel:
    """Each cgroup's points are per device, drawn as they are: summing the devices needs a
    subquery, which InfluxDB 1.x ran 16 times slower (82 s against 5 s at 20 hosts)."""
    read, write = CGROUP_IO.f("read_bytes_per_sec"), CGROUP_IO.f("write_bytes_per_sec")
    return _panel(
        "I/O per container, pod or service",
        "Bytes read and written per second by each cgroup's own processes on each device "
        f"({CGROUP_IO.name}), with its pod_uid, container_id or systemd unit. Added up, they "
        "give the host total; cgroups without I/O send none.",
        series(CGROUP_IO, "mean", ((read, "read"), (write, "write")), (*CONTAINER, "device"),
               ("host",), legend=CONTAINER_DEVICE_LEGEND),
        width=8,
    )


def _container_pressure() -> Panel:
    f = CGROUP_IO.f
    return _panel(
        "I/O pressure per container, pod or service",
        "cgroup v2 io.pressure avg10 of each cgroup with I/O: the share of the last 10 s in "
        "which some (or all) of its tasks were stalled on I/O. A container with high pressure "
        "and little I/O of its own is waiting behind someone else.",
        series(CGROUP_IO, "mean", ((f("some_avg10"), "some"), (f("full_avg10"), "full")),
               CONTAINER, ("host",), legend=CONTAINER_LEGEND),
        width=8,
    )


def io() -> Dashboard:
    return Dashboard(
        slug="diskprobe-io",
        title="diskprobe: I/O",
        description=(
            f"iostat -x per device from {IO.name}; devices slower than their peers "
            "(fail-slow); each request's latency ([latency]); GPU starvation and I/O "
            "pressure at a glance; the containers and processes behind the load, and the "
            "processes and containers waiting on it."
        ),
        variables=(Variable("host", IO.name, offers_all=False),
                   Variable("device", IO.name, ("host",))),
        # The latency tables sit right of the process tables: "Who waits on disk" (delay
        # accounting) beside the processes by their requests' latency (boards_latency.py).
        panels=(*_iostat(), heatmap(), percentiles(), slowdown_panel(), device_table(),
                _gpu_vs_disk(), host_jobs_panel(), *host_job_panels(), _pressure_vs_disk(),
                _stall(), _container_io(), _container_pressure(), top_processes(),
                cgroup_table(), who_waits(), process_table()),
        time_from="now-3h",
        refresh="30s",
    )
