"""diskprobe_io: the iostat -x view of every block device."""

from __future__ import annotations

from diskprobe.schema.types import FieldSpec, MeasurementSpec, TagSpec
from diskprobe.schema.types import counter_spec as _counter
from diskprobe.schema.types import field_spec as _f


def _rate_fields(kind: str, done: str) -> tuple[FieldSpec, ...]:
    """The five iostat -x columns of reads or writes; `done`: the participle (read, written)."""
    letter, noun = kind[0], kind.capitalize()
    return (
        _f(
            f"{kind}s_per_sec",
            "float",
            "1/s",
            f"{noun} requests completed per second (iostat {letter}/s).",
        ),
        _f(
            f"{kind}_merged_per_sec",
            "float",
            "1/s",
            f"Adjacent {kind} requests merged per second ({letter}rqm/s).",
        ),
        _f(
            f"{kind}_bytes_per_sec",
            "float",
            "B/s",
            f"Bytes {done} per second ({letter}kB/s x 1024).",
        ),
        _f(
            f"{kind}_await_ms",
            "float",
            "ms",
            f"Average time per {kind} request, queue plus service ({letter}_await); "
            "0.0 without requests.",
        ),
        _f(
            f"{kind}_request_bytes",
            "float",
            "B",
            f"Average {kind} request size ({letter}areq-sz x 1024); 0.0 without requests.",
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
        *_rate_fields("write", "written"),
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
            "Average time per discard request, queue plus service (d_await); 0.0 without "
            "requests; kernels 4.18+.",
        ),
        _f(
            "discard_request_bytes",
            "float",
            "B",
            "Average discard request size (dareq-sz x 1024); 0.0 without requests; kernels 4.18+.",
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
            "Average time per flush request (f_await); 0.0 without requests; kernels 5.5+.",
        ),
        _f(
            "await_ms",
            "float",
            "ms",
            "Average time per read, write or discard request (await); flushes excluded, as in "
            "iostat; 0.0 without requests.",
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
        _f(
            "slowdown_ratio",
            "float",
            "ratio",
            "Fail-slow: this interval's await over the await the device's peers show at the same "
            "load (1.0: as fast as its peers); only on judged devices (whole disks, peer_groups) "
            "and only in intervals the millisecond bound of /proc/diskstats lets vote "
            "(docs/fail-slow.md).",
        ),
        _f(
            "fail_slow",
            "bool",
            "",
            "Fail-slow: true while slowdown_ratio has been at or above [io] fail_slow_ratio in "
            "most judged intervals of fail_slow_window (5 at least); sent on every point of a "
            "device from its first comparison on.",
        ),
        _counter("reads", "int", "requests", "Cumulative reads completed (counters = true)."),
        _counter("reads_merged", "int", "requests", "Cumulative reads merged (counters = true)."),
        _counter("read_bytes", "int", "B", "Cumulative bytes read (counters = true)."),
        _counter(
            "read_time_ms",
            "int",
            "ms",
            "Cumulative time spent reading; wraps at 2^32 (counters = true).",
        ),
        _counter("writes", "int", "requests", "Cumulative writes completed (counters = true)."),
        _counter("writes_merged", "int", "requests", "Cumulative writes merged (counters = true)."),
        _counter("write_bytes", "int", "B", "Cumulative bytes written (counters = true)."),
        _counter(
            "write_time_ms",
            "int",
            "ms",
            "Cumulative time spent writing; wraps at 2^32 (counters = true).",
        ),
        _counter(
            "io_time_ms",
            "int",
            "ms",
            "Cumulative time with I/O in flight; wraps at 2^32 (counters = true).",
        ),
        _counter(
            "weighted_io_time_ms",
            "int",
            "ms",
            "Cumulative request-weighted I/O time; wraps at 2^32 (counters = true).",
        ),
        _counter(
            "discards",
            "int",
            "requests",
            "Cumulative discards completed; kernels 4.18+ (counters = true).",
        ),
        _counter(
            "discards_merged",
            "int",
            "requests",
            "Cumulative discards merged; kernels 4.18+ (counters = true).",
        ),
        _counter(
            "discard_bytes",
            "int",
            "B",
            "Cumulative bytes discarded; kernels 4.18+ (counters = true).",
        ),
        _counter(
            "discard_time_ms",
            "int",
            "ms",
            "Cumulative time spent discarding; wraps at 2^32; kernels 4.18+ (counters = true).",
        ),
        _counter(
            "flushes",
            "int",
            "requests",
            "Cumulative flushes completed; kernels 5.5+ (counters = true).",
        ),
        _counter(
            "flush_time_ms",
            "int",
            "ms",
            "Cumulative time spent flushing; wraps at 2^32; kernels 5.5+ (counters = true).",
        ),
    ),
    series_tags=("device",),
)
