"""collectd's exec protocol (collectd-exec(5)): one PUTVAL line per numeric field.

    PUTVAL "<host>/diskprobe-<instance>/<type>-<field>" interval=10 1700000000.123:42.5

- host: COLLECTD_HOSTNAME (the exec plugin sets it), else this machine's name.
- plugin "diskprobe"; plugin_instance: the measurement without "diskprobe_", then the values
  of the tags that identify its series (the schema's `series_tags`), joined by "-": io-sda,
  fs-var-lib, smart-nvme0, smart_attr-sda-5, agent-io. The other tags (model, serial,
  fstype, ...) are not carried.
- type: a standard types.db type with one GAUGE value, chosen from the field's schema unit
  (collectd_type); type_instance: the field name, unchanged. Values are not converted: a
  field reads the same number, in the schema's unit, in InfluxDB and in collectd.
- Escaping, one-to-one: tag values keep [A-Za-z0-9_.]; any other byte of their UTF-8 becomes
  %XX, and so does a byte the system gave that is not UTF-8 (serializers/text.py). "-" is
  kept in the first identifying tag only (io-dm-0, smart_attr-bus0-megaraid5-5: later tags
  never hold a raw "-", so the instance splits back from the right). A mount path drops its
  leading "/" and writes each "/" as "-" ("-" inside a name is %2D); "/" itself is
  "root", and "/root", which would collide with it, is "%72oot". collectd rejects names over
  127 bytes ("Identifier too long"): a longer one is cut to 110 and ends in "~" and 16 hex
  digits of its SHA-1 ("~" is always escaped otherwise, so such names cannot collide).
- Values: gauges only (rates are computed already; the optional raw counters stay gauges);
  booleans 0/1 (type "bool"); NaN and infinity are dropped, so "U" is never written. Strings
  cannot be values: `verdict` is carried by `verdict_code`, the others are skipped (SKIPPED).
- Time: epoch seconds with milliseconds. interval: COLLECTD_INTERVAL or diskprobe's own
  interval, whichever is longer (with --once the latter is only the 1 s sampling gap); a
  series whose values come more than 1.5 intervals apart (SMART, every `[smart] interval`)
  carries the gap since its previous value, so collectd does not count it as missing.

render_mapping() prints the whole table from the schema (telegraf/collectd/README.md).
"""

from __future__ import annotations

import hashlib
import math
import re
import socket
from typing import Iterable, Mapping

from diskprobe.metric import FieldValue, Metric
from diskprobe.schema import (
    JOB,
    MEASUREMENT_PREFIX,
    MEASUREMENTS,
    PROCESS_IO,
    SMART,
    SMART_ATTR,
    TRAINING,
    FieldSpec,
)
from diskprobe.schema.job import CODES_TEXT
from diskprobe.serializers.text import escape_char, system_text

PLUGIN = "diskprobe"
NAME_MAX = 127  # collectd's DATA_MAX_NAME_LEN (128) less the NUL
CACHE_LIMIT = 50_000

# Each measurement's plugin instance carries the values of the tags that identify its series.
INSTANCE_TAGS: dict[str, tuple[str, ...]] = {spec.name: spec.series_tags for spec in MEASUREMENTS}
PATH_TAGS = frozenset({"path", "cgroup"})

SKIPPED: dict[tuple[str, str], str] = {
    (SMART.name, "verdict"): "text; its number is `verdict_code` (0 ok, 1 warn, 2 fail)",
    (SMART.name, "verdict_reasons"): "text; `verdict_code` and the counters it names",
    (SMART.name, "power_mode"): "text; a drive left asleep sends only `exit_status`",
    (SMART.name, "firmware"): "text",
    (SMART.name, "self_test_last_status"): "text; a failed test shows in `verdict_code`, the "
    "count in `self_test_failed_count`",
    (SMART_ATTR.name, "raw_string"): "text; its number is `raw`",
    (SMART_ATTR.name, "when_failed"): "text; a failing attribute shows in `verdict_code`",
    (PROCESS_IO.name, "cmdline"): "text",
    (PROCESS_IO.name, "cgroup"): "text",
    (JOB.name, "bottleneck"): "text; its number is `bottleneck_code` "
    f"({CODES_TEXT})",
    (JOB.name, "device"): "text; the job's device is in `diskprobe_io` under its name",
    (JOB.name, "mount_point"): "text",
    (TRAINING.name, "bottleneck"): "text; written by training jobs to InfluxDB, never by collectd",
    (TRAINING.name, "mount_point"): "text; written by training jobs to InfluxDB, never by collectd",
}

# Schema unit (or "unit:type" where the value type matters) -> types.db type; else "gauge".
# "%" ratios computed here are 0-100 ("percent" stops at 100.1); drives report "%" values
# beyond (NVMe percentage_used reaches 255). Integer ms are cumulative counters, not latencies.
# B/s stays "gauge": collectd has no byte-rate gauge, and fill_rate_bytes_per_sec is signed.
_UNIT_TYPES = {
    "%": "percent", "%:int": "gauge", "B": "bytes", "1/s": "operations_per_second",
    "ms": "latency", "ms:int": "gauge", "s": "duration", "°C": "temperature",
    "requests": "queue_length", "requests:int": "count",
    "count": "count", "sectors": "count", "inodes": "count",
}  # fmt: skip
_FIELD_TYPES = {"util_percent": "gauge"}  # not capped like iostat's: may pass 100 by a hair
_UNSAFE = re.compile(r"[^A-Za-z0-9_.]")  # collectd identifiers keep these as they are
_UNSAFE_BUT_DASH = re.compile(r"[^A-Za-z0-9_.-]")


