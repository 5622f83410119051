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
# The head cache holds this many entries at least, or twice the largest batch: a few times
# what is live, so names that churn (pids, pods, loop devices) are dropped in bulk now and then
# instead of piling up (a fixed 50,000 held ~20 MB of dead tag sets on a churning node).
CACHE_FLOOR = 4096


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

    Field keys and tag sets repeat every batch (field names, devices): their escaped forms
    are cached, which more than halves the cost of a batch of thousands of devices.
    """

    def __init__(self) -> None:
        self._heads: dict[tuple[object, ...], str] = {}
        self._field_keys: dict[str, str] = {}
        self._cache_limit = CACHE_FLOOR

    def serialize(self, metrics: Iterable[Metric]) -> str:
        lines = [line for line in map(self.line, metrics) if line]
        self._cache_limit = max(self._cache_limit, 2 * len(lines))
        if len(self._heads) > self._cache_limit:
            self._heads.clear()
        return "\n".join(lines) + "\n" if lines else ""

    def _head(self, metric: Metric) -> str:
        """Measurement and sorted tags, cached per tag set (devices repeat every batch)."""
        key = (metric.measurement, *metric.tags.items())
        head = self._heads.get(key)
        if head is None:
            head = escape_measurement(metric.measurement)
            if head:
                for tag_key, tag in sorted(metric.tags.items()):
                    tag_value = escape_tag(tag) if tag else ""
                    if escape_tag(tag_key) and tag_value:
                        head += f",{escape_tag(tag_key)}={tag_value}"
            self._heads[key] = head
        return head

    def _prefix(self, key: str) -> str:
        escaped = escape_field_key(key)
        prefix = self._field_keys[key] = f"{escaped}=" if escaped else ""
        return prefix

    def line(self, metric: Metric) -> str:
        head = self._head(metric)
        if not head:
            return ""
        prefixes = self._field_keys
        parts = []
        # The hot loop of a 4,000-device batch: floats first, inline, no calls.
        for key, value in metric.fields.items():
            prefix = prefixes.get(key)
            if prefix is None:
                prefix = self._prefix(key)
            if not prefix:
                continue
            if isinstance(value, float):
                if value - value == 0.0:  # finite: inf - inf and NaN - NaN are NaN
                    parts.append(prefix + repr(value))
                continue
            text = format_field_value(value)
            if text is not None:
                parts.append(prefix + text)
        if not parts:
            return ""
        return f"{head} {','.join(parts)} {metric.time_ns}"
