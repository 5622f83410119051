"""InfluxDB line protocol, escaped as the spec says; integers `i`, booleans true/false.

measurement,tag=v,tag2=v2 field=1.5,count=3i,ok=true,name="x" 1700000000000000000

What InfluxDB 1.x cannot read back (tested against the real server, see
tests/test_escaping_influxdb.py) is dropped rather than sent: a trailing backslash (it
would escape the separator after it), a backslash right before an escaped separator in a
measurement or field key, empty keys, integers beyond int64, NaN and infinity. Tag values
and string fields are made valid UTF-8 first, one-to-one (serializers/text.py), and a tag
value's trailing backslashes are written %5C.
"""

from __future__ import annotations

import math
import re
from typing import Iterable

from diskprobe.metric import FieldValue, Metric
from diskprobe.serializers.text import system_text

_MEASUREMENT = str.maketrans({",": "\\,", " ": "\\ ", "\n": "\\n", "\r": "\\r", "\t": "\\t"})
_KEY = str.maketrans({",": "\\,", "=": "\\=", " ": "\\ ", "\n": "\\n", "\r": "\\r", "\t": "\\t"})
# Tag values: separators escaped as for keys, but control characters as %XX (after text.py a
# literal "%" is "%25"): 1.x has no "\\n" escape and would store a newline and the two
# characters "\\n" as the same value.
_TAG_VALUE = str.maketrans(
    {",": "\\,", "=": "\\=", " ": "\\ ", "\n": "%0A", "\r": "%0D", "\t": "%09"}
)
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
    """Tag keys: 1.x reads "\\," back as "\\,", but a trailing "\\" cannot be said."""
    return text.translate(_KEY).rstrip("\\")


def escape_tag_value(text: str) -> str:
    """A tag value: valid UTF-8 one-to-one (serializers/text.py); a trailing backslash, which
    line protocol cannot say, and newline, CR and tab as %5C, %0A, %0D and %09 (after text.py
    a literal "%" is "%25": "x\\" and "x%5C" stay two values)."""
    text = system_text(text)
    kept = text.rstrip("\\")
    if len(kept) < len(text):
        text = kept + "%5C" * (len(text) - len(kept))
    return text.translate(_TAG_VALUE)


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
    text = system_text(value)  # valid UTF-8 whatever bytes the system gave (text.py)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


_CONVERSIONS = {float: "%r", int: "%di"}  # "%r" % 1.5 is repr(1.5); bool and str: the slow path


class _Shape:
    """A field set's %-template ("reads_per_sec=%r,in_flight=%di") and its values' types."""

    __slots__ = ("ints", "template", "types")

    def __init__(self, template: str, types: tuple[type, ...]) -> None:
        self.template, self.types = template, types
        self.ints = [index for index, kind in enumerate(types) if kind is int]

    def fits(self, values: tuple[FieldValue, ...]) -> bool:
        """Same types, every float finite, every int in int64: then the template is exact.

        A sum of finite floats is finite unless it overflows (then the slow path decides);
        an int too large for a float raises OverflowError in the sum, and is the slow path's.
        """
        if tuple(map(type, values)) != self.types:
            return False
        try:
            total = sum(values)  # type: ignore[arg-type]  # the types are int and float
        except OverflowError:
            return False
        if total - total != 0.0:
            return False
        return all(INT64_MIN <= values[i] <= INT64_MAX for i in self.ints)  # type: ignore[operator]


_UNSEEN = _Shape("", ())


class InfluxSerializer:
    """Serializes whole batches; tags sorted by key, empty tags and keys dropped.

    Field keys and tag sets repeat every batch (field names, devices): their escaped forms
    are cached, which more than halves the cost of a batch of thousands of devices. So do
    field sets: a point whose names and value types were seen before is one %-format of its
    values with that set's cached template, once checked that every value can be written as
    is; what cannot goes field by field, as the first point did (tested to be the same text,
    tests/test_serializer_fastpath.py). What is left is mostly repr() of the floats.
    """

    def __init__(self) -> None:
        self._heads: dict[tuple[object, ...], str] = {}
        self._field_keys: dict[str, str] = {}
        self._shapes: dict[tuple[str, ...], _Shape | None] = {}
        self._cache_limit = CACHE_FLOOR

    def serialize(self, metrics: Iterable[Metric]) -> str:
        lines = [line for line in map(self.line, metrics) if line]
        self._cache_limit = max(self._cache_limit, 2 * len(lines))
        if len(self._heads) > self._cache_limit:
            self._heads.clear()
        if not lines:
            return ""
        lines.append("")  # the last newline, without a copy of the whole text to add it
        return "\n".join(lines)

    def _head(self, metric: Metric) -> str:
        """Measurement and sorted tags, cached per tag set (devices repeat every batch)."""
        key = (metric.measurement, *metric.tags.items())
        head = self._heads.get(key)
        if head is None:
            head = escape_measurement(metric.measurement)
            if head:
                for tag_key, tag in sorted(metric.tags.items()):
                    tag_value = escape_tag_value(tag) if tag else ""
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
        fields = metric.fields
        # The fast path: the same field names and value types as a point seen before (every
        # device of a batch), all finite and in int64: one %-format of the values, in C.
        keys = tuple(fields)
        shape = self._shapes.get(keys, _UNSEEN)
        if shape is _UNSEEN:
            shape = self._shapes[keys] = self._shape(keys, fields)
        if shape is not None:
            values = tuple(fields.values())
            if shape.fits(values):
                return f"{head} {shape.template % values} {metric.time_ns}"
        return self._slow_line(head, fields, metric.time_ns)

    def _shape(self, keys: tuple[str, ...], fields: dict[str, FieldValue]) -> _Shape | None:
        """The %-template of a point with these field names and its values' types, or None
        when a key is dropped (its values would not line up) or a value is no int or float."""
        parts = []
        for key, value in fields.items():
            prefix = self._field_keys.get(key)
            if prefix is None:
                prefix = self._prefix(key)
            kind = type(value)
            if not prefix or kind not in _CONVERSIONS:
                return None
            parts.append(prefix.replace("%", "%%") + _CONVERSIONS[kind])
        if len(self._shapes) > CACHE_FLOOR:  # shapes repeat; a churning set is cut in bulk
            self._shapes.clear()
        return _Shape(",".join(parts), tuple(map(type, fields.values())))

    def _slow_line(self, head: str, fields: dict[str, FieldValue], time_ns: int) -> str:
        prefixes = self._field_keys
        parts = []
        # Field by field: a point's first line of its shape, and what the template cannot say
        # (NaN, infinity, out-of-int64, booleans, strings). Floats first, inline, no calls.
        for key, value in fields.items():
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
        return f"{head} {','.join(parts)} {time_ns}"
