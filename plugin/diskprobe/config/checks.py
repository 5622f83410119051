"""Config value rules and cross-field rules: every check a value passes, from a file or a flag.

Run once at load (Telegraf's Init()): a value that passes here cannot crash, spin or silence
the loop later. Each failure is one ConfigError line naming where the value came from (the
file and key, a flag or an environment variable) and what is wrong with it.
"""

from __future__ import annotations

import difflib
import math
import re
import urllib.parse
from dataclasses import fields, replace
from typing import TYPE_CHECKING, Any, Mapping, Optional

from diskprobe.config.errors import ConfigError as ConfigError
from diskprobe.config.output_rules import check_output
from diskprobe.config.section_rules import check_sections
from diskprobe.durations import format_duration, parse_duration
from diskprobe.smart.thresholds import DEFAULT_THRESHOLDS

if TYPE_CHECKING:
    from diskprobe.config import AgentConfig

# Bounds of a duration when its field names none: a collection interval. Below 10 ms the loop
# is a busy loop; above a day nobody is watching. Per-field bounds are in config/sections.py.
DURATION_BOUNDS = (0.01, 86400.0)
INT_MAX = 2**63 - 1  # what any consumer (InfluxDB, struct, JSON) can hold

_DECIMAL = re.compile(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+")  # ASCII: what collectd writes


def closest(key: str, valid: list[str]) -> str:
    match = difflib.get_close_matches(key, valid, n=1, cutoff=0.0)
    return f" (closest valid key: {match[0]!r})" if match else ""


def bounds(meta: Mapping[str, Any]) -> tuple[float, float]:
    """(minimum, maximum) of a field: its own, else the kind's default."""
    if meta.get("kind") == "duration":
        low, high = DURATION_BOUNDS
    else:
        low, high = 0, INT_MAX
    low = meta["minimum"] if meta.get("minimum") is not None else low
    high = meta["maximum"] if meta.get("maximum") is not None else high
    return low, high


def describe_bounds(meta: Mapping[str, Any]) -> str:
    """The range as the sample config documents it: "10ms to 24h", "1 to 64"."""
    low, high = bounds(meta)
    if meta.get("kind") == "duration":
        return f"{_human(low)} to {_human(high)}"
    return f"{_count(low)} to {_count(high)}"


def _count(number: float) -> str:
    return f"{number:_}" if number >= 10_000 else f"{number}"


def _human(seconds: float) -> str:
    days = seconds / 86400.0
    if days >= 2 and days == int(days):
        return f"{int(days)} days"
    return format_duration(seconds) if seconds > 0 else "0s"


def _thresholds(label: str, value: Any) -> dict[str, dict[str, int]]:
    if not isinstance(value, dict):
        raise ConfigError(f"{label} must be a table of {{ warn = N, fail = N }}")
    for key, limits in value.items():
        if key not in DEFAULT_THRESHOLDS:
            raise ConfigError(
                f"{label}: unknown value {key[:100]!r}{closest(key, list(DEFAULT_THRESHOLDS))}"
            )
        if (
            not isinstance(limits, dict)
            or not limits
            or any(k not in ("warn", "fail") or type(v) is not int for k, v in limits.items())
            or any(abs(v) > INT_MAX for v in limits.values())
        ):
            label_key = f"{label[:-1]}.{key}'" if label.endswith("'") else f"{label}.{key}"
            raise ConfigError(f"{label_key} must be {{ warn = N, fail = N }}")
    return value


def _duration(label: str, value: Any, meta: Mapping[str, Any]) -> float:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ConfigError(f'{label} must be a duration string like "10s"')
    try:
        seconds = parse_duration(value) if isinstance(value, str) else float(value)
    except ValueError as error:
        raise ConfigError(f"{label}: {error}") from None
    except OverflowError:  # an integer too big for a float: far out of any range
        seconds = math.inf
    low, high = bounds(meta)
    if math.isnan(seconds):
        raise ConfigError(f"{label} must be a number of seconds, not nan")
    if seconds <= 0 and low > 0:
        raise ConfigError(f"{label} must be longer than zero")
    if not low <= seconds <= high:
        shown = repr(value[:40]) if isinstance(value, str) else f"{value}s"
        raise ConfigError(f"{label} must be {describe_bounds(meta)}, not {shown}"[:300])
    return seconds


def _text(label: str, value: str, kind: str) -> str:
    if "\x00" in value:
        raise ConfigError(f"{label} must not contain a NUL character")
    if kind == "path" and not value:
        raise ConfigError(f"{label} must not be empty")
    if kind == "url" and value:
        _url(label, value)
    return value


def _url(label: str, value: str) -> None:
    if any(char.isspace() or ord(char) < 32 for char in value):
        raise ConfigError(f"{label} must be a URL without spaces (e.g. http://influxdb:8086)")
    try:
        parts = urllib.parse.urlsplit(value)
        port = parts.port  # ValueError when not a number or out of 0..65535
    except ValueError:
        port = -1
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f'{label} must be an http:// or https:// URL with a host, e.g. '
                          f'"http://influxdb:8086"')  # fmt: skip
    if port is not None and not 1 <= port <= 65535:
        raise ConfigError(f"{label}: the port must be a number from 1 to 65535")


