"""The configuration: typed sections whose fields are the spec (defaults, docs, checks).

The dataclasses below are the single source for loading, validation and `--sample-config`.
"""

from __future__ import annotations

from dataclasses import MISSING, Field, dataclass, field, fields, replace
from typing import Any, Mapping, Optional, Sequence

from diskprobe.config_checks import ConfigError as ConfigError
from diskprobe.config_checks import check_config, closest, collectd_interval, convert
from diskprobe.config_file import parse_toml, read_config_file

DAY = 86400.0
# Upper bounds (seconds) of durations that are not collection intervals (those: 10 ms to 24 h).
TIMEOUT_MAX = 3600.0
SLOW_INTERVAL_MAX = 7 * DAY


def _opt(
    default: Any,
    doc: str,
    kind: str = "",
    choices: tuple[str, ...] = (),
    minimum: Optional[float] = None,
    maximum: Optional[float] = None,
) -> Any:
    # kind "duration": written as a string ("10s"), held as float seconds; "path", "url",
    # "drives": strings with their own checks (config_checks.py). minimum/maximum bound ints
    # and durations (seconds); unset, a duration gets 10 ms .. 24 h.
    meta = {"doc": doc, "kind": kind, "choices": choices, "minimum": minimum, "maximum": maximum}
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass
class IoConfig:
    """Measurement diskprobe_io: iostat -x rates from /proc/diskstats."""

    enabled: bool = _opt(True, "Collect per-device I/O rates (measurement diskprobe_io).")
    interval: Optional[float] = _opt(
        None, "Own collection interval; unset means the agent-wide interval.", "duration"
    )
    devices: list[str] = _opt([], "Devices to include, as globs on the kernel name; empty: all.")
    exclude: list[str] = _opt(
        ["loop*", "ram*", "zram*", "fd*", "sr*"], "Devices to leave out, as globs."
    )
    partitions: bool = _opt(True, "Report partitions as well as whole disks.")
    device_tags: list[str] = _opt(
        ["model", "serial"],
        "Tags read from udev or /sys for each device; an empty list disables them.",
        choices=("model", "serial"),
    )
    counters: bool = _opt(
        False, "Also send the raw cumulative counters as integers (for non_negative_derivative)."
    )


PSEUDO_FILESYSTEMS = [
    "proc", "sysfs", "cgroup", "cgroup2", "devpts", "mqueue", "debugfs", "tracefs",
    "securityfs", "pstore", "bpf", "configfs", "fusectl", "autofs", "binfmt_misc",
    "hugetlbfs", "rpc_pipefs", "nsfs", "squashfs", "overlay", "tmpfs", "devtmpfs", "iso9660",
]  # fmt: skip


@dataclass
class FilesystemsConfig:
    """Measurement diskprobe_fs: df-exact usage per mount, fill rate and time to full."""

    enabled: bool = _opt(True, "Collect per-mount usage (measurement diskprobe_fs).")
    interval: Optional[float] = _opt(
        None, "Own collection interval; unset means the agent-wide interval.", "duration"
    )
    mount_points: list[str] = _opt(
        [], "Mount points to report, exact paths or globs; empty: every mount not ignored."
    )
    ignore_fs: list[str] = _opt(
        PSEUDO_FILESYSTEMS, "Filesystem types to leave out (pseudo and virtual ones by default)."
    )
    ignore_mount_points: list[str] = _opt([], "Mount points to leave out, as globs.")
    report_bind_mounts: bool = _opt(
        False,
        "Report every bind mount; by default a filesystem tree mounted several times is "
        "reported once, under its shortest mount point.",
    )
    stat_timeout: float = _opt(
        5.0,
        "How long one statfs may take before the mount is reported with responsive=false "
        "(hung NFS or FUSE); it is not probed again until that call returns.",
        "duration",
        maximum=TIMEOUT_MAX,
    )
    forecast_window: float = _opt(
        6 * 3600.0,
        "How much history the fill-rate forecast looks at.",
        "duration",
        minimum=1.0,
        maximum=30 * DAY,
    )
    forecast_min_samples: int = _opt(
        6, "Samples needed in the window before a forecast is made.", minimum=2, maximum=100_000
    )


