"""diskprobe_io: the iostat -x view of every block device."""

from __future__ import annotations

from diskprobe.schema.types import FieldSpec, MeasurementSpec, TagSpec
from diskprobe.schema.types import field_spec as _f


def _rate_fields(kind: str, what: str) -> tuple[FieldSpec, ...]:
    return (
        _f(
            f"{kind}s_per_sec",
            "float",
            "1/s",
            f"{what} requests completed per second (iostat {kind[0]}/s).",
        ),
        _f(
            f"{kind}_merged_per_sec",
            "float",
            "1/s",
            f"Adjacent {what} requests merged per second ({kind[0]}rqm/s).",
        ),
        _f(
            f"{kind}_bytes_per_sec",
            "float",
            "B/s",
            f"Bytes {what} per second ({kind[0]}kB/s x 1024).",
        ),
        _f(
            f"{kind}_await_ms",
            "float",
            "ms",
            f"Average time per {what} request, queue plus service ({kind[0]}_await); "
            "0.0 without requests.",
        ),
        _f(
            f"{kind}_request_bytes",
            "float",
            "B",
            f"Average {what} request size ({kind[0]}areq-sz x 1024); 0.0 without requests.",
        ),
    )


IO = MeasurementSpec(
    name="diskprobe_io",
    description="Per block device, the rates `iostat -x` prints, from two /proc/diskstats samples.",
    tags=(
        TagSpec("device", "Kernel device name (sda, nvme0n1, dm-0, sda1)."),
        TagSpec("model", "Device model from udev (ID_MODEL) or /sys; absent when unknown."),
        TagSpec(
            "serial", "Device serial from udev (ID_SERIAL_SHORT) or /sys; absent when unknown."
        ),
        TagSpec("dm_name", "Device-mapper name (/sys/block/dm-N/dm/name), for dm-N devices."),
    ),
    fields=(
        *_rate_fields("read", "read"),
        *_rate_fields("write", "write"),
        _f(
            "discards_per_sec",
            "float",
            "1/s",
            "Discard requests completed per second (d/s); kernels 4.18+.",
        ),
        _f(
            "discard_merged_per_sec",
            "float",
            "1/s",
            "Discard requests merged per second (drqm/s); kernels 4.18+.",
        ),
        _f(
            "discard_bytes_per_sec",
            "float",
            "B/s",
            "Bytes discarded per second (dkB/s x 1024); kernels 4.18+.",
        ),
        _f(
            "discard_await_ms",
            "float",
            "ms",
            "Average time per discard request (d_await); kernels 4.18+.",
        ),
        _f(
            "discard_request_bytes",
            "float",
            "B",
            "Average discard request size (dareq-sz x 1024); kernels 4.18+.",
        ),
        _f(
            "flushes_per_sec",
            "float",
            "1/s",
            "Flush requests completed per second (f/s); kernels 5.5+.",
        ),
        _f(
            "flush_await_ms",
            "float",
            "ms",
            "Average time per flush request (f_await); kernels 5.5+.",
        ),
        _f(
            "await_ms",
            "float",
            "ms",
            "Average time per read, write or discard request (await); flushes excluded, as iostat.",
        ),
        _f(
            "queue_size",
            "float",
            "requests",
            "Average number of requests queued or in service (aqu-sz).",
        ),
        _f(
            "util_percent",
            "float",
            "%",
            "Share of the interval the device had I/O in flight (%util); on parallel devices "
            "such as NVMe, 100 does not mean saturated.",
        ),
        _f("in_flight", "int", "requests", "Requests in flight at the moment of the sample."),
        _f(
            "interval_sec",
            "float",
            "s",
            "Length of the interval the rates cover (monotonic clock).",
        ),
        _f("reads", "int", "requests", "Cumulative reads completed (counters = true)."),
        _f("reads_merged", "int", "requests", "Cumulative reads merged (counters = true)."),
        _f("read_bytes", "int", "B", "Cumulative bytes read (counters = true)."),
        _f(
            "read_time_ms",
            "int",
            "ms",
            "Cumulative time spent reading; a 32-bit counter that wraps (counters = true).",
        ),
        _f("writes", "int", "requests", "Cumulative writes completed (counters = true)."),
        _f("writes_merged", "int", "requests", "Cumulative writes merged (counters = true)."),
        _f("write_bytes", "int", "B", "Cumulative bytes written (counters = true)."),
        _f(
            "write_time_ms",
            "int",
            "ms",
            "Cumulative time spent writing; wraps at 2^32 (counters = true).",
        ),
        _f(
            "io_time_ms",
            "int",
            "ms",
            "Cumulative time with I/O in flight; wraps at 2^32 (counters = true).",
        ),
        _f(
            "weighted_io_time_ms",
            "int",
            "ms",
            "Cumulative request-weighted I/O time; wraps at 2^32 (counters = true).",
        ),
        _f(
            "discards",
            "int",
            "requests",
            "Cumulative discards completed; kernels 4.18+ (counters = true).",
        ),
        _f(
            "discards_merged",
            "int",
            "requests",
            "Cumulative discards merged; kernels 4.18+ (counters = true).",
        ),
        _f(
            "discard_bytes",
            "int",
            "B",
            "Cumulative bytes discarded; kernels 4.18+ (counters = true).",
        ),
        _f(
            "discard_time_ms",
            "int",
            "ms",
            "Cumulative time spent discarding; kernels 4.18+ (counters = true).",
        ),
        _f(
            "flushes",
            "int",
            "requests",
            "Cumulative flushes completed; kernels 5.5+ (counters = true).",
        ),
        _f(
            "flush_time_ms",
            "int",
            "ms",
            "Cumulative time spent flushing; kernels 5.5+ (counters = true).",
        ),
    ),
)
