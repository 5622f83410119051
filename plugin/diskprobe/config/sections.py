"""The configuration's section dataclasses: each field is its own spec (default, doc, checks).

The fields are the single source for loading, validation (config/checks.py) and
`--sample-config` (config/sample.py). [output] is in config/output.py.
"""

from __future__ import annotations

from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any, Optional

DAY = 86400.0
# Upper bounds (seconds) of durations that are not collection intervals (those: 10 ms to 24 h).
TIMEOUT_MAX = 3600.0
SLOW_INTERVAL_MAX = 7 * DAY


def option(
    default: Any,
    doc: str,
    kind: str = "",
    choices: tuple[str, ...] = (),
    minimum: Optional[float] = None,
    maximum: Optional[float] = None,
) -> Any:
    # kind "duration": written as a string ("10s"), held as float seconds; "path", "url",
    # "drives": strings with their own checks (config/checks.py). minimum/maximum bound ints
    # and durations (seconds); unset, a duration gets 10 ms .. 24 h.
    meta = {"doc": doc, "kind": kind, "choices": choices, "minimum": minimum, "maximum": maximum}
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass
class IoConfig:
    """Measurement diskprobe_io: iostat -x rates from /proc/diskstats."""

    enabled: bool = option(True, "Collect per-device I/O rates (measurement diskprobe_io).")
    interval: Optional[float] = option(
        None, "Own collection interval; unset means the agent-wide interval.", "duration"
    )
    devices: list[str] = option([], "Devices to include, as globs on the kernel name; empty: all.")
    exclude: list[str] = option(
        ["loop*", "ram*", "zram*", "fd*", "sr*"], "Devices to leave out, as globs."
    )
    partitions: bool = option(True, "Report partitions as well as whole disks.")
    device_tags: list[str] = option(
        ["model", "serial"],
        "Tags read from udev or /sys for each device; an empty list disables them.",
        choices=("model", "serial"),
    )
    counters: bool = option(
        False, "Also send the raw cumulative counters as integers (for non_negative_derivative)."
    )
    peer_groups: list[list[str]] = option(
        [],
        "Fail-slow peer groups the automatic grouping cannot know (identical virtual or loop "
        "disks): a list of groups, each a list of device-name globs, e.g. "
        '[["sd[a-l]"], ["vd*"]]. A device takes the first group it matches; the others are '
        "grouped by model and media kind (docs/fail-slow.md).",
        "peer_groups",
    )
    fail_slow_window: float = option(
        1800.0,
        "How long a device's slowdown must last (for most of it) to turn fail_slow on, and "
        "the span of peer samples its expected latency comes from.",
        "duration",
        minimum=60.0,
        maximum=DAY,
    )
    fail_slow_ratio: float = option(
        2.0,
        "A device is slow in an interval when its await is at least this multiple of what its "
        "peers show at its load (slowdown_ratio).",
        minimum=1.1,
        maximum=1000.0,
    )


PSEUDO_FILESYSTEMS = [
    "proc", "sysfs", "cgroup", "cgroup2", "devpts", "mqueue", "debugfs", "tracefs",
    "securityfs", "pstore", "bpf", "configfs", "fusectl", "autofs", "binfmt_misc",
    "hugetlbfs", "rpc_pipefs", "nsfs", "squashfs", "overlay", "tmpfs", "devtmpfs", "iso9660",
]  # fmt: skip


@dataclass
class FilesystemsConfig:
    """Measurement diskprobe_fs: df-exact usage per mount, fill rate and time to full."""

    enabled: bool = option(True, "Collect per-mount usage (measurement diskprobe_fs).")
    interval: Optional[float] = option(
        None, "Own collection interval; unset means the agent-wide interval.", "duration"
    )
    mount_points: list[str] = option(
        [], "Mount points to report, exact paths or globs; empty: every mount not ignored."
    )
    ignore_fs: list[str] = option(
        PSEUDO_FILESYSTEMS, "Filesystem types to leave out (pseudo and virtual ones by default)."
    )
    ignore_mount_points: list[str] = option([], "Mount points to leave out, as globs.")
    report_bind_mounts: bool = option(
        False,
        "Report every bind mount; by default a filesystem tree mounted several times is "
        "reported once, under its shortest mount point.",
    )
    stat_timeout: float = option(
        5.0,
        "How long one statfs may take before the mount is reported with responsive=false "
        "(hung NFS or FUSE); it is not probed again until that call returns.",
        "duration",
        maximum=TIMEOUT_MAX,
    )
    forecast_window: float = option(
        6 * 3600.0,
        "How much history the fill-rate forecast looks at.",
        "duration",
        minimum=1.0,
        maximum=30 * DAY,
    )
    forecast_min_samples: int = option(
        6, "Samples needed in the window before a forecast is made.", minimum=2, maximum=100_000
    )