@dataclass
class SmartConfig:
    """Measurements diskprobe_smart and diskprobe_smart_attr: SMART and NVMe health."""

    enabled: bool = _opt(True, "Read SMART / NVMe health (measurement diskprobe_smart).")
    interval: float = _opt(
        1800.0,
        "How often each drive is read; a full read is costly and hourly is common practice. "
        "Reads run in worker threads and never delay the other collectors.",
        "duration",
        maximum=SLOW_INTERVAL_MAX,
    )
    smartctl_path: str = _opt("smartctl", "smartctl to run: a name on PATH or a full path.", "path")
    use_sudo: bool = _opt(
        False, "Run smartctl through `sudo -n` (see telegraf/sudoers.d/diskprobe)."
    )
    timeout: float = _opt(
        30.0,
        "Longest one smartctl call may take; then its process group is killed.",
        "duration",
        maximum=TIMEOUT_MAX,
    )
    nocheck: str = _opt(
        "standby",
        "smartctl -n: do not wake a drive in this power mode or lower (never|sleep|standby|"
        "idle); such a drive is reported with power_mode and no health fields.",
        choices=("never", "sleep", "standby", "idle"),
    )
    devices: list[str] = _opt(
        [],
        'Drives to read, each optionally with its type ("/dev/sda -d sat", '
        '"/dev/bus/0 -d megaraid,5"); empty: discover with `smartctl --scan-open`.',
        "drives",
    )
    exclude: list[str] = _opt([], "Drives to leave out, as globs on the device path.")
    rescan: float = _opt(
        3600.0, "How often discovery runs again.", "duration", maximum=SLOW_INTERVAL_MAX
    )
    concurrency: int = _opt(4, "Drives read at the same time.", minimum=1, maximum=64)
    attributes: bool = _opt(
        True, "Also send every ATA attribute (measurement diskprobe_smart_attr)."
    )
    nvme_source: str = _opt(
        "smartctl",
        'Where NVMe health comes from: "smartctl", or "nvme-cli" (`nvme smart-log -o json`, '
        "also used when smartctl is missing).",
        choices=("smartctl", "nvme-cli"),
    )
    nvme_path: str = _opt("nvme", "nvme-cli to run: a name on PATH or a full path.", "path")
    thresholds: dict[str, dict[str, int]] = _opt(
        {},
        "Verdict limits per value, overriding the defaults in the README's verdict table, "
        "e.g. pending_sectors = { warn = 1, fail = 5 }; a negative limit disables it.",
        "thresholds",
    )


@dataclass
class PressureConfig:
    """Measurement diskprobe_pressure: I/O pressure stall information (PSI, kernel 4.20+)."""

    enabled: bool = _opt(True, "Read HOST_PROC/pressure/io (turns itself off without PSI).")
    interval: Optional[float] = _opt(
        None, "Own collection interval; unset means the agent-wide interval.", "duration"
    )


@dataclass
class ProcessIoConfig:
    """Measurement diskprobe_process_io: the top processes by storage I/O (the iotop view)."""

    enabled: bool = _opt(True, "Report the processes doing the most storage I/O.")
    interval: Optional[float] = _opt(
        None, "Own collection interval; unset means the agent-wide interval.", "duration"
    )
    top: int = _opt(5, "How many processes to report, busiest first.", minimum=1, maximum=1000)
    min_bytes_per_sec: int = _opt(
        1048576,
        "Leave out processes below this read+write rate (bytes per second).",
        maximum=10**15,
    )
    cmdline: bool = _opt(
        True, "Send the command line (first 256 characters); false drops it for privacy."
    )


