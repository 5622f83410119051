"""The configuration: AgentConfig and its loading (file, then flags, then the checks).

The section dataclasses are in config/sections.py and config/output.py ([output]); their
fields are the single source for loading, validation and `--sample-config`. Everything a
caller needs is importable from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping, Optional, Sequence

from diskprobe.config.attribution import CgroupIoConfig as CgroupIoConfig
from diskprobe.config.attribution import PressureConfig as PressureConfig
from diskprobe.config.attribution import ProcessIoConfig as ProcessIoConfig
from diskprobe.config.checks import ConfigError as ConfigError
from diskprobe.config.checks import check_config, closest, convert
from diskprobe.config.file import parse_toml, read_config_file
from diskprobe.config.jobs import JobsConfig as JobsConfig
from diskprobe.config.latency import LatencyConfig as LatencyConfig
from diskprobe.config.legacy import move_legacy_keys
from diskprobe.config.output import OutputConfig as OutputConfig
from diskprobe.config.sections import PSEUDO_FILESYSTEMS as PSEUDO_FILESYSTEMS
from diskprobe.config.sections import FilesystemsConfig as FilesystemsConfig
from diskprobe.config.sections import IoConfig as IoConfig
from diskprobe.config.sections import SmartConfig as SmartConfig
from diskprobe.config.sections import field_default as field_default
from diskprobe.config.sections import find_field, option


@dataclass
class AgentConfig:
    """diskprobe settings; collector sections follow."""

    interval: float = option(
        10.0,
        "Collection interval for every collector without its own; batches are aligned "
        "to multiples of it on the wall clock, like Telegraf's round_interval.",
        "duration",
    )
    trigger: str = option(
        "interval",
        'What starts a batch: "interval" (Telegraf execd signal = "none") or "stdin", '
        'one batch per line on stdin (signal = "STDIN").',
        choices=("interval", "stdin"),
    )
    debug: bool = option(False, "Log D! lines on stderr.")
    state_file: str = option(
        "/var/lib/diskprobe/state.json",
        "Where forecast windows (and drive baselines) survive restarts. If its directory is "
        "not writable, $XDG_STATE_HOME/diskprobe/state.json (or ~/.local/state/...) is used, "
        "else state is kept in memory only.",
        "path",
    )
    state_save_interval: float = option(
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
    jobs: JobsConfig = field(default_factory=JobsConfig, metadata={"doc": JobsConfig.__doc__})
    latency: LatencyConfig = field(
        default_factory=LatencyConfig, metadata={"doc": LatencyConfig.__doc__}
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
    "jobs": JobsConfig,
    "latency": LatencyConfig,
    "output": OutputConfig,
}


Flag = tuple[
    str, str, Any
]  # ("--interval", "interval", "10s"): a label, the (dotted) key it sets, a value


@dataclass(frozen=True)
class LoadedConfig:
    """A checked configuration and the deprecated spellings it was written in."""

    config: AgentConfig
    deprecations: tuple[str, ...] = ()  # one line each, for the caller to log as W!


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


def _apply_flags(config: AgentConfig, flags: Sequence[Flag]) -> AgentConfig:
    """Command-line values win over the file, through the same checks as the file's."""
    for label, key, value in flags:
        if value is None:
            continue
        section, _, name = key.rpartition(".")
        target = getattr(config, section) if section else config
        item = find_field(target, name)
        checked = convert(label, value, field_default(item), item.metadata)
        changes: dict[str, Any] = {name: checked}
        if section:
            changes = {section: replace(target, **changes)}
        config = replace(config, **changes)
    return config


def load_text_with_deprecations(
    text: str,
    source: str,
    flags: Sequence[Flag] = (),
    env: Optional[Mapping[str, str]] = None,
) -> LoadedConfig:
    """The checked configuration: file text (old spellings moved to the new), then flags,
    then the cross-field rules; with the deprecation lines the caller logs."""
    table, deprecation = move_legacy_keys(parse_toml(text, source), source)
    config: AgentConfig = _build(AgentConfig, table, f"{source}:")
    interval_flagged = any(key == "interval" and value is not None for _, key, value in flags)
    config = check_config(_apply_flags(config, flags), source, env or {}, interval_flagged)
    return LoadedConfig(config, (deprecation,) if deprecation else ())


def load_with_deprecations(
    path: Optional[str],
    flags: Sequence[Flag] = (),
    env: Optional[Mapping[str, str]] = None,
) -> LoadedConfig:
    """The configuration from `path` (None: the defaults), flags and environment, checked;
    with the deprecation lines the caller logs."""
    text = read_config_file(path) if path else ""
    return load_text_with_deprecations(text, path or "", flags, env)


def load_config_text(
    text: str,
    source: str,
    flags: Sequence[Flag] = (),
    env: Optional[Mapping[str, str]] = None,
) -> AgentConfig:
    """load_text_with_deprecations, for callers that do not log the deprecations."""
    return load_text_with_deprecations(text, source, flags, env).config


def load_config(
    path: Optional[str],
    flags: Sequence[Flag] = (),
    env: Optional[Mapping[str, str]] = None,
) -> AgentConfig:
    """load_with_deprecations, for callers that do not log the deprecations."""
    return load_with_deprecations(path, flags, env).config
