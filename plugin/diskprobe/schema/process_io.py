"""diskprobe_process_io: which processes did the storage I/O."""

from __future__ import annotations

from diskprobe.schema.types import MeasurementSpec, TagSpec
from diskprobe.schema.types import field_spec as _f

PROCESS_IO = MeasurementSpec(
    name="diskprobe_process_io",
    description="The top processes by storage I/O in the interval (read_bytes/write_bytes of /proc/<pid>/io: what reached the block layer, not rchar/wchar), above min_bytes_per_sec, and, with delay accounting on, the top processes by time blocked on block I/O (blkio_wait_ratio above min_wait_ratio): up to `top` of each, one point per process name and user. PIDs are fields, never tags.",
    tags=(
        TagSpec("process", "Process name (comm)."),
        TagSpec("user", "User name (or uid) the process runs as."),
    ),
    fields=(
        _f("pid", "int", "", "Process ID (of the busiest one, see processes)."),
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
        _f(
            "blkio_wait_ratio",
            "float",
            "s/s",
            "Seconds its threads spent blocked on block I/O per second (delay accounting: kernel.task_delayacct = 1), summed over its threads and over the processes of the point: 1.0 is one thread waiting the whole interval. Absent when delay accounting is off.",
        ),
        _f("cmdline", "str", "", "Command line, first 256 characters (cmdline = false drops it)."),
        _f("cgroup", "str", "", "The process's cgroup path (container, pod or service)."),
    ),
    series_tags=("process", "user"),  # one point per process name and user
)
