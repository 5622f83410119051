"""InfluxDB line protocol, escaped as the spec says; integers `i`, booleans true/false.

measurement,tag=v,tag2=v2 field=1.5,count=3i,ok=true,name="x" 1700000000000000000
"""

from __future__ import annotations

import math
from typing import Iterable

from diskprobe.metric import FieldValue, Metric

_MEASUREMENT = str.maketrans({",": "\\,", " ": "\\ ", "\n": "\\n", "\r": "\\r", "\t": "\\t"})
_KEY = str.maketrans({",": "\\,", "=": "\\=", " ": "\\ ", "\n": "\\n", "\r": "\\r", "\t": "\\t"})


def escape_measurement(name: str) -> str:
    return name.translate(_MEASUREMENT)


def escape_key(text: str) -> str:
    """Tag keys, tag values and field keys."""
    escaped = text.translate(_KEY)
    # A trailing backslash would escape the separator that follows; the protocol cannot say it.
    return escaped.rstrip("\\") if escaped.endswith("\\") else escaped


def format_field_value(value: FieldValue) -> str | None:
    """Line-protocol text of one field value; None for values it cannot carry (NaN, inf)."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return f"{value}i"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else None
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class InfluxSerializer:
    """Serializes whole batches; tags sorted by key, empty tag values dropped."""

    def serialize(self, metrics: Iterable[Metric]) -> str:
        lines = [line for line in map(self.line, metrics) if line]
        return "\n".join(lines) + "\n" if lines else ""

    @staticmethod
    def line(metric: Metric) -> str:
        head = escape_measurement(metric.measurement)
        for key, tag in sorted(metric.tags.items()):
            tag_value = escape_key(tag) if tag else ""
            if tag_value:
                head += f",{escape_key(key)}={tag_value}"
        parts = []
        for key, value in metric.fields.items():
            text = format_field_value(value)
            if text is not None:
                parts.append(f"{escape_key(key)}={text}")
        if not parts:
            return ""
        return f"{head} {','.join(parts)} {metric.time_ns}"
