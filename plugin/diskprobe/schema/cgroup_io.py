"""diskprobe_cgroup_io: which containers, pods and services did the storage I/O."""

from __future__ import annotations

from diskprobe.schema.types import MeasurementSpec, TagSpec
from diskprobe.schema.types import field_spec as _f

CGROUP_IO = MeasurementSpec(
    name="diskprobe_cgroup_io",
    description="I/O per cgroup and device in the interval (cgroup v2 io.stat, or v1 blkio.throttle.*_recursive): each cgroup's own I/O, its subtree's minus its children's, so points add up to the host total and a pod is `sum by pod_uid`. Only cgroups with I/O in the interval, at most max_cgroups, busiest first. On cgroup v1 with kernel 6.10+, blkio counts nothing until some cgroup has a throttle limit on the disk.",
    tags=(
        TagSpec("cgroup", "cgroup path below the hierarchy root."),
        TagSpec("device", "Kernel device name resolved from maj:min."),
        TagSpec("pod_uid", "Kubernetes pod UID (kubepods...pod<uid>)."),
        TagSpec("container_id", "Container ID (kubepods, docker-<id>.scope, /docker/<id>)."),
        TagSpec("qos", "Kubernetes QoS class: guaranteed, burstable, besteffort."),
        TagSpec("unit", "systemd unit (system.slice/<unit>.service)."),
    ),
    fields=(
        _f("read_bytes_per_sec", "float", "B/s", "Bytes read per second (rbytes)."),
        _f("write_bytes_per_sec", "float", "B/s", "Bytes written per second (wbytes)."),
        _f("reads_per_sec", "float", "1/s", "Read operations per second (rios)."),
        _f("writes_per_sec", "float", "1/s", "Write operations per second (wios)."),
        _f(
            "discard_bytes_per_sec",
            "float",
            "B/s",
            "Bytes discarded per second (dbytes; cgroup v2).",
        ),
        _f(
            "some_avg10",
            "float",
            "%",
            "cgroup v2 io.pressure: share of the last 10 s in which at least one task of the cgroup "
            "was stalled on I/O.",
        ),
        _f(
            "full_avg10",
            "float",
            "%",
            "cgroup v2 io.pressure: share of the last 10 s in which all its non-idle tasks were "
            "stalled on I/O at once.",
        ),
    ),
    series_tags=("cgroup", "device"),
)