def _drives(label: str, value: list[str]) -> list[str]:
    """The specs, a bare name made a /dev path: what smartctl and the sudoers file get."""
    from diskprobe.smart.devices import DriveSpec, node_problem  # the smart package: no config

    specs = []
    for text in value:
        try:
            spec = DriveSpec.parse(text)
        except ValueError as error:
            raise ConfigError(f"{label}: {error}") from None
        problem = node_problem(spec)
        if problem:
            raise ConfigError(f"{label}: {problem}")
        specs.append(str(spec))
    return specs


def convert(label: str, value: Any, default: Any, meta: Mapping[str, Any]) -> Any:
    """The checked value of one field; `label` names it ("file: [io]: 'devices'", "--url")."""
    kind, choices = meta.get("kind", ""), meta.get("choices", ())
    if kind == "thresholds":
        return _thresholds(label, value)
    if kind == "duration":
        return _duration(label, value, meta)
    if kind == "peer_groups":
        return _peer_groups(label, value)
    if isinstance(default, list):
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ConfigError(f"{label} must be a list of strings")
        for item in value:
            _text(label, item, "")
        bad = [item for item in value if choices and item not in choices]
        if kind == "drives":
            value = _drives(label, value)
    else:
        expected = type(default)
        if expected is float and type(value) is int:  # "afr_fail_percent = 100" means 100.0
            if abs(value) > 2**53:  # past a float's exact integers (and, far past, OverflowError)
                raise ConfigError(f"{label} must be {describe_bounds(meta)}, not {value}"[:300])
            value = float(value)
        if type(value) is not expected:
            raise ConfigError(
                f"{label} must be of type {expected.__name__}, not {type(value).__name__}"
            )
        bad = [value] if choices and value not in choices else []
        if isinstance(value, str):
            _text(label, value, kind)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            _number(label, value, meta)
    if bad:
        raise ConfigError(f"{label}: {bad[0]!r} is not one of {', '.join(choices)}")
    return value


MAX_PEER_GROUPS = 1000


def _peer_groups(label: str, value: Any) -> list[list[str]]:
    """A list of groups, each a non-empty list of non-empty device-name globs."""
    shape = f'{label} must be a list of lists of device-name globs, e.g. [["sd[a-l]"], ["vd*"]]'
    if not isinstance(value, list) or len(value) > MAX_PEER_GROUPS:
        raise ConfigError(shape)
    for group in value:
        if not isinstance(group, list) or not group:
            raise ConfigError(shape)
        for glob in group:
            if not isinstance(glob, str) or not glob.strip():
                raise ConfigError(shape)
            _text(label, glob, "")
    return value


def _number(label: str, value: float, meta: Mapping[str, Any]) -> None:
    if isinstance(value, float) and not math.isfinite(value):  # TOML has inf and nan
        raise ConfigError(f"{label} must be a finite number, not {value}")
    low, high = bounds(meta)
    if value < low:
        raise ConfigError(f"{label} must be at least {low}")
    if value > high:
        raise ConfigError(f"{label} must be at most {high}")


def collectd_interval(env: Mapping[str, str], meta: Mapping[str, Any]) -> Optional[float]:
    """COLLECTD_INTERVAL, held to the same bounds as `interval`; None when unset."""
    raw = env.get("COLLECTD_INTERVAL", "").strip()
    if not raw:
        return None
    if not _DECIMAL.fullmatch(raw):  # float() would take other digits and "1_0"
        raise ConfigError(f"COLLECTD_INTERVAL: {raw[:40]!r} is not a number of seconds")
    seconds = float(raw)
    return _duration("COLLECTD_INTERVAL", seconds, meta)


def check_config(
    config: AgentConfig, source: str, env: Mapping[str, str], interval_flagged: bool
) -> AgentConfig:
    """Cross-field rules, on the merged file + flags configuration; returns it with the
    environment's interval applied (COLLECTD_INTERVAL, under format = "collectd")."""
    where = f"{source}: " if source else ""
    check_output(config.output, where)
    config = _collectd_interval(config, env, interval_flagged)
    check_sections(config, where)
    return config


def _collectd_interval(
    config: AgentConfig, env: Mapping[str, str], interval_flagged: bool
) -> AgentConfig:
    # collectd's Interval replaces the 10 s default and sets PUTVAL's: checked under collectd.
    if config.output.format != "collectd":
        return config
    interval = next(item for item in fields(config) if item.name == "interval")
    seconds = collectd_interval(env, interval.metadata)
    if seconds is None or interval_flagged or config.interval != interval.default:
        return config
    return replace(config, interval=seconds)