@dataclass
class CgroupIoConfig:
    """Measurement diskprobe_cgroup_io: I/O per container, pod or systemd service."""

    enabled: bool = _opt(True, "Report I/O per cgroup (cgroup v2 io.stat, or v1 blkio).")
    interval: Optional[float] = _opt(
        None, "Own collection interval; unset means the agent-wide interval.", "duration"
    )
    max_depth: int = _opt(
        6,
        "How deep to walk below HOST_SYS/fs/cgroup (kubepods need about 4).",
        minimum=1,
        maximum=64,
    )
    max_cgroups: int = _opt(
        50,
        "Report at most this many cgroups with I/O in the interval, busiest first.",
        minimum=1,
        maximum=100_000,
    )


@dataclass
class OutputConfig:
    """Where batches go: stdout (Telegraf, collectd) or straight to InfluxDB."""

    kind: str = _opt(
        "stdout",
        '"stdout", or "influxdb": write through the InfluxDB v2 write API (InfluxDB 1.8+, 2.x, '
        "3.x and compatible servers), batched, gzip, with retries and an on-disk spool.",
        choices=("stdout", "influxdb"),
    )
    url: str = _opt(
        "",
        'InfluxDB URL: http or https, a host and an optional port, e.g. "http://influxdb:8086".',
        "url",
    )
    org: str = _opt("", "InfluxDB organization (any value for InfluxDB 1.8).")
    bucket: str = _opt("", 'Bucket (InfluxDB 1.8: "database/retention_policy").')
    token_file: str = _opt(
        "", "File holding the API token; if empty, the INFLUX_TOKEN variable. Never logged."
    )
    timeout: float = _opt(
        10.0, "Longest one write request may take.", "duration", maximum=TIMEOUT_MAX
    )
    spool_dir: str = _opt(
        "/var/lib/diskprobe/spool",
        "Batches that could not be written wait here, replayed in order on recovery and "
        "after a restart.",
        "path",
    )
    spool_max_bytes: int = _opt(
        104857600,
        "Spool size limit; beyond it the oldest batches are dropped (and counted).",
        maximum=2**40,
    )


@dataclass
class AgentConfig:
    """diskprobe settings; collector sections follow."""

    interval: float = _opt(
        10.0,
        "Collection interval for every collector without its own; batches are aligned "
        "to multiples of it on the wall clock, like Telegraf's round_interval.",
        "duration",
    )
    trigger: str = _opt(
        "interval",
        'What starts a batch: "interval" (Telegraf execd signal = "none") or "stdin", '
        'one batch per line on stdin (signal = "STDIN").',
        choices=("interval", "stdin"),
    )
    format: str = _opt(
        "influx",
        'Output format: "influx" (line protocol, Telegraf), "collectd" (exec PUTVAL lines) or '
        '"prometheus" (text exposition, for node_exporter\'s textfile collector).',
        choices=("influx", "collectd", "prometheus"),
    )
    textfile: str = _opt(
        "",
        "Write each batch atomically to this file instead of stdout (use with "
        'format = "prometheus" and node_exporter --collector.textfile.directory).',
    )
    debug: bool = _opt(False, "Log D! lines on stderr.")
    state_file: str = _opt(
        "/var/lib/diskprobe/state.json",
        "Where forecast windows (and drive baselines) survive restarts. If its directory is "
        "not writable, $XDG_STATE_HOME/diskprobe/state.json (or ~/.local/state/...) is used, "
        "else state is kept in memory only.",
        "path",
    )
    state_save_interval: float = _opt(
        60.0,
        'Write the state file at most this often (and at exit); "0s": after every batch.',
        "duration",
        minimum=0.0,
    )
    io: IoConfig = field(default_factory=IoConfig, metadata={"doc": IoConfig.__doc__})
    filesystems: FilesystemsConfig = field(
        default_factory=FilesystemsConfig, metadata={"doc": FilesystemsConfig.__doc__}
    )
    smart: SmartConfig = field(default_factory=SmartConfig, metadata={"doc": SmartConfig.__doc__})
    pressure: PressureConfig = field(
        default_factory=PressureConfig, metadata={"doc": PressureConfig.__doc__}
    )
    process_io: ProcessIoConfig = field(
        default_factory=ProcessIoConfig, metadata={"doc": ProcessIoConfig.__doc__}
    )
    cgroup_io: CgroupIoConfig = field(
        default_factory=CgroupIoConfig, metadata={"doc": CgroupIoConfig.__doc__}
    )
    output: OutputConfig = field(
        default_factory=OutputConfig, metadata={"doc": OutputConfig.__doc__}
    )


