"""diskprobe_agent: the probe's own health."""

from __future__ import annotations

from diskprobe.schema.types import MeasurementSpec, TagSpec
from diskprobe.schema.types import field_spec as _f

AGENT = MeasurementSpec(
    name="diskprobe_agent",
    description="diskprobe's own health: one point per collector per batch.",
    tags=(
        TagSpec(
            "collector",
            "The collector this point describes: io, filesystems, smart, pressure, process_io, "
            "cgroup_io, latency, jobs or output.",
        ),
        TagSpec("version", "diskprobe's version."),
    ),
    fields=(
        _f("duration_ms", "float", "ms", "Wall time the collector took in this batch."),
        _f("errors", "int", "count", "Errors the collector met in this batch."),
        _f(
            "items",
            "int",
            "count",
            "What the collector saw in this batch: devices (io), mounts (filesystems), drives "
            "(smart), processes (process_io), cgroups per device (cgroup_io), devices with "
            "requests (latency), watched jobs (jobs), 1 (pressure), batches waiting for "
            "delivery (output).",
        ),
        _f(
            "exec_calls",
            "int",
            "count",
            "smartctl / nvme-cli processes run since the previous batch (smart only).",
        ),
        _f(
            "exec_failures",
            "int",
            "count",
            "Of those, the ones that failed, timed out or were killed (smart only).",
        ),
        _f(
            "reads_skipped",
            "int",
            "count",
            "Drive reads not started since the previous batch because that drive's previous "
            "read was still running (a hung drive, a `[smart] timeout` longer than the "
            "interval): one read per drive at a time (smart only).",
        ),
        _f(
            "jobs_over_cap",
            "int",
            "count",
            "Training jobs found beyond [jobs] max_jobs at the last discovery, left unwatched "
            "(jobs only).",
        ),
        _f(
            "latency_restarts",
            "int",
            "count",
            "Times the latency collector's bpftrace child was started again since diskprobe "
            "started (it exited or was killed; latency only).",
        ),
        _f(
            "latency_dropped",
            "int",
            "count",
            "Requests the kernel timed in the interval but its maps could not hold (max_keys "
            "reached): in no latency point (latency only).",
        ),
        _f(
            "latency_unmatched",
            "int",
            "count",
            "Completions in the interval whose start was not seen (begun before the program, "
            "or a request whose first sector changed): not timed (latency only).",
        ),
        _f(
            "dropped_points",
            "int",
            "count",
            "Points dropped (spool full, refused by the server with 400/413/422, spool unwritable) and not yet reported by a delivered batch; summed over the batches the server received, it is exactly the number of points lost (output kind = influxdb; output collector only).",
        ),
        _f(
            "spooled_points",
            "int",
            "count",
            "Points waiting in the on-disk spool (output kind = influxdb; output collector only).",
        ),
    ),
    series_tags=("collector",),
)
