"""diskprobe_pressure, diskprobe_process_io, diskprobe_cgroup_io: who waits, who is to blame."""

from __future__ import annotations

from diskprobe.schema.types import MeasurementSpec, TagSpec
from diskprobe.schema.types import field_spec as _f

PRESSURE = MeasurementSpec(
    name="diskprobe_pressure",
    description="Host I/O pressure stall information from HOST_PROC/pressure/io (kernel 4.20+, CONFIG_PSI): the share of time tasks were stalled waiting for I/O.",
    tags=(),
    fields=(
        _f(
            "some_avg10",
            "float",
            "%",
            "Share of the last 10 s in which at least one task was stalled on I/O.",
        ),
        _f("some_avg60", "float", "%", "Same over 60 s."),
        _f("some_avg300", "float", "%", "Same over 300 s."),
        _f(
            "full_avg10",
            "float",
            "%",
            "Share of the last 10 s in which all non-idle tasks were stalled on I/O at once.",
        ),
        _f("full_avg60", "float", "%", "Same over 60 s."),
        _f("full_avg300", "float", "%", "Same over 300 s."),
        _f(
            "some_stall_us_per_sec",
            "float",
            "us/s",
            "Stall time (some) per second of the interval, from the total= counter.",
        ),
        _f(
            "full_stall_us_per_sec",
            "float",
            "us/s",
            "Stall time (full) per second of the interval, from the total= counter.",
        ),
    ),
)

PROCESS_IO = MeasurementSpec(
    name="diskprobe_process_io",
    description="The top processes by storage I/O in the interval (read_bytes/write_bytes of /proc/<pid>/io: what reached the block layer, not rchar/wchar), above min_bytes_per_sec, one point per process name and user. PIDs are fields, never tags.",
    tags=(
        TagSpec("process", "Process name (comm)."),
        TagSpec("user", "User name (or uid) the process runs as."),
    ),
    fields=(
        _f("pid", "int", "", "Process ID."),
        _f(
            "read_bytes_per_sec",
            "float",
            "B/s",
            "Bytes the process caused to be read from storage, per second.",
        ),
        _f(
            "write_bytes_per_sec",
            "float",
            "B/s",
            "Bytes the process caused to be written to storage, per second.",
        ),
        _f(
            "processes",
            "int",
            "",
            "Busy processes with this name and user in the interval: one point per name and user, their rates summed; pid, cmdline and cgroup are the busiest one's.",
        ),
        _f("cmdline", "str", "", "Command line, first 256 characters (cmdline = false drops it)."),
        _f("cgroup", "str", "", "The process's cgroup path (container, pod or service)."),
    ),
)

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
            "cgroup v2 io.pressure: share of the last 10 s some task of the cgroup was stalled on I/O.",
        ),
        _f(
            "full_avg10",
            "float",
            "%",
            "cgroup v2 io.pressure: share of the last 10 s all its tasks were stalled on I/O.",
        ),
    ),
)
