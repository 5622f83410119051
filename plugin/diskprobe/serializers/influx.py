"""InfluxDB line protocol, escaped as the spec says; integers `i`, booleans true/false.

measurement,tag=v,tag2=v2 field=1.5,count=3i,ok=true,name="x" 1700000000000000000

What InfluxDB 1.x cannot read back (tested against the real server, see
tests/test_escaping_influxdb.py) is dropped rather than sent: a trailing backslash (it
would escape the separator after it), a backslash right before an escaped separator in a
measurement or field key, empty keys, integers beyond int64, NaN and infinity.
"""

from __future__ import annotations

import math
import re
from typing import Iterable

from diskprobe.metric import FieldValue, Metric

_MEASUREMENT = str.maketrans({",": "\\,", " ": "\\ ", "\n": "\\n", "\r": "\\r", "\t": "\\t"})
_KEY = str.maketrans({",": "\\,", "=": "\\=", " ": "\\ ", "\n": "\\n", "\r": "\\r", "\t": "\\t"})
_BACKSLASH_BEFORE_SEPARATOR = re.compile(r"\\+(?=[ ,=]|$)")
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
CACHE_LIMIT = 50_000


def escape_measurement(name: str) -> str:
    return _BACKSLASH_BEFORE_SEPARATOR.sub("", name).translate(_MEASUREMENT)


def escape_field_key(key: str) -> str:
    return _BACKSLASH_BEFORE_SEPARATOR.sub("", key).translate(_KEY)


def escape_tag(text: str) -> str:
    """Tag keys and values: 1.x reads "\\," back as "\\,", but a trailing "\\" cannot be said."""
    return text.translate(_KEY).rstrip("\\")


def format_field_value(value: FieldValue) -> str | None:
    """Line-protocol text of one field value; None for values it cannot carry."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return f"{value}i" if INT64_MIN <= value <= INT64_MAX else None
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else None
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class InfluxSerializer:
    """Serializes whole batches; tags sorted by key, empty tags and keys dropped.

    Keys and tag values repeat every batch (field names, device names): their escaped
    forms are cached, which halves the cost of a batch of thousands of devices.
    """

    def __init__(self) -> None:
        self._measurements: dict[str, str] = {}
        self._field_keys: dict[str, str] = {}
        self._tags: dict[str, str] = {}

    def serialize(self, metrics: Iterable[Metric]) -> str:
        lines = [line for line in map(self.line, metrics) if line]
        if len(self._tags) > CACHE_LIMIT:
            self._tags.clear()
        return "\n".join(lines) + "\n" if lines else ""

    def _tag(self, text: str) -> str:
        escaped = self._tags.get(text)
        if escaped is None:
            escaped = self._tags[text] = escape_tag(text)
        return escaped

    def line(self, metric: Metric) -> str:
        head = self._measurements.get(metric.measurement)
        if head is None:
            head = self._measurements[metric.measurement] = escape_measurement(metric.measurement)
        if not head:
            return ""
        for key, tag in sorted(metric.tags.items()):
            tag_key, tag_value = self._tag(key), self._tag(tag) if tag else ""
            if tag_key and tag_value:
                head += f",{tag_key}={tag_value}"
        keys = self._field_keys
        parts = []
        for key, value in metric.fields.items():
            text = format_field_value(value)
            escaped = keys.get(key)
            if escaped is None:
                escaped = keys[key] = escape_field_key(key)
            if text is not None and escaped:
                parts.append(f"{escaped}={text}")
        if not parts:
            return ""
        return f"{head} {','.join(parts)} {metric.time_ns}"