SECTIONS: dict[str, type] = {
    "io": IoConfig,
    "filesystems": FilesystemsConfig,
    "smart": SmartConfig,
    "pressure": PressureConfig,
    "process_io": ProcessIoConfig,
    "cgroup_io": CgroupIoConfig,
    "output": OutputConfig,
}


Flag = tuple[
    str, str, Any
]  # ("--interval", "interval", "10s"): a label, the (dotted) key it sets, a value


def _build(cls: type, table: dict[str, Any], where: str) -> Any:
    spec = {f.name: f for f in fields(cls)}
    values: dict[str, Any] = {}
    for name, value in table.items():
        if name not in spec:
            raise ConfigError(f"{where} unknown key {name[:100]!r}{closest(name, list(spec))}")
        item = spec[name]
        if name in SECTIONS and cls is AgentConfig:
            if not isinstance(value, dict):
                raise ConfigError(f"{where} '{name}' must be a table ([{name}])")
            values[name] = _build(SECTIONS[name], value, f"{where} [{name}]:")
            continue
        values[name] = convert(f"{where} '{name}'", value, field_default(item), item.metadata)
    return cls(**values)


def field_default(item: Field[Any]) -> Any:
    if item.default_factory is not MISSING:
        return item.default_factory()
    return item.default


def _field(target: Any, name: str) -> Field[Any]:
    return next(item for item in fields(target) if item.name == name)


def _apply_flags(config: AgentConfig, flags: Sequence[Flag]) -> AgentConfig:
    """Command-line values win over the file, through the same checks as the file's."""
    for label, key, value in flags:
        if value is None:
            continue
        section, _, name = key.rpartition(".")
        target = getattr(config, section) if section else config
        item = _field(target, name)
        checked = convert(label, value, field_default(item), item.metadata)
        changes: dict[str, Any] = {name: checked}
        if section:
            changes = {section: replace(target, **changes)}
        config = replace(config, **changes)
    return config


def _collectd(config: AgentConfig, flags: Sequence[Flag], env: Mapping[str, str]) -> AgentConfig:
    # collectd's Interval (COLLECTD_INTERVAL) replaces the 10 s default; it also sets the
    # PUTVAL interval, so it is checked whenever the format is collectd.
    if config.format != "collectd":
        return config
    seconds = collectd_interval(env, _field(AgentConfig, "interval").metadata)
    flagged = any(key == "interval" and value is not None for _, key, value in flags)
    if seconds is None or flagged or config.interval != AgentConfig.interval:
        return config
    return replace(config, interval=seconds)


def load_config_text(
    text: str,
    source: str,
    flags: Sequence[Flag] = (),
    env: Optional[Mapping[str, str]] = None,
) -> AgentConfig:
    """The checked configuration: file text, then flags, then the cross-field rules."""
    config: AgentConfig = _build(AgentConfig, parse_toml(text, source), f"{source}:")
    config = _collectd(_apply_flags(config, flags), flags, env or {})
    check_config(config, source)
    return config


def load_config(
    path: Optional[str],
    flags: Sequence[Flag] = (),
    env: Optional[Mapping[str, str]] = None,
) -> AgentConfig:
    """The configuration from `path` (None: the defaults), flags and environment, checked."""
    text = read_config_file(path) if path else ""
    return load_config_text(text, path or "", flags, env)
