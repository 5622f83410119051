"""The line-protocol fast path (one %-template per field set) writes exactly what the field-by-
field path writes, also when a point of a known shape carries what the template cannot say."""

from __future__ import annotations

import math
import random

import pytest

from diskprobe.metric import FieldValue, Metric
from diskprobe.serializers.influx import (
    INT64_MAX,
    INT64_MIN,
    InfluxSerializer,
    escape_field_key,
    format_field_value,
)

WARM = Metric("m", {"d": "sda"}, {"a": 1.5, "n": 3}, 1)


def reference(metric: Metric) -> str:
    """Field by field with the public helpers: the line protocol as specified."""
    parts = []
    for key, value in metric.fields.items():
        text = format_field_value(value)
        if escape_field_key(key) and text is not None:
            parts.append(f"{escape_field_key(key)}={text}")
    return f"m,d=sda {','.join(parts)} {metric.time_ns}" if parts else ""


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"a": math.nan, "n": 3}, "m,d=sda n=3i 1"),
        ({"a": -math.inf, "n": 3}, "m,d=sda n=3i 1"),
        ({"a": 1.5, "n": INT64_MAX + 1}, "m,d=sda a=1.5 1"),
        ({"a": 1.5, "n": INT64_MIN}, "m,d=sda a=1.5,n=-9223372036854775808i 1"),
        ({"a": 1.5, "n": 10**400}, "m,d=sda a=1.5 1"),  # too large for the float sum
        ({"a": 1e308, "n": 2**62}, "m,d=sda a=1e+308,n=4611686018427387904i 1"),
        ({"a": 2, "n": 3.5}, "m,d=sda a=2i,n=3.5 1"),  # the types swapped
        ({"a": True, "n": 3}, "m,d=sda a=true,n=3i 1"),
        # never a %-template placeholder; a literal "%" is "%25" (serializers/text.py)
        ({"a": "x%sy", "n": 3}, 'm,d=sda a="x%25sy",n=3i 1'),
        ({"a": -0.0, "n": 0}, "m,d=sda a=-0.0,n=0i 1"),
    ],
)
def test_a_known_shape_with_values_the_template_cannot_say(
    fields: dict[str, FieldValue], expected: str
) -> None:
    serializer = InfluxSerializer()
    assert serializer.line(WARM) == "m,d=sda a=1.5,n=3i 1"
    assert serializer.line(Metric("m", {"d": "sda"}, fields, 1)) == expected
    assert serializer.line(WARM) == "m,d=sda a=1.5,n=3i 1"  # the shape was not spoiled


def test_keys_with_percent_signs_and_keys_that_are_dropped() -> None:
    serializer = InfluxSerializer()
    for _ in range(2):  # the second time through the cached template
        line = serializer.line(Metric("m", {}, {"100%": 1.0, "x%s": 2, "%%d": 0.5}, 7))
        assert line == "m 100%=1.0,x%s=2i,%%d=0.5 7"
        assert serializer.line(Metric("m", {}, {"": 1.0, "b": 2.0}, 7)) == "m b=2.0 7"


def _random_value(rng: random.Random) -> FieldValue:
    kind = rng.randrange(10)
    if kind == 0:
        return rng.choice([math.nan, math.inf, -math.inf, 1e308, -1e308, 5e-324, -0.0])
    if kind == 1:
        return rng.choice([INT64_MAX, INT64_MIN, INT64_MAX + 1, INT64_MIN - 1, 2**64, 0])
    if kind == 2:
        return rng.choice([True, False, "text", 'q"uote\\'])
    if kind < 6:
        return rng.randrange(-(10**12), 10**12)
    return rng.uniform(-1e9, 1e9) / rng.choice([1, 3, 7, 1e-3, 1e12])


def test_random_batches_match_the_field_by_field_reference() -> None:
    """Thousands of points over a few shapes, most values ordinary, some hostile; one
    serializer for all, as in production, so most lines go through a cached template."""
    rng = random.Random(15)
    shapes = [[f"f{i}" for i in range(rng.randrange(1, 24))] for _ in range(6)]
    serializer = InfluxSerializer()
    metrics = []
    for index in range(5000):
        keys = rng.choice(shapes)
        metrics.append(Metric("m", {"d": "sda"}, {k: _random_value(rng) for k in keys}, index))
    lines = [serializer.line(metric) for metric in metrics]
    assert lines == [reference(metric) for metric in metrics]
    assert sum(1 for line in lines if line) > 4000
    text = serializer.serialize(metrics)
    assert text == "".join(line + "\n" for line in lines if line)