def collectd_type(field: FieldSpec) -> str | None:
    """The types.db type a schema field is written as; None for text fields (skipped)."""
    if field.type == "str":
        return None
    if field.type == "bool":
        return "bool"
    return (
        _FIELD_TYPES.get(field.name)
        or _UNIT_TYPES.get(f"{field.unit}:{field.type}")
        or _UNIT_TYPES.get(field.unit, "gauge")
    )


def collectd_interval(env: Mapping[str, str]) -> float | None:
    """COLLECTD_INTERVAL in seconds ("10.000"), or None when unset or not a positive number."""
    try:
        seconds = float(env.get("COLLECTD_INTERVAL", ""))
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds > 0 else None


def escape(text: str, keep_dash: bool = False) -> str:
    """`text` with every character outside [A-Za-z0-9_.] (and `-` unless `keep_dash`) as the
    %XX of its UTF-8 bytes; an undecodable byte as %XX of itself (text.py). Most names need
    nothing: one regular-expression search, the text returned as it is."""
    unsafe = _UNSAFE_BUT_DASH if keep_dash else _UNSAFE
    return text if unsafe.search(text) is None else unsafe.sub(_escape_match, text)


def _escape_match(match: re.Match[str]) -> str:
    char = match.group()
    if "\ud800" <= char <= "\udfff":  # an undecodable byte: %XX of it (text.py)
        return escape_char(char)
    return "".join(f"%{byte:02X}" for byte in char.encode("utf-8"))


def escape_path(path: str) -> str:
    """An absolute mount path: "/" -> root, /var/lib -> var-lib, /mnt/a-b -> mnt-a%2Db."""
    if path == "/":
        return "root"
    name = "-".join(escape(part) for part in path[1:].split("/"))
    return "%72oot" if name == "root" else name


def fit(name: str) -> str:
    """collectd refuses names over 127 bytes: shorten, keeping them distinct by a hash."""
    if len(name) <= NAME_MAX:
        return name
    return f"{name[: NAME_MAX - 17]}~{hashlib.sha1(name.encode()).hexdigest()[:16]}"


def _short(measurement: str) -> str:
    return measurement[len(MEASUREMENT_PREFIX) :] if measurement in INSTANCE_TAGS else measurement


def plugin_instance(measurement: str, tags: Mapping[str, str]) -> str:
    names = INSTANCE_TAGS.get(measurement) or tuple(sorted(tags))
    parts = [escape(_short(measurement))]
    for index, name in enumerate(names):
        value = tags.get(name, "")
        parts.append(escape_path(value) if name in PATH_TAGS else escape(value, index == 0))
    return fit("-".join(parts))


def format_value(value: FieldValue) -> str | None:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else None
    return None  # text


class CollectdSerializer:
    """Serializes whole batches, one PUTVAL line per numeric field."""

    def __init__(self, host: str, interval: float) -> None:
        self.host = system_text(host).replace("\\", "\\\\").replace('"', '\\"')
        self.interval = interval
        self._types = {
            (spec.name, field.name): kind
            for spec in MEASUREMENTS
            for field in spec.fields
            if (kind := collectd_type(field))
        }
        self._previous: dict[str, int] = {}  # plugin instance -> time of its previous value

    @classmethod
    def from_env(cls, env: Mapping[str, str], interval: float) -> CollectdSerializer:
        host = env.get("COLLECTD_HOSTNAME") or socket.gethostname()
        return cls(host, max(interval, collectd_interval(env) or 0.0))

    def _interval(self, instance: str, time_ns: int) -> str:
        previous = self._previous.get(instance)
        self._previous[instance] = time_ns
        gap = (time_ns - previous) / 1e9 if previous is not None else 0.0
        return f"{gap if gap > 1.5 * self.interval else self.interval:.3f}".rstrip("0").rstrip(".")

    def serialize(self, metrics: Iterable[Metric]) -> str:
        lines: list[str] = []
        for metric in metrics:
            instance = plugin_instance(metric.measurement, metric.tags)
            millis = metric.time_ns // 1_000_000
            head = f'PUTVAL "{self.host}/{PLUGIN}-{instance}/'
            tail = f'" interval={self._interval(instance, metric.time_ns)} '
            tail += f"{millis // 1000}.{millis % 1000:03d}:"
            for name, value in metric.fields.items():
                text = format_value(value)
                if text is None:
                    continue
                kind = self._types.get((metric.measurement, name))
                kind = kind or ("bool" if isinstance(value, bool) else "gauge")
                lines.append(f"{head}{kind}-{fit(escape(name, True))}{tail}{text}")
        if len(self._previous) > CACHE_LIMIT:
            self._previous.clear()
        return "\n".join(lines) + "\n" if lines else ""


def render_mapping() -> str:
    """The Markdown mapping tables (plugin instances, then every field), from the schema."""
    lines = ["| measurement | plugin instance |", "| --- | --- |"]
    for spec in MEASUREMENTS:
        tags = INSTANCE_TAGS[spec.name]
        lines.append(f"| `{spec.name}` | `{_short(spec.name)}-<{'>-<'.join(tags)}>` |")
    lines += ["", "| measurement | field | schema | collectd type-type_instance |"]
    lines.append("| --- | --- | --- | --- |")
    for spec in MEASUREMENTS:
        for field in spec.fields:
            kind = collectd_type(field)
            schema = f"{field.type}, {field.unit}" if field.unit else field.type
            target = (
                f"`{kind}-{field.name}`"
                if kind
                else "skipped: " + SKIPPED.get((spec.name, field.name), "text")
            )
            lines.append(f"| `{spec.name}` | `{field.name}` | {schema} | {target} |")
    return "\n".join(lines) + "\n"