@dataclass
class SmartConfig:
    """Measurements diskprobe_smart and diskprobe_smart_attr: SMART and NVMe health."""

    enabled: bool = option(True, "Read SMART / NVMe health (measurement diskprobe_smart).")
    interval: float = option(
        1800.0,
        "How often each drive is read; a full read is costly and hourly is common practice. "
        "Reads run in worker threads and never delay the other collectors.",
        "duration",
        maximum=SLOW_INTERVAL_MAX,
    )
    smartctl_path: str = option(
        "smartctl", "smartctl to run: a name on PATH or a full path.", "path"
    )
    use_sudo: bool = option(
        False, "Run smartctl through `sudo -n` (see telegraf/sudoers.d/diskprobe)."
    )
    timeout: float = option(
        30.0,
        "Longest one smartctl call may take; then its process group is killed.",
        "duration",
        maximum=TIMEOUT_MAX,
    )
    nocheck: str = option(
        "standby",
        "smartctl -n: do not wake a drive in this power mode or lower (never|sleep|standby|"
        "idle); such a drive is reported with power_mode and no health fields.",
        choices=("never", "sleep", "standby", "idle"),
    )
    devices: list[str] = option(
        [],
        'Drives to read, each optionally with its type ("/dev/sda -d sat", '
        '"/dev/bus/0 -d megaraid,5"); empty: discover with `smartctl --scan-open`.',
        "drives",
    )
    exclude: list[str] = option([], "Drives to leave out, as globs on the device path.")
    rescan: float = option(
        3600.0, "How often discovery runs again.", "duration", maximum=SLOW_INTERVAL_MAX
    )
    concurrency: int = option(4, "Drives read at the same time.", minimum=1, maximum=64)
    attributes: bool = option(
        True, "Also send every ATA attribute (measurement diskprobe_smart_attr)."
    )
    nvme_source: str = option(
        "smartctl",
        'Where NVMe health comes from: "smartctl", or "nvme-cli" (`nvme smart-log -o json`, '
        "also used when smartctl is missing).",
        choices=("smartctl", "nvme-cli"),
    )
    nvme_path: str = option("nvme", "nvme-cli to run: a name on PATH or a full path.", "path")
    thresholds: dict[str, dict[str, int]] = option(
        {},
        "Verdict limits per value, overriding the defaults in the verdict table (docs/smart.md), "
        "e.g. pending_sectors = { warn = 1, fail = 5 }; a negative limit disables it.",
        "thresholds",
    )
    afr_warn_multiple: float = option(
        2.0,
        "Warn when a drive's estimated failure rate (afr_percent) reaches this multiple of its "
        "population's (2.87 %/year for hard drives: docs/smart.md); 0 disables.",
        minimum=0.0,
        maximum=1000.0,
    )
    afr_fail_percent: float = option(
        100.0,
        "Fail when afr_percent reaches this rate (%/year; at 100, drives in that state fail "
        "about once per drive-year); 0 disables.",
        minimum=0.0,
        maximum=100000.0,
    )
    growth_window: float = option(
        604800.0,
        "Window of the *_per_day growth rates (kept in the state file).",
        "duration",
        minimum=3600.0,
        maximum=366 * 86400.0,
    )


def field_default(item: Field[Any]) -> Any:
    if item.default_factory is not MISSING:
        return item.default_factory()
    return item.default


def find_field(target: Any, name: str) -> Field[Any]:
    """The field `name` of a section class or instance."""
    return next(item for item in fields(target) if item.name == name)
