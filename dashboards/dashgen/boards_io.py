"""diskprobe I/O: the iostat -x columns per device, and GPU utilization beside disk load."""

from __future__ import annotations

from dashgen.build import agg, series, tags
from dashgen.model import Dashboard, Panel, Target, Variable
from dashgen.query import AUTO, Select
from dashgen.refs import GPU, IO, same_unit

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


def io() -> Dashboard:
    return Dashboard(
        slug="diskprobe-io",
        title="diskprobe: I/O",
        description="iostat -x per device from diskprobe_io; GPU starvation at a glance.",
        variables=(Variable("host", IO.name), Variable("device", IO.name, ("host",))),
        panels=(*_iostat(), _gpu_vs_disk()),
        time_from="now-3h",
        refresh="30s",
    )
