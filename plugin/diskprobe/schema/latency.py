"""diskprobe_latency and its histogram, per process and per cgroup: each block request's
latency, from the kernel (eBPF, through bpftrace: [latency], docs/latency.md)."""

from __future__ import annotations

from diskprobe.schema.types import MeasurementSpec, TagSpec, counter_spec
from diskprobe.schema.types import field_spec as _f

OP = TagSpec("op", "The request's operation: read, write, discard or flush.")
DEVICE = TagSpec("device", "Kernel device name of the whole disk (as diskprobe_io names it): the request tracepoints carry the disk, never a partition.")
WHAT = "from the request's start (block_io_start: as iostat's await counts) to its completion"

LATENCY = MeasurementSpec(
    name="diskprobe_latency",
    description=f"Block request latency per device and operation over the interval, {WHAT}: the distribution's percentiles from a kernel histogram of four buckets per doubling (each percentile within 25 % of the true value). Only devices and operations with requests in the interval, at most max_devices, busiest first; loop devices included. Off by default ([latency] enabled = true; root or sudo, bpftrace).",
    tags=(DEVICE, OP),
    fields=(
        _f("requests", "int", "", "Requests completed in the interval (not a running total)."),
        _f("mean_ms", "float", "ms", "Mean latency over the interval's requests."),
        _f("p50_ms", "float", "ms", "Median latency."),
        _f("p90_ms", "float", "ms", "90th percentile latency."),
        _f("p99_ms", "float", "ms", "99th percentile latency."),
        _f("p999_ms", "float", "ms", "99.9th percentile latency."),
        _f("max_ms", "float", "ms", "Longest request of the interval (exact)."),
    ),
    series_tags=("device", "op"),
)

LATENCY_BUCKET = MeasurementSpec(
    name="diskprobe_latency_bucket",
    description="The latency histogram of diskprobe_latency, one point per bucket with requests (a Grafana heatmap's input over InfluxDB), on fixed bounds ([latency] buckets). In the Prometheus forms the histogram diskprobe_latency_seconds (_bucket, _sum, _count), cumulative since start.",
    tags=(DEVICE, OP, TagSpec("le", "The bucket's upper bound in seconds (as Prometheus writes it: \"0.001\", \"+Inf\").")),
    fields=(
        _f("count", "int", "", "Requests of the interval with a latency in this bucket: above the previous bound, up to `le`."),
        counter_spec("total", "int", "", "Requests since diskprobe started with a latency up to `le` (cumulative over the buckets, as a Prometheus histogram's)."),
        counter_spec("sum_sec", "float", "s", "Only on the `le=\"+Inf\"` point: summed latency of every request since diskprobe started (the histogram's _sum in the Prometheus forms)."),
    ),
    series_tags=("device", "op", "le"),
)

PROCESS_LATENCY = MeasurementSpec(
    name="diskprobe_process_latency",
    description="Who waited: per device and operation, the top_processes processes (by name and user) by summed latency of the requests they submitted in the interval (the task current when the request started, never the one at its completion), with no byte threshold.",
    tags=(TagSpec("process", "Process name (comm) of the submitting task."), TagSpec("user", "User name (or uid) it runs as."), DEVICE, OP),
    fields=(
        _f("requests", "int", "", "Its requests completed in the interval."),
        _f("wait_sec", "float", "s", "Summed latency of its requests in the interval (seconds of waiting)."),
        _f("mean_ms", "float", "ms", "Mean latency of its requests."),
    ),
    series_tags=("process", "user", "device", "op"),
)

CGROUP_LATENCY = MeasurementSpec(
    name="diskprobe_cgroup_latency",
    description="Per container, pod or service and device: the latency of the requests its tasks submitted in the interval, by the cgroup v2 id of the submitting task (cgroup v2, or a hybrid host's unified hierarchy; off with one I! line on pure v1). Buffered writes submitted by the kernel's writeback threads count as the root cgroup's. At most max_cgroups, by summed latency.",
    tags=(TagSpec("cgroup", "cgroup path below the hierarchy root."), TagSpec("pod_uid", "Kubernetes pod UID."), TagSpec("container_id", "Container ID."), TagSpec("qos", "Kubernetes QoS class."), TagSpec("unit", "systemd unit."), DEVICE, OP),
    fields=(
        _f("requests", "int", "", "Requests of the cgroup completed in the interval."),
        _f("wait_sec", "float", "s", "Their summed latency (seconds of waiting), from its histogram: each request at its bucket's middle (within 12.5 %)."),
        _f("p50_ms", "float", "ms", "Median latency of its requests."),
        _f("p99_ms", "float", "ms", "99th percentile latency of its requests."),
        _f("max_ms", "float", "ms", "Upper bound of the bucket of its longest request."),
    ),
    series_tags=("cgroup", "device", "op"),
)
