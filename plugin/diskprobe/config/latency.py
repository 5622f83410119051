"""[latency]: per-request block latency from the kernel (collectors/latency.py), and its rules:
the histogram's bounds are durations, ascending, within 1 us .. 60 s."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from diskprobe.config.errors import ConfigError
from diskprobe.config.sections import option
from diskprobe.durations import parse_duration

OPS = ("read", "write", "discard", "flush")
BUCKETS = ["10us", "25us", "50us", "100us", "250us", "500us", "1ms", "2500us", "5ms", "10ms",
           "25ms", "50ms", "100ms", "250ms", "500ms", "1s", "2500ms", "5s", "10s"]  # fmt: skip
BOUND_RANGE = (1e-6, 60.0)
MAX_BUCKETS = 40


@dataclass
class LatencyConfig:
    """Measurements diskprobe_latency, _latency_bucket, _process_latency, _cgroup_latency: eBPF."""

    enabled: bool = option(
        False,
        "Time every block request in the kernel (bpftrace; root, or use_sudo): off by "
        "default, it costs a little on every request (docs/latency.md).",
    )
    interval: Optional[float] = option(
        None, "Own collection interval; unset means the agent-wide interval.", "duration"
    )
    ops: list[str] = option(list(OPS), "Operations to report.", choices=OPS)
    max_devices: int = option(
        16, "Report at most this many devices, busiest first (loop devices included).",
        minimum=1, maximum=4096,
    )  # fmt: skip
    top_processes: int = option(
        5, "Processes per device and operation, by summed latency (0 requests: none).",
        minimum=1, maximum=1000,
    )  # fmt: skip
    max_cgroups: int = option(
        20, "cgroups per device and operation, by summed latency (cgroup v2 only).",
        minimum=1, maximum=10_000,
    )  # fmt: skip
    buckets: list[str] = option(
        list(BUCKETS),
        "Upper bounds of the exported histogram's buckets, ascending durations from 1us to "
        '60s (at most 40; +Inf is added): tell 20us from 100us and 10ms from 40ms.',
    )
    max_keys: int = option(
        4096,
        "Entries each kernel map may hold (BPFTRACE_MAP_KEYS_MAX; under sudo bpftrace's own "
        "default, 4096): requests past it are counted in diskprobe_agent latency_dropped.",
        minimum=16, maximum=1_000_000,
    )  # fmt: skip
    bpftrace_path: str = option("bpftrace", "bpftrace to run: a name on PATH or a full path.",
                                "path")  # fmt: skip
    use_sudo: bool = option(
        False, "Run bpftrace through `sudo -n` (the rule `diskprobe sudoers` prints)."
    )


def bucket_bounds(config: LatencyConfig) -> list[float]:
    """The exported buckets' upper bounds, in seconds (checked at load: check_latency)."""
    return [parse_duration(text) for text in config.buckets]


def check_latency(latency: LatencyConfig, where: str) -> None:
    label = f"{where}[latency] buckets"
    if not latency.buckets or len(latency.buckets) > MAX_BUCKETS:
        raise ConfigError(f"{label} must hold 1 to {MAX_BUCKETS} bounds")
    try:
        bounds = bucket_bounds(latency)
    except ValueError as error:
        raise ConfigError(f"{label}: {error}") from None
    low, high = BOUND_RANGE
    if any(not low <= bound <= high for bound in bounds):
        raise ConfigError(f"{label} must be from 1us to 60s")
    if any(later <= earlier for earlier, later in zip(bounds, bounds[1:])):
        raise ConfigError(f"{label} must be ascending")
