"""diskprobe I/O: the iostat -x columns per device, GPU utilization and I/O pressure beside disk
load, and the containers and processes behind it (processes.py)."""

from __future__ import annotations

from dashgen.boards_jobs import host_job_panels
from dashgen.boards_latency import cgroup_table, heatmap, percentiles, process_table
from dashgen.boards_training import host_jobs_panel
from dashgen.build import agg, right_axis_panel, series, tags
from dashgen.failslow import device_table, slowdown_panel
from dashgen.model import Dashboard, Panel, Target, Variable
from dashgen.processes import top_processes, who_waits
from dashgen.query import AUTO, Select
from dashgen.refs import CGROUP_IO, GPU, IO, PRESSURE

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
    """Disk columns for the GPU and pressure panels; the first sets the unit, the others may
    go right."""
    return series(IO, "mean", tuple((IO.f(name), alias) for name, alias in fields), BY, FILTERS,
                  legend="$tag_device $col", right_axis=True)


def _beside_disk_load(title: str, description: str, host_series: Target,
                      cell_titles: tuple[str, str]) -> Panel:
    """`host_series` next to disk %util and await on one time axis, await on the right;
    Chronograf: `host_series` with %util, then await alone (cell_titles)."""
    util, wait = ("util_percent", "disk_util"), ("await_ms", "await")
    return right_axis_panel(
        title, description, (host_series, _disk_target(util, wait)),
        right_unit=IO.f("await_ms").unit, right_match=".*await.*", height=10,
        cells=((cell_titles[0], (host_series, _disk_target(util))),
               (cell_titles[1], (_disk_target(wait),))),
    )


def _gpu_vs_disk() -> Panel:
    return _beside_disk_load(
        "GPU utilization vs disk load",
        "Telegraf's nvidia_smi utilization_gpu next to disk %util and await on one time axis: "
        "GPUs dropping while a disk sits near 100 % with a rising await means the input "
        "pipeline is waiting on storage.",
        _gpu_target(),
        ("GPU utilization vs disk %util", "Disk await beside the GPUs"),
    )


def _psi_target() -> Target:
    return series(PRESSURE, "mean", ((PRESSURE.f("some_avg10"), "psi_some"),
                                     (PRESSURE.f("full_avg10"), "psi_full")),
                  ("host",), ("host",), legend="$tag_host I/O pressure $col")


def _pressure_vs_disk() -> Panel:
    return _beside_disk_load(
        "I/O pressure vs disk load",
        "Host I/O pressure (PSI some/full avg10: the share of the last 10 s in which some, or "
        "all, non-idle tasks were stalled on I/O) next to disk %util and await on one time "
        "axis. %util near 100 % without pressure is a busy but coping disk; pressure rising "
        "with await means tasks really wait on storage.",
        _psi_target(),
        ("I/O pressure vs disk %util", "Disk await beside I/O pressure"),
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
